// Host unit tests for kernel/nmodel.c, the N-extension model shared by the
// kernel's emulation and the RTL testbench. Each test states the rule it checks
// with absolute expected values (the testbench only checks that the RTL and
// the model agree, so a rule that is wrong in both would pass there).
#include <stdint.h>
#include "check.h"
#include "nmodel.h"

static const struct nm_env m_all = {     // M delegated everything U can own
  .priv = NM_PRIV_S, .mideleg = NM_U_INTS, .medeleg = NM_U_EXCS,
};

// A hart in state h after S-mode wrote sideleg/sedeleg with env e.
static void delegate(struct nm_hart *h, struct nm_env e, uint64_t sideleg,
                     uint64_t sedeleg) {
  uint64_t old;
  e.priv = NM_PRIV_S;
  nm_csr_access(h, &e, NM_CSR_SIDELEG, NM_CSRRW, sideleg, 1, &old);
  nm_csr_access(h, &e, NM_CSR_SEDELEG, NM_CSRRW, sedeleg, 1, &old);
}

static uint64_t rd(struct nm_hart *h, const struct nm_env *e, uint32_t csr) {
  uint64_t v = 0xdead;
  CHECK_EQ(nm_csr_read(h, e, csr, &v), 0);
  return v;
}

static void wr(struct nm_hart *h, const struct nm_env *e, uint32_t csr, uint64_t v) {
  uint64_t old;
  CHECK_EQ(nm_csr_access(h, e, csr, NM_CSRRW, v, 1, &old), 0);
}

static void access_checks(void) {
  struct nm_hart h = { 0 };
  struct nm_env u = m_all;
  u.priv = NM_PRIV_U;
  uint64_t v;
  CHECK_EQ(nm_csr_read(&h, &u, NM_CSR_USTATUS, &v), 0);
  CHECK_EQ(nm_csr_read(&h, &u, NM_CSR_SIDELEG, &v), -1);   // S CSR from U
  CHECK_EQ(nm_csr_read(&h, &u, NM_CSR_SEDELEG, &v), -1);
  CHECK_EQ(nm_csr_read(&h, &m_all, NM_CSR_SIDELEG, &v), 0);
  CHECK_EQ(nm_csr_read(&h, &u, 0x001, &v), -1);            // fflags: not ours
  CHECK_EQ(nm_csr_read(&h, &u, 0x045, &v), -1);
  CHECK_EQ(nm_csr_read(&h, &m_all, 0x104, &v), -1);        // sie: not ours
  CHECK_EQ(nm_csr_access(&h, &u, NM_CSR_UEPC, 0, 5, 1, &v), -1);   // bad op
  CHECK_EQ(nm_csr_access(&h, &u, NM_CSR_SIDELEG, NM_CSRRW, 1, 1, &v), -1);
  CHECK_EQ(h.sideleg, 0);                                  // illegal: no effect
}

static void csr_masks(void) {
  struct nm_hart h = { 0 };
  struct nm_env u = m_all;
  u.priv = NM_PRIV_U;
  delegate(&h, m_all, ~0ULL, ~0ULL);
  CHECK_EQ(h.sideleg, NM_U_INTS);
  CHECK_EQ(h.sedeleg, NM_U_EXCS);
  wr(&h, &u, NM_CSR_USTATUS, ~0ULL);
  CHECK_EQ(rd(&h, &u, NM_CSR_USTATUS), NM_USTATUS_UIE | NM_USTATUS_UPIE);
  wr(&h, &u, NM_CSR_UIE, ~0ULL);
  CHECK_EQ(rd(&h, &u, NM_CSR_UIE), NM_U_INTS);
  wr(&h, &u, NM_CSR_UEPC, 0x80001235);
  CHECK_EQ(rd(&h, &u, NM_CSR_UEPC), 0x80001234);
  wr(&h, &u, NM_CSR_UCAUSE, ~0ULL);                        // WLRL: kept as written
  CHECK_EQ(rd(&h, &u, NM_CSR_UCAUSE), (long long)~0ULL);
  wr(&h, &u, NM_CSR_USCRATCH, 0x123456789abcdef0ULL);
  CHECK_EQ(rd(&h, &u, NM_CSR_USCRATCH), 0x123456789abcdef0LL);
  // uip: U writes USIP only; UTIP/UEIP are wires.
  wr(&h, &u, NM_CSR_UIP, ~0ULL);
  CHECK_EQ(rd(&h, &u, NM_CSR_UIP), NM_USIP);
  u.lines = NM_UTIP | NM_UEIP;
  CHECK_EQ(rd(&h, &u, NM_CSR_UIP), NM_U_INTS);
  wr(&h, &u, NM_CSR_UIP, 0);
  CHECK_EQ(rd(&h, &u, NM_CSR_UIP), NM_UTIP | NM_UEIP);
  // A device's USIP stays visible after software clears its own bit.
  u.lines = NM_USIP;
  CHECK_EQ(rd(&h, &u, NM_CSR_UIP), NM_USIP);
  uint64_t old;
  CHECK_EQ(nm_csr_access(&h, &u, NM_CSR_UIP, NM_CSRRC, NM_USIP, 1, &old), 0);
  CHECK_EQ(rd(&h, &u, NM_CSR_UIP), NM_USIP);
  CHECK_EQ(h.uip, 0);
  // ... and a csrs of another bit does not copy the device's USIP into the
  // software bit (only the software bit takes part in the read-modify-write).
  CHECK_EQ(nm_csr_access(&h, &u, NM_CSR_UIP, NM_CSRRS, NM_UTIP, 1, &old), 0);
  CHECK_EQ(old, NM_USIP);
  CHECK_EQ(h.uip, 0);
}

// csrs/csrc with rs1 = x0 read only; csrrs/csrrc set and clear.
static void csr_ops(void) {
  struct nm_hart h = { 0 };
  struct nm_env u = m_all;
  u.priv = NM_PRIV_U;
  uint64_t old;
  wr(&h, &u, NM_CSR_USCRATCH, 0xf0);
  CHECK_EQ(nm_csr_access(&h, &u, NM_CSR_USCRATCH, NM_CSRRS, 0x0f, 0, &old), 0);
  CHECK_EQ(old, 0xf0);
  CHECK_EQ(h.uscratch, 0xf0);
  CHECK_EQ(nm_csr_access(&h, &u, NM_CSR_USCRATCH, NM_CSRRS, 0x0f, 1, &old), 0);
  CHECK_EQ(h.uscratch, 0xff);
  CHECK_EQ(nm_csr_access(&h, &u, NM_CSR_USCRATCH, NM_CSRRC, 0x3c, 1, &old), 0);
  CHECK_EQ(old, 0xff);
  CHECK_EQ(h.uscratch, 0xc3);
}

// A csrc/csrs of another uip bit leaves a posted USIP alone. (The case this
// guards in the kernel, a post from another hart landing between the
// instruction's read and its write, needs a second thread at the right
// instant and is not reproduced here: write_uip's two atomic operations are
// what make it safe.)
static void uip_post_not_lost(void) {
  struct nm_hart h = { 0 };
  struct nm_env u = m_all;
  u.priv = NM_PRIV_U;
  delegate(&h, m_all, NM_U_INTS, 0);
  nm_raise(&h, NM_USIP);
  uint64_t old;
  CHECK_EQ(nm_csr_access(&h, &u, NM_CSR_UIP, NM_CSRRC, NM_UTIP, 1, &old), 0);
  CHECK_EQ(h.uip, NM_USIP);
  CHECK_EQ(nm_csr_access(&h, &u, NM_CSR_UIP, NM_CSRRS, NM_UEIP, 1, &old), 0);
  CHECK_EQ(h.uip, NM_USIP);
}

// nm_clear_usip (SYS_uintr_ret's shortcut) is `csrc uip, USIP` from U in
// every state: USIP set or not, delegated to U or not, other bits pending.
static void clear_usip_is_csrc(void) {
  struct nm_env u = m_all;
  u.priv = NM_PRIV_U;
  uint64_t delegations[] = { 0, NM_USIP, NM_U_INTS, NM_UTIP };
  uint64_t pendings[] = { 0, NM_USIP, NM_UTIP | NM_UEIP, NM_U_INTS };
  for (int d = 0; d < 4; d++)
    for (int i = 0; i < 4; i++) {
      struct nm_hart a = { 0 }, b;
      delegate(&a, m_all, delegations[d], 0);
      a.uip = pendings[i];
      b = a;
      uint64_t old;
      CHECK_EQ(nm_csr_access(&a, &u, NM_CSR_UIP, NM_CSRRC, NM_USIP, 1, &old), 0);
      nm_clear_usip(&b, &u);
      CHECK_EQ(b.uip, a.uip);
      CHECK_EQ(b.uip & NM_USIP, (delegations[d] & NM_USIP) ? 0 : (pendings[i] & NM_USIP));
    }
}

// sideleg bits that M did not delegate cannot be set; uie/uip hide them.
static void sideleg_outside_mideleg(void) {
  struct nm_hart h = { 0 };
  struct nm_env m = m_all;
  m.mideleg = NM_USIP | (1ULL << 5);         // STIP delegated too: not a U bit
  delegate(&h, m, ~0ULL, 0);
  CHECK_EQ(h.sideleg, NM_USIP);
  struct nm_env u = m;
  u.priv = NM_PRIV_U;
  wr(&h, &u, NM_CSR_UIE, NM_U_INTS);
  CHECK_EQ(rd(&h, &u, NM_CSR_UIE), NM_USIP);
  u.lines = NM_UTIP | NM_UEIP;
  CHECK_EQ(rd(&h, &u, NM_CSR_UIP), 0);
  wr(&h, &u, NM_CSR_USTATUS, NM_USTATUS_UIE);
  CHECK_EQ(nm_pending_irq(&h, &u), -1);      // UTIP/UEIP are not U's
  // M takes USI back: a stale sideleg bit is inert.
  nm_raise(&h, NM_USIP);
  CHECK_EQ(nm_pending_irq(&h, &u), NM_IRQ_USI);
  u.mideleg = 0;
  CHECK_EQ(nm_pending_irq(&h, &u), -1);
  CHECK_EQ(rd(&h, &u, NM_CSR_UIP), 0);
  CHECK_EQ(h.sideleg, NM_USIP);
}

static void stale_sedeleg(void) {
  struct nm_hart h = { 0 };
  delegate(&h, m_all, 0, (1ULL << 8) | (1ULL << 11));   // ecall-from-M is not U's
  CHECK_EQ(h.sedeleg, 1ULL << 8);
  struct nm_env u = m_all;
  u.priv = NM_PRIV_U;
  CHECK_EQ(nm_exception_to_u(&h, &u, 8), 1);
  CHECK_EQ(nm_exception_to_u(&h, &u, 2), 0);
  CHECK_EQ(nm_exception_to_u(&h, &u, 63 + 8), 0);
  u.medeleg = 0;                             // M un-delegates: sedeleg is stale
  CHECK_EQ(nm_exception_to_u(&h, &u, 8), 0);
  CHECK_EQ(h.sedeleg, 1ULL << 8);
  u.medeleg = NM_U_EXCS;
  u.priv = NM_PRIV_S;                        // only traps from U go to U
  CHECK_EQ(nm_exception_to_u(&h, &u, 8), 0);
}

static void priority_and_priv(void) {
  struct nm_hart h = { 0 };
  delegate(&h, m_all, NM_U_INTS, 0);
  struct nm_env u = m_all;
  u.priv = NM_PRIV_U;
  wr(&h, &u, NM_CSR_UIE, NM_U_INTS);
  u.lines = NM_U_INTS;
  CHECK_EQ(nm_pending_irq(&h, &u), -1);      // UIE = 0
  wr(&h, &u, NM_CSR_USTATUS, NM_USTATUS_UIE);
  CHECK_EQ(nm_pending_irq(&h, &u), NM_IRQ_UEI);
  u.lines = NM_USIP | NM_UTIP;
  CHECK_EQ(nm_pending_irq(&h, &u), NM_IRQ_USI);
  u.lines = NM_UTIP;
  CHECK_EQ(nm_pending_irq(&h, &u), NM_IRQ_UTI);
  wr(&h, &u, NM_CSR_UIE, NM_USIP);
  CHECK_EQ(nm_pending_irq(&h, &u), -1);      // UTIE = 0
  wr(&h, &u, NM_CSR_UIE, NM_U_INTS);
  u.priv = NM_PRIV_S;                        // waits while the hart is in S
  CHECK_EQ(nm_pending_irq(&h, &u), -1);
}

static void trap_entry(void) {
  struct nm_hart h = { 0 };
  struct nm_env u = m_all;
  u.priv = NM_PRIV_U;
  wr(&h, &u, NM_CSR_USTATUS, NM_USTATUS_UIE);
  wr(&h, &u, NM_CSR_UTVEC, 0x80002000);
  uint64_t pc = nm_trap(&h, NM_CAUSE_INTERRUPT | NM_IRQ_UTI, 0x80000105, 7);
  CHECK_EQ(pc, 0x80002000);
  CHECK_EQ(h.ustatus, NM_USTATUS_UPIE);
  CHECK_EQ(h.uepc, 0x80000104);
  CHECK_EQ(h.ucause, (long long)(NM_CAUSE_INTERRUPT | NM_IRQ_UTI));
  CHECK_EQ(h.utval, 7);
  // Again with UIE = 0: UPIE <- 0.
  pc = nm_trap(&h, 2, 0x80000200, 0x13);
  CHECK_EQ(h.ustatus, 0);
  CHECK_EQ(h.ucause, 2);
}

// Vectored mode offsets interrupts only; a write with MODE 2 or 3 is ignored.
static void utvec_modes(void) {
  struct nm_hart h = { 0 };
  struct nm_env u = m_all;
  u.priv = NM_PRIV_U;
  wr(&h, &u, NM_CSR_UTVEC, 0x80002001);
  CHECK_EQ(nm_trap(&h, NM_CAUSE_INTERRUPT | NM_IRQ_UEI, 0, 0), 0x80002020);
  CHECK_EQ(nm_trap(&h, NM_CAUSE_INTERRUPT | NM_IRQ_USI, 0, 0), 0x80002000);
  CHECK_EQ(nm_trap(&h, 8, 0, 0), 0x80002000);
  wr(&h, &u, NM_CSR_UTVEC, 0x90004002);
  CHECK_EQ(rd(&h, &u, NM_CSR_UTVEC), 0x80002001);
  wr(&h, &u, NM_CSR_UTVEC, 0x90004003);
  CHECK_EQ(rd(&h, &u, NM_CSR_UTVEC), 0x80002001);
  CHECK_EQ(nm_trap(&h, NM_CAUSE_INTERRUPT | NM_IRQ_UTI, 0, 0), 0x80002010);
  wr(&h, &u, NM_CSR_UTVEC, 0x90004000);
  CHECK_EQ(rd(&h, &u, NM_CSR_UTVEC), 0x90004000);
  CHECK_EQ(nm_trap(&h, NM_CAUSE_INTERRUPT | NM_IRQ_UTI, 0, 0), 0x90004000);
}

static void uret_rules(void) {
  struct nm_hart h = { 0 };
  struct nm_env u = m_all;
  u.priv = NM_PRIV_U;
  uint64_t pc = 0;
  wr(&h, &u, NM_CSR_UEPC, 0x80000400);
  wr(&h, &u, NM_CSR_USTATUS, NM_USTATUS_UIE);           // UPIE = 0
  CHECK_EQ(nm_uret(&h, &u, &pc), 0);
  CHECK_EQ(pc, 0x80000400);
  CHECK_EQ(h.ustatus, NM_USTATUS_UPIE);                 // UIE <- 0, UPIE <- 1
  CHECK_EQ(nm_uret(&h, &u, &pc), 0);
  CHECK_EQ(h.ustatus, NM_USTATUS_UIE | NM_USTATUS_UPIE);
  u.priv = NM_PRIV_S;
  pc = 1;
  CHECK_EQ(nm_uret(&h, &u, &pc), -1);
  CHECK(pc == 1);                                       // untouched
}

// The kernel's use: trap, handler clears USIP, uret, nothing pending.
static void kernel_round_trip(void) {
  struct nm_hart h = { 0 };
  delegate(&h, m_all, NM_U_INTS, 0);
  struct nm_env u = { .priv = NM_PRIV_U, .mideleg = NM_U_INTS };
  uint64_t old, pc;
  wr(&h, &u, NM_CSR_UTVEC, 0x1000);
  CHECK_EQ(nm_csr_access(&h, &u, NM_CSR_UIE, NM_CSRRS, NM_USIP, 1, &old), 0);
  CHECK_EQ(nm_csr_access(&h, &u, NM_CSR_USTATUS, NM_CSRRS, NM_USTATUS_UIE, 1, &old), 0);
  CHECK_EQ(nm_pending_irq(&h, &u), -1);
  nm_raise(&h, NM_USIP);
  CHECK_EQ(nm_pending_irq(&h, &u), NM_IRQ_USI);
  CHECK_EQ(nm_trap(&h, NM_CAUSE_INTERRUPT | NM_IRQ_USI, 0x2000, 0), 0x1000);
  CHECK_EQ(nm_pending_irq(&h, &u), -1);                 // UIE now 0
  CHECK_EQ(nm_csr_access(&h, &u, NM_CSR_UIP, NM_CSRRC, NM_USIP, 1, &old), 0);
  CHECK_EQ(old, NM_USIP);
  CHECK_EQ(nm_uret(&h, &u, &pc), 0);
  CHECK_EQ(pc, 0x2000);
  CHECK_EQ(nm_pending_irq(&h, &u), -1);
  CHECK_EQ(h.ustatus, NM_USTATUS_UIE | NM_USTATUS_UPIE);
}

CHECK_MAIN_BEGIN("test_nmodel")
  RUN_TEST(access_checks);
  RUN_TEST(csr_masks);
  RUN_TEST(csr_ops);
  RUN_TEST(uip_post_not_lost);
  RUN_TEST(clear_usip_is_csrc);
  RUN_TEST(sideleg_outside_mideleg);
  RUN_TEST(stale_sedeleg);
  RUN_TEST(priority_and_priv);
  RUN_TEST(trap_entry);
  RUN_TEST(utvec_modes);
  RUN_TEST(uret_rules);
  RUN_TEST(kernel_round_trip);
CHECK_MAIN_END
