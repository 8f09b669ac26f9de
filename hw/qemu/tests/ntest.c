// Bare-metal test of Coral's QEMU N-extension patch (hw/qemu/0001-*.patch).
// QEMU virt, -bios none, one hart: it starts here in M-mode, drops to S-mode
// and then to U-mode the way firmware and a kernel would, and checks the N
// chapter from each side. Every check prints "PASS name" or "FAIL name: why"
// on the UART; the last line is "ntest: N passed, N failed", then the
// sifive_test device powers QEMU off (exit status 0 only if nothing failed).
// With -cpu rv64,n=on it checks N and Coral's user-interrupt controller
// (UINTC, hw/qemu/0002-*.patch); with n off (the default) that none of it
// exists, i.e. that the patches leave a stock board alone. Run with -smp 2:
// hart 1 parks, and is the "other hart" of the UINTC routing check.
#include <stdint.h>
#include "uintc_model.h"
#include "uintc_vectors.h"

#define UART_THR ((volatile uint8_t *)0x10000000UL)  // ns16550a on virt
#define TEST_DEV ((volatile uint32_t *)0x100000UL)   // sifive_test on virt

// The UINTC on virt with n=on (include/hw/intc/coral_uintc.h in the patch).
#define UINTC 0x2F10000UL
#define UINTC_SEND(r) ((volatile uint64_t *)(UINTC + (r) * 0x1000UL))
#define UINTC_CLAIM(r) ((volatile uint64_t *)(UINTC + 0x40000UL + (r) * 0x1000UL))
#define UINTC_PENDING(r) ((volatile uint64_t *)(UINTC + 0x40008UL + (r) * 0x1000UL))
#define UINTC_HART(r) ((volatile uint64_t *)(UINTC + 0x80000UL + (r) * 16UL))
#define UINTC_ACTIVE(r) ((volatile uint64_t *)(UINTC + 0x80008UL + (r) * 16UL))

// N-extension CSRs, by number: binutils 2.40 no longer names all of them.
#define USTATUS 0x000
#define UIE 0x004
#define UTVEC 0x005
#define USCRATCH 0x040
#define UEPC 0x041
#define UCAUSE 0x042
#define UTVAL 0x043
#define UIP 0x044
#define SEDELEG 0x102
#define SIDELEG 0x103

#define USTATUS_UIE 0x1
#define USTATUS_UPIE 0x10
#define MIP_USIP 0x1
#define MIP_UTIP 0x10
#define MIP_UEIP 0x100
#define MIP_SSIP 0x2
#define MIP_STIP 0x20
#define MIP_SEIP 0x200
#define U_INTS (MIP_USIP | MIP_UTIP | MIP_UEIP)
#define INTR (1UL << 63)
#define CAUSE_BREAKPOINT 3
#define CAUSE_ILLEGAL 2
#define CAUSE_LOAD_ACCESS 5
#define CAUSE_U_ECALL 8
#define SSTATUS_SIE 0x2

#define STR_(x) #x
#define STR(x) STR_(x)
#define csr_read(c) ({ uint64_t v_; asm volatile("csrr %0, " STR(c) : "=r"(v_) :: "memory"); v_; })
#define csr_write(c, v) asm volatile("csrw " STR(c) ", %0" :: "r"((uint64_t)(v)) : "memory")
#define csr_set(c, v) asm volatile("csrs " STR(c) ", %0" :: "r"((uint64_t)(v)) : "memory")
#define csr_clear(c, v) asm volatile("csrc " STR(c) ", %0" :: "r"((uint64_t)(v)) : "memory")

extern char m_trap[], s_trap[], u_trap[], u_trap1[], u_vec[];
extern void park(void);

// ---- output ----
static int passed, failed;

static void putc_(char c) { *UART_THR = (uint8_t)c; }
static void puts_(const char *s) { while (*s) putc_(*s++); }
static void puthex(uint64_t v) {
  puts_("0x");
  for (int i = 60; i >= 0; i -= 4) putc_("0123456789abcdef"[(v >> i) & 0xf]);
}
static void putdec(int v) {
  char b[12];
  int n = 0;
  do b[n++] = (char)('0' + v % 10); while ((v /= 10) != 0);
  while (n) putc_(b[--n]);
}

static void check(const char *name, uint64_t got, uint64_t want) {
  if (got == want) {
    puts_("PASS "); puts_(name); puts_("\n");
    passed++;
  } else {
    puts_("FAIL "); puts_(name); puts_(": got "); puthex(got);
    puts_(", want "); puthex(want); puts_("\n");
    failed++;
  }
}

static void finish(void) {
  puts_("ntest: "); putdec(passed); puts_(" passed, "); putdec(failed); puts_(" failed\n");
  *TEST_DEV = failed ? (1u << 16) | 0x3333 : 0x5555;  // power off: pass / fail(1)
  for (;;) ;
}

// ---- M-mode: traps are either expected (a probe) or a failure ----
static volatile int m_probe;             // 1 while an illegal-instruction probe runs
static volatile uint64_t m_probe_cause;

void m_trap_c(uint64_t *frame) {
  (void)frame;
  uint64_t cause = csr_read(mcause);
  if (m_probe) {
    m_probe_cause = cause;
    csr_write(mepc, csr_read(mepc) + 4);  // every probed instruction is 4 bytes
    return;
  }
  puts_("FAIL m-trap: unexpected, mcause "); puthex(cause);
  puts_(" mepc "); puthex(csr_read(mepc)); puts_("\n");
  failed++;
  finish();
}

// Run an instruction that must trap to M-mode; returns the cause.
#define PROBE(insn) ({ m_probe_cause = ~0UL; m_probe = 1; \
  asm volatile(".option push\n.option norvc\n" insn "\n.option pop" ::: "t0", "memory"); \
  m_probe = 0; m_probe_cause; })

// A stock hart (n off): no N anywhere.
static void stock_checks(void) {
  check("misa-has-no-N", (csr_read(misa) >> 13) & 1, 0);
  check("ustatus-is-illegal", PROBE("csrr t0, 0x000"), CAUSE_ILLEGAL);
  check("utvec-is-illegal", PROBE("csrw 0x005, zero"), CAUSE_ILLEGAL);
  check("uip-is-illegal", PROBE("csrr t0, 0x044"), CAUSE_ILLEGAL);
  check("sideleg-is-illegal", PROBE("csrr t0, 0x103"), CAUSE_ILLEGAL);
  check("uret-is-illegal", PROBE(".word 0x00200073"), CAUSE_ILLEGAL);
  csr_write(mideleg, ~0UL);
  check("mideleg-has-no-U-bits", csr_read(mideleg) & U_INTS, 0);
  csr_write(mideleg, 0);
  csr_write(mie, ~0UL);
  check("mie-has-no-U-bits", csr_read(mie) & U_INTS, 0);
  csr_write(mie, 0);
  csr_set(mstatus, USTATUS_UIE | USTATUS_UPIE);
  check("mstatus-UIE-UPIE-read-0", csr_read(mstatus) & (USTATUS_UIE | USTATUS_UPIE), 0);
  check("no-uintc", PROBE("li t0, 0x2F10000\nld t0, 0(t0)"), CAUSE_LOAD_ACCESS);
  finish();
}

static void s_main(void);
static void u_main(void);

// Enter S-mode at fn, with access to all memory (bare, and PMP has no rule
// at reset, which would mean no access below M-mode).
static void m_to_s(void (*fn)(void)) {
  csr_write(mcounteren, 7);                  // S (and below) may read time
  csr_write(pmpaddr0, ~0UL);
  csr_write(pmpcfg0, 0x1f);                  // NAPOT, R W X
  uint64_t ms = csr_read(mstatus);
  ms = (ms & ~(3UL << 11)) | (1UL << 11);    // MPP = S
  csr_write(mstatus, ms);
  csr_write(mepc, fn);
  asm volatile("mret");
  for (;;) ;
}

void m_main(void) {
  csr_write(mtvec, m_trap);
  puts_("ntest: misa "); puthex(csr_read(misa)); puts_("\n");
  if (!((csr_read(misa) >> 13) & 1))
    stock_checks();
  check("misa-has-N", (csr_read(misa) >> 13) & 1, 1);

  // What OpenSBI 1.1 writes: only the S interrupts. The patch hardwires the
  // U bits to 1, so S-mode can still pass them on with sideleg.
  csr_write(mideleg, MIP_SSIP | MIP_STIP | MIP_SEIP);
  check("mideleg-U-bits-hardwired", csr_read(mideleg) & (U_INTS | MIP_SSIP | MIP_STIP | MIP_SEIP),
        U_INTS | MIP_SSIP | MIP_STIP | MIP_SEIP);
  csr_write(mideleg, 0);
  check("mideleg-U-bits-stay", csr_read(mideleg) & U_INTS, U_INTS);
  csr_write(mideleg, MIP_SSIP | MIP_STIP | MIP_SEIP);
  csr_write(medeleg, (1UL << CAUSE_BREAKPOINT) | (1UL << CAUSE_U_ECALL));

  m_to_s(s_main);
}

// Hart 1: the same delegation as hart 0, then S-mode, then U-mode, where it
// waits for a UINTC interrupt (see uintc_checks).
static void s_secondary(void);

void m_secondary(void) {
  if (!((csr_read(misa) >> 13) & 1))
    park();
  csr_write(mtvec, m_trap);
  csr_write(mideleg, MIP_SSIP | MIP_STIP | MIP_SEIP);
  csr_write(medeleg, (1UL << CAUSE_BREAKPOINT) | (1UL << CAUSE_U_ECALL));
  m_to_s(s_secondary);
}

// ---- S-mode: delegation CSRs, and services for U-mode through ecall ----
enum { CMD_SPIN_WITH_USIP = 1, CMD_SET_UEIP, CMD_CLEAR_UEIP, CMD_READ_SSTATUS,
       CMD_UNDELEGATE_USIP };
static volatile uint64_t s_async_cause;      // an interrupt S-mode took, 0 if none
static volatile uint64_t s_async_count;

void s_trap_c(uint64_t *frame) {
  uint64_t cause = csr_read(scause);
  if (cause & INTR) {
    s_async_cause = cause;
    s_async_count++;
    csr_clear(sip, 1UL << (cause & 63));     // only USIP is expected here
    csr_clear(sie, 1UL << (cause & 63));     // and never again
    return;
  }
  if (cause != CAUSE_U_ECALL) {
    puts_("FAIL s-trap: unexpected, scause "); puthex(cause);
    puts_(" sepc "); puthex(csr_read(sepc)); puts_("\n");
    failed++;
    finish();
  }
  uint64_t sepc = csr_read(sepc);
  switch (frame[15]) {                       // a7
  case CMD_SPIN_WITH_USIP:
    // A U-delegated interrupt must not be taken in S-mode, even with SIE=1
    // and USIE set: it waits until the hart is back in U-mode.
    csr_set(UIP, MIP_USIP);
    csr_set(sie, MIP_USIP);
    csr_set(sstatus, SSTATUS_SIE);
    for (volatile int i = 0; i < 10000; i++) ;
    csr_clear(sstatus, SSTATUS_SIE);
    break;
  case CMD_SET_UEIP:
    csr_set(sip, MIP_UEIP);
    break;
  case CMD_CLEAR_UEIP:
    csr_clear(sip, MIP_UEIP);
    break;
  case CMD_READ_SSTATUS:
    frame[8] = csr_read(sstatus);            // a0
    break;
  case CMD_UNDELEGATE_USIP:
    // sideleg.USIP = 0: USIP now belongs to S-mode, and is taken there.
    csr_clear(SIDELEG, MIP_USIP);
    csr_set(sie, MIP_USIP);
    csr_set(sip, MIP_USIP);
    csr_set(sstatus, SSTATUS_SIE);
    for (volatile int i = 0; i < 100; i++) ;
    csr_clear(sstatus, SSTATUS_SIE);
    csr_set(SIDELEG, MIP_USIP);               // back to U-mode for what follows
    break;
  }
  csr_write(sepc, sepc + 4);
}

static void s_to_u(void (*fn)(void)) {
  csr_write(scounteren, 7);                   // U may read time
  csr_clear(sstatus, 1UL << 8);               // SPP = U
  csr_write(sepc, fn);
  asm volatile("sret");
  for (;;) ;
}

static void s_main(void) {
  csr_write(stvec, s_trap);
  csr_write(SIDELEG, ~0UL);
  check("sideleg-only-U-interrupts", csr_read(SIDELEG), U_INTS);
  csr_write(SIDELEG, 0);
  check("uie-empty-without-sideleg", csr_read(UIE), 0);
  csr_write(SEDELEG, ~0UL);
  check("sedeleg-masked-by-medeleg", csr_read(SEDELEG),
        (1UL << CAUSE_BREAKPOINT) | (1UL << CAUSE_U_ECALL));
  csr_write(SEDELEG, 1UL << CAUSE_BREAKPOINT);  // U ecalls keep going to S
  csr_set(sie, MIP_USIP);
  check("sie-shows-USIE", csr_read(sie) & MIP_USIP, MIP_USIP);
  csr_clear(sie, MIP_USIP);
  csr_write(SIDELEG, U_INTS);
  s_to_u(u_main);
}

static void u_secondary(void);

static void s_secondary(void) {
  csr_write(stvec, s_trap);
  csr_write(SIDELEG, U_INTS);
  s_to_u(u_secondary);
}

// ---- U-mode: the handler records every trap it gets ----
static volatile int u_events;
static volatile uint64_t u_cause[4], u_epc[4], u_status[4];
static volatile int u_slot = -2;             // vectored slot taken, -2 if none
static volatile int u_claim = -1;            // UINTC entry the handler claims, or -1
static volatile uint64_t u_claimed;

static void u_reset(void) {
  u_events = 0;
  u_slot = -2;
  for (int i = 0; i < 4; i++) u_cause[i] = u_epc[i] = u_status[i] = 0;
}

static uint64_t ecall(uint64_t cmd) {
  register uint64_t a7 asm("a7") = cmd;
  register uint64_t a0 asm("a0");
  asm volatile("ecall" : "=r"(a0) : "r"(a7) : "memory");
  return a0;
}

void u_trap_c(uint64_t *frame) {
  (void)frame;
  uint64_t cause = csr_read(UCAUSE);
  int n = u_events;
  if (n < 4) {
    u_cause[n] = cause;
    u_epc[n] = csr_read(UEPC);
    u_status[n] = csr_read(USTATUS);
  }
  u_events = n + 1;
  if (cause == (INTR | 0) && u_claim >= 0)
    u_claimed |= *UINTC_CLAIM(u_claim);       // lowers the UINTC's USIP line
  else if (cause == (INTR | 0))
    csr_clear(UIP, MIP_USIP);                 // or it fires again at once
  else if (cause == (INTR | 8))
    ecall(CMD_CLEAR_UEIP);                    // UEIP is not writable from U
  else if (cause == CAUSE_BREAKPOINT)
    csr_write(UEPC, csr_read(UEPC) + 4);
  else
    csr_clear(USTATUS, USTATUS_UIE | USTATUS_UPIE);  // stop: the check fails
}

void u_vec_c(uint64_t *frame, long slot) {
  u_slot = (int)slot;
  u_trap_c(frame);
}

// Wait for another hart: until cond holds, or 10 s of the board's clock
// (10 MHz on virt) have passed, a safety net only. Host speed does not
// matter: the loop ends as soon as the other hart has acted.
#define WAIT_FOR(cond) do { \
    uint64_t t0_ = csr_read(time); \
    while (!(cond) && csr_read(time) - t0_ < 100000000UL) ; \
  } while (0)

// ---- hart 1 in U-mode: takes UINTC entry 1's interrupts ----
static volatile int h1_go, h1_ready;
static volatile uint64_t h1_claimed, h1_cause;

void u_trap1_c(uint64_t *frame) {
  (void)frame;
  h1_cause = csr_read(UCAUSE);
  h1_claimed |= *UINTC_CLAIM(1);
}

static void u_secondary(void) {
  csr_write(UTVEC, u_trap1);
  csr_write(UIE, MIP_USIP);
  // UIE only once hart 0 says so: until then hart 0's checks route entry 0
  // here without meaning hart 1 to take it.
  while (!h1_go) ;
  csr_set(USTATUS, USTATUS_UIE);
  h1_ready = 1;
  for (;;) ;
}

// ---- the UINTC against the controller's model (hw/model/uintc_model.c) ----
// The model that hw/tb/tb_diff.cpp holds the RTL controller to, here against
// QEMU's device: a fixed-seed random sequence of accesses over the whole map,
// from the generator the RTL's testbench draws from (hw/model/uintc_vectors.c)
// (every register of receivers 0-65, offsets beside them, anywhere in the
// device), each done on the device and on the model; every read's data and,
// after every access, hart 0's USIP line (uip, with the software bit clear
// and UIE off, so nothing is taken) must agree. Aligned accesses only: QEMU
// faults a misaligned one, where the RTL raises mmio_err. An entry routed to
// hart 1 raises its line there, which hart 1 does not take yet (its UIE is
// off until uintc_checks says go) and this hart cannot see; the model
// follows it all the same. Runs only with n on (no device otherwise).

// GCC zeroes the model's struct (uintc_reset) with a call to memset.
void *memset(void *d, int c, unsigned long n) {
  for (unsigned long i = 0; i < n; i++) ((volatile char *)d)[i] = (char)c;
  return d;
}

#define REPLAY_STEPS 20000
static struct uintc_model replay_model;

static void uintc_replay(void) {
  struct uintc_model *m = &replay_model;
  uintc_reset(m, UINTC_MAX_RECV, 2, 8);
  // The device is 0x81000 bytes; QEMU faults a misaligned access.
  struct uintc_vectors gen = { 0x9E3779B97F4A7C15ULL, UINTC_MAX_RECV, 0x81000, 0 };
  csr_clear(USTATUS, USTATUS_UIE);
  csr_clear(UIP, MIP_USIP);
  long reads = 0, writes = 0, rises = 0, falls = 0, step;
  uint64_t line = 0;
  uint64_t got = 0, want = 0, addr = 0;
  const char *what = 0;
  for (step = 0; step < REPLAY_STEPS && !what; step++) {
    struct uintc_access a = uintc_vectors_access(&gen);
    addr = a.addr;
    volatile uint64_t *reg_p = (volatile uint64_t *)(UINTC + addr);
    int err;
    if ((step & 255) == 255) {
      // Now and then every receiver's CLAIM in turn (compared too): the
      // line must fall then, whatever entries the sequence left raised.
      for (uint64_t e = 0; e < UINTC_MAX_RECV && !what; e++) {
        addr = UINTC_RECV_PAGE(e);
        want = uintc_mmio(m, 0, addr, 0, &err);
        got = *(volatile uint64_t *)(UINTC + addr);
        reads++;
        if (got != want)
          what = "read";
      }
    } else if (a.write) {
      uintc_mmio(m, 1, addr, a.wdata, &err);
      *reg_p = a.wdata;
      writes++;
    } else {
      want = uintc_mmio(m, 0, addr, 0, &err);
      got = *reg_p;
      reads++;
      if (got != want)
        what = "read";
    }
    if (!what) {
      want = uintc_usip(m) & 1;
      got = csr_read(UIP) & MIP_USIP;
      if (got != want)
        what = "hart 0's USIP line";
      rises += want && !line;
      falls += line && !want;
      line = want;
    }
  }
  if (!what && (rises == 0 || falls == 0 || reads == 0 || writes == 0))
    what = "coverage (the line never rose or never fell)";
  if (what) {
    puts_("FAIL uintc-replay-model: step "); putdec((int)step - 1); puts_(", address ");
    puthex(addr); puts_(": "); puts_(what); puts_(" got "); puthex(got); puts_(", model ");
    puthex(want); puts_("\n");
    failed++;
  } else {
    puts_("PASS uintc-replay-model ("); putdec(REPLAY_STEPS); puts_(" steps: ");
    putdec((int)reads); puts_(" reads, "); putdec((int)writes); puts_(" writes; the line rose ");
    putdec((int)rises); puts_(" and fell "); putdec((int)falls); puts_(" times)\n");
    passed++;
  }
  // Every entry back to rest, for the checks that follow.
  for (int e = 0; e < UINTC_MAX_RECV; e++) {
    *UINTC_ACTIVE(e) = 0;
    *UINTC_HART(e) = 0;
    (void)*UINTC_CLAIM(e);
  }
  csr_clear(UIP, MIP_USIP);
  csr_set(USTATUS, USTATUS_UIE);
}

// ---- the UINTC, from U-mode (memory is bare and PMP lets U reach it) ----
// Unlike a CSR write, a device store does not end QEMU's translation block:
// the interrupt comes a few instructions later, as on hardware. Wait for it
// (a bound, not a delay: the loop ends as soon as the handler has run).
static void wait_events(int n) {
  for (int i = 0; i < 100000 && u_events < n; i++) ;
}

static void uintc_checks(void) {
  csr_set(UIE, MIP_USIP);                     // S-mode's handler cleared it in 8.
  u_claim = 0;
  u_claimed = 0;
  *UINTC_HART(0) = 0;
  *UINTC_ACTIVE(0) = 1;
  check("uintc-control-reads-back", *UINTC_HART(0) + (*UINTC_ACTIVE(0) << 8), 0x100);

  // A send raises hart 0's USIP; the handler's CLAIM returns the bits and
  // lowers the line again.
  u_reset();
  *UINTC_SEND(0) = 5;
  wait_events(1);
  check("uintc-send-taken", u_events, 1);
  check("uintc-send-ucause", u_cause[0], INTR | 0);
  check("uintc-claim-bits", u_claimed, 1UL << 5);
  check("uintc-claim-cleared", *UINTC_PENDING(0), 0);
  check("uintc-line-low", csr_read(UIP) & MIP_USIP, 0);

  // An inactive entry keeps its bits and raises nothing until activated.
  u_reset();
  u_claimed = 0;
  *UINTC_ACTIVE(0) = 0;
  *UINTC_SEND(0) = 1;
  *UINTC_SEND(0) = 63;
  wait_events(1);
  check("uintc-inactive-not-taken", u_events, 0);
  check("uintc-inactive-pending", *UINTC_PENDING(0), (1UL << 63) | 2);
  *UINTC_ACTIVE(0) = 1;
  wait_events(1);
  check("uintc-activate-taken", u_events, 1);
  check("uintc-activate-claim", u_claimed, (1UL << 63) | 2);

  // An entry routed to hart 1 leaves hart 0 alone; routing it back delivers.
  u_reset();
  u_claimed = 0;
  *UINTC_HART(0) = 1;
  *UINTC_SEND(0) = 7;
  wait_events(1);
  check("uintc-other-hart-not-here", u_events + (csr_read(UIP) & MIP_USIP), 0);
  *UINTC_HART(0) = 0;
  wait_events(1);
  check("uintc-routed-back-taken", u_events, 1);
  check("uintc-routed-back-claim", u_claimed, 1UL << 7);
  *UINTC_HART(0) = 99;                         // no such hart: ignored
  check("uintc-bad-hart-ignored", *UINTC_HART(0), 0);

  // USIP has two sources: lowering the line keeps a software-set USIP, and
  // clearing the software bit keeps the line's.
  csr_clear(USTATUS, USTATUS_UIE);
  csr_set(UIP, MIP_USIP);
  *UINTC_SEND(0) = 0;
  (void)*UINTC_CLAIM(0);
  check("uintc-low-line-keeps-software-usip", csr_read(UIP) & MIP_USIP, MIP_USIP);
  *UINTC_SEND(0) = 0;
  csr_clear(UIP, MIP_USIP);
  check("uintc-software-clear-keeps-line", csr_read(UIP) & MIP_USIP, MIP_USIP);
  (void)*UINTC_CLAIM(0);
  check("uintc-both-clear", csr_read(UIP) & MIP_USIP, 0);
  csr_set(USTATUS, USTATUS_UIE);
  *UINTC_ACTIVE(0) = 0;
  u_claim = -1;

  // Across harts: entry 1 names hart 1, which spins in U-mode with UIE set. A
  // store here is all it takes for hart 1's handler to run: no IPI, no kernel.
  h1_go = 1;
  WAIT_FOR(h1_ready);
  check("uintc-hart1-ready", h1_ready, 1);
  if (!h1_ready)
    return;                                   // no hart 1 (-smp 1): nothing to test
  *UINTC_HART(1) = 1;
  *UINTC_ACTIVE(1) = 1;
  u_reset();
  *UINTC_SEND(1) = 9;
  WAIT_FOR(h1_claimed);
  check("uintc-cross-hart-delivered", h1_claimed, 1UL << 9);
  check("uintc-cross-hart-ucause", h1_cause, INTR | 0);
  check("uintc-cross-hart-not-here", u_events, 0);
}

static void u_main(void) {
  uint64_t at;

  // 1. USIP written by U-mode itself, direct mode.
  csr_write(UTVEC, u_trap);
  csr_write(UIE, MIP_USIP | MIP_UEIP);
  csr_set(USTATUS, USTATUS_UIE);
  u_reset();
  asm volatile("csrsi 0x044, 1\n1: la %0, 1b" : "=r"(at) :: "memory");
  check("usi-taken", u_events, 1);
  check("usi-ucause", u_cause[0], INTR | 0);
  check("usi-uepc", u_epc[0], at);
  check("usi-entry-UPIE1-UIE0", u_status[0], USTATUS_UPIE);
  check("uret-UIE-UPIE-back", csr_read(USTATUS), USTATUS_UIE | USTATUS_UPIE);
  check("usip-cleared-by-handler", csr_read(UIP) & MIP_USIP, 0);
  check("sstatus-shows-UIE", ecall(CMD_READ_SSTATUS) & USTATUS_UIE, USTATUS_UIE);

  // 1b. uret outside a handler: UIE <- UPIE (0 here), UPIE <- 1, pc <- uepc.
  uint64_t skipped = 0;
  csr_write(USTATUS, 0);
  asm volatile("la t0, 1f\ncsrw 0x041, t0\n.word 0x00200073\nli %0, 1\n1:"
               : "+r"(skipped) :: "t0", "memory");
  check("uret-jumps-to-uepc", skipped, 0);
  check("uret-UPIE0-gives-UIE0-UPIE1", csr_read(USTATUS), USTATUS_UPIE);
  csr_write(USTATUS, USTATUS_UIE);

  // 2. With UIE=0 the interrupt waits; setting UIE takes it.
  u_reset();
  csr_clear(USTATUS, USTATUS_UIE);
  csr_set(UIP, MIP_USIP);
  check("uie0-keeps-pending", u_events, 0);
  check("uie0-uip-shows-USIP", csr_read(UIP) & MIP_USIP, MIP_USIP);
  asm volatile("csrsi 0x000, 1\n1: la %0, 1b" : "=r"(at) :: "memory");
  check("uie1-takes-it", u_events, 1);
  check("uie1-uepc", u_epc[0], at);

  // 3. Pending while the hart is in S-mode: not taken there, taken on sret.
  u_reset();
  s_async_count = 0;
  asm volatile("li a7, %1\necall\n1: la %0, 1b" : "=r"(at) : "i"(CMD_SPIN_WITH_USIP)
               : "a7", "a0", "memory");
  check("not-taken-in-S", s_async_count, 0);
  check("taken-back-in-U", u_events, 1);
  check("taken-back-in-U-uepc", u_epc[0], at);

  // 4. U may write only USIP in uip.
  csr_clear(USTATUS, USTATUS_UIE);
  csr_set(UIP, MIP_UTIP | MIP_UEIP);
  check("uip-UTIP-UEIP-read-only", csr_read(UIP) & (MIP_UTIP | MIP_UEIP), 0);
  csr_set(USTATUS, USTATUS_UIE);

  // 5. Vectored utvec: UEI (cause 8) enters at base + 32, USI at base + 0.
  csr_write(UTVEC, (uint64_t)u_vec | 1);
  check("utvec-vectored-reads-back", csr_read(UTVEC), (uint64_t)u_vec | 1);
  u_reset();
  asm volatile("li a7, %1\necall\n1: la %0, 1b" : "=r"(at) : "i"(CMD_SET_UEIP)
               : "a7", "a0", "memory");
  check("uei-taken", u_events, 1);
  check("uei-ucause", u_cause[0], INTR | 8);
  check("uei-vectored-slot", (uint64_t)u_slot, 8);
  check("uei-uepc", u_epc[0], at);
  u_reset();
  csr_set(UIP, MIP_USIP);
  check("usi-vectored-slot", (uint64_t)u_slot, 0);
  csr_write(UTVEC, 2);                        // reserved mode: write ignored
  check("utvec-mode2-ignored", csr_read(UTVEC), (uint64_t)u_vec | 1);
  csr_write(UTVEC, u_trap);

  // 6. Both pending at once: the spec's order, external before software.
  u_reset();
  csr_clear(USTATUS, USTATUS_UIE);
  ecall(CMD_SET_UEIP);
  csr_set(UIP, MIP_USIP);
  csr_set(USTATUS, USTATUS_UIE);
  check("priority-two-traps", u_events, 2);
  check("priority-UEI-first", u_cause[0], INTR | 8);
  check("priority-USI-second", u_cause[1], INTR | 0);

  // 7. An exception S-mode passes on with sedeleg, taken even with UIE=0.
  u_reset();
  csr_clear(USTATUS, USTATUS_UIE);
  asm volatile(".option push\n.option norvc\n1: ebreak\n.option pop\nla %0, 1b"
               : "=r"(at) :: "memory");
  check("ebreak-to-U", u_events, 1);
  check("ebreak-ucause", u_cause[0], CAUSE_BREAKPOINT);
  check("ebreak-uepc", u_epc[0], at);
  csr_set(USTATUS, USTATUS_UIE);

  // 8. With sideleg.USIP clear, USIP is an S-mode interrupt again.
  u_reset();
  s_async_count = 0;
  ecall(CMD_UNDELEGATE_USIP);
  check("undelegated-USIP-taken-in-S", s_async_cause, INTR | 0);
  check("undelegated-USIP-not-in-U", u_events, 0);
  csr_write(UTVEC, u_trap);

  uintc_replay();
  uintc_checks();
  finish();
}
