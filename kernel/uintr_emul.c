// The emulated user-interrupt backend (see uintr.h and docs/NEXT.md). Faithful to the
// N extension's rules: u-CSR numbers and masks, trap entry (uepc, ucause with the
// interrupt bit, UPIE <- UIE, UIE <- 0, pc <- utvec) and uret (UIE <- UPIE,
// UPIE <- 1, pc <- uepc). OpenSBI does not delegate illegal instructions, so each
// emulated access costs an M-mode round trip before it reaches us.
#include "uintr.h"
#include "hart.h"
#include "proc.h"
#include "sbi.h"

#define CSR_USTATUS 0x000
#define CSR_UIE 0x004
#define CSR_UTVEC 0x005
#define CSR_USCRATCH 0x040
#define CSR_UEPC 0x041
#define CSR_UCAUSE 0x042
#define CSR_UTVAL 0x043
#define CSR_UIP 0x044
#define INSN_URET 0x00200073u
#define OPCODE_SYSTEM 0x73
#define CAUSE_USI ((1ULL << 63) | 0)

const char *uintr_backend_name(void) { return "emulated"; }

void uintr_init(struct thread *t) {
  t->ui = (struct uintr_state){ 0 };
}

int uintr_pending(struct thread *t) {
  return (__atomic_load_n(&t->ui.uip, __ATOMIC_SEQ_CST) & UIP_USIP) != 0;
}

void uintr_post(struct thread *t) {
  __atomic_fetch_or(&t->ui.uip, UIP_USIP, __ATOMIC_SEQ_CST);
  __atomic_fetch_add(&t->ui.posted, 1, __ATOMIC_RELAXED);
  waitq_wake_all(&t->uwait);
  // Running on another hart right now? Interrupt it, so the delivery happens at
  // once rather than at its next tick. (The switcher publishes the hart before
  // it checks for pending interrupts: one of the two sides sees the other.)
  int h = __atomic_load_n(&t->on_hart, __ATOMIC_SEQ_CST);
  if (h >= 0 && (uint32_t)h != this_hart()->index)
    sbi_send_ipi(1, harts[h].hartid);
}

void uintr_deliver(struct thread *t) {
  struct uintr_state *u = &t->ui;
  if (!(u->uip & UIP_USIP) || !(u->uie & UIE_USIE) || !(u->ustatus & USTATUS_UIE))
    return;
  u->uepc = t->uc.pc;
  u->ucause = CAUSE_USI;
  u->utval = 0;
  u->ustatus = USTATUS_UPIE;                 // UPIE <- UIE (which was 1), UIE <- 0
  // Direct mode: the handler's address; vectored: base + 4 * cause (0 for USI).
  t->uc.pc = u->utvec & ~3ULL;
  u->delivered++;
}

// Read a shadow u-CSR; -1 if csr is not one.
static int csr_read_shadow(struct uintr_state *u, uint32_t csr, uint64_t *val) {
  switch (csr) {
  case CSR_USTATUS: *val = u->ustatus; return 0;
  case CSR_UIE: *val = u->uie; return 0;
  case CSR_UTVEC: *val = u->utvec; return 0;
  case CSR_USCRATCH: *val = u->uscratch; return 0;
  case CSR_UEPC: *val = u->uepc & ~1ULL; return 0;
  case CSR_UCAUSE: *val = u->ucause; return 0;
  case CSR_UTVAL: *val = u->utval; return 0;
  case CSR_UIP: *val = __atomic_load_n(&u->uip, __ATOMIC_SEQ_CST); return 0;
  }
  return -1;
}

static void csr_write_shadow(struct uintr_state *u, uint32_t csr, uint64_t val) {
  switch (csr) {
  case CSR_USTATUS: u->ustatus = val & (USTATUS_UIE | USTATUS_UPIE); break;
  case CSR_UIE: u->uie = val & 0x111; break;          // USIE, UTIE, UEIE
  case CSR_UTVEC: u->utvec = val; break;
  case CSR_USCRATCH: u->uscratch = val; break;
  case CSR_UEPC: u->uepc = val & ~1ULL; break;
  case CSR_UCAUSE: u->ucause = val; break;
  case CSR_UTVAL: u->utval = val; break;
  case CSR_UIP:                                       // U may write USIP only
    if (val & UIP_USIP)
      __atomic_fetch_or(&u->uip, UIP_USIP, __ATOMIC_SEQ_CST);
    else
      __atomic_fetch_and(&u->uip, ~(uint64_t)UIP_USIP, __ATOMIC_SEQ_CST);
    break;
  }
}

int uintr_illegal(struct thread *t, uint32_t insn) {
  struct uintr_state *u = &t->ui;
  if (insn == INSN_URET) {
    t->uc.pc = u->uepc;
    u->ustatus = ((u->ustatus & USTATUS_UPIE) ? USTATUS_UIE : 0) | USTATUS_UPIE;  // UIE <- UPIE, UPIE <- 1
    return 1;
  }
  if ((insn & 0x7f) != OPCODE_SYSTEM)
    return 0;
  uint32_t funct3 = (insn >> 12) & 7, rd = (insn >> 7) & 31, rs1 = (insn >> 15) & 31;
  uint32_t csr = insn >> 20;
  uint64_t old;
  if (funct3 == 0 || funct3 == 4 || csr_read_shadow(u, csr, &old) != 0)
    return 0;
  uint64_t src = (funct3 & 4) ? rs1 : (rs1 ? t->uc.x[rs1] : 0);   // immediate forms
  switch (funct3 & 3) {
  case 1:                                                         // csrrw(i)
    csr_write_shadow(u, csr, src);
    break;
  case 2:                                                         // csrrs(i)
    if (rs1)
      csr_write_shadow(u, csr, old | src);
    break;
  case 3:                                                         // csrrc(i)
    if (rs1)
      csr_write_shadow(u, csr, old & ~src);
    break;
  }
  if (rd)
    t->uc.x[rd] = old;
  t->uc.pc += 4;
  return 1;
}
