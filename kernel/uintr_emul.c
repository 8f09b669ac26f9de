// The emulated user-interrupt backend (see uintr.h and docs/NEXT.md). The N
// extension's rules themselves (u-CSR masks and access checks, trap entry,
// uret, which interrupt is deliverable) are kernel/nmodel.c, the same code the
// RTL in hw/ is tested against; this file only decodes the trapping
// instruction and moves values between a thread's registers and the model.
// Each thread is an N hart whose M-mode delegated all three user interrupts to
// S (mideleg, as our QEMU patch does) and whose S-mode delegated only the user
// software interrupt on to U (sideleg = USIP, as uintr_native.c does); only
// USI is ever raised (uintr_post), and no exception is delegated to U. OpenSBI does not delegate illegal
// instructions, so each emulated access costs an M-mode round trip before it
// reaches us.
#include "uintr_backend.h"
#include "palloc.h"
#include "proc.h"
#include "trace.h"

#define OPCODE_SYSTEM 0x73

// A thread as the model sees it: always in U-mode, no hardware lines.
static const struct nm_env user_env = {
  .priv = NM_PRIV_U, .mideleg = NM_U_INTS, .medeleg = 0, .lines = 0,
};

void uintr_emul_deliver(struct thread *t) {
  // Called on a return to U when uip is not 0 (uintr_deliver looks first: a
  // thread has no hardware lines, so nothing is deliverable while it is 0).
  int irq = nm_pending_irq(&t->ui.n, &user_env);
  if (irq < 0)
    return;
  t->ui.posted_at_entry = __atomic_load_n(&t->ui.posted, __ATOMIC_ACQUIRE);
  t->uc.pc = nm_trap(&t->ui.n, NM_CAUSE_INTERRUPT | (uint64_t)irq, t->uc.pc, 0);
  t->ui.delivered++;
  t->ui.in_handler++;
  TRACE_THREAD(TR_UINTR, t, 0, 0);   // (only USI is ever raised)
}

// SYS_uintr_ret: the handler's `csrc uip` and `uret` in one trap. Only from
// inside a handler the kernel entered (in_handler): elsewhere uret itself
// would be legal (it returns to uepc), but this call is the handler's exit,
// and a thread that makes it anywhere else would go back to where some
// earlier interrupt struck, with its registers of now (sysfuzz found one
// doing so); it is killed instead, as on native harts, where the call is
// always refused. (Nested handlers, which re-enable UIE, are counted.)
int uintr_emul_ecall_ret(struct thread *t) {
  if (t->ui.in_handler == 0)
    return -1;
  // a0 and a7 from the popped frame, 56 bytes apart. Aligned and within one
  // page (the runtime's sp always is): one translation and two loads (a
  // copy of the 64 bytes between them through copyin cost about 110
  // instructions more). Otherwise copy that upper half of the frame.
  uint64_t sp = t->uc.x[REG_SP], at = sp - UINTR_RET_A0_OFF, a0, a7;
  const uint64_t span = UINTR_RET_A0_OFF - UINTR_RET_A7_OFF + 8;
  const uint64_t *pa = 0;
  uvm_copy_enter();               // (a read of a user page by its address)
  if ((at & 7) == 0 && (at & (PAGE_SIZE - 1)) + span <= PAGE_SIZE)
    pa = (const uint64_t *)uvm_translate(t->proc->pagetable, at, PTE_R);
  if (pa) {
    a0 = pa[0];
    a7 = pa[(UINTR_RET_A0_OFF - UINTR_RET_A7_OFF) / 8];
  }
  uvm_copy_exit();
  if (!pa) {
    uint64_t frame[span / 8];
    if (copyin(t->proc->pagetable, frame, at, sizeof frame) < 0)
      return -1;
    a0 = frame[0];
    a7 = frame[(UINTR_RET_A0_OFF - UINTR_RET_A7_OFF) / 8];
  }
  // The `csrc uip` the handler did not execute at its entry: the same effect,
  // unless an interrupt was posted after the entry (a post raises USIP after
  // it counts, and its completion was in the ring before either). Clear
  // first, then look at the count, and raise again if it moved: looking
  // first would lose a post that counts and raises (a no-op: USIP is still
  // set) between the look and the clear, with its completion left in the
  // ring and the thread asleep in uwait. All sequentially consistent, as in
  // post(): either we see its count, or its raise comes after our clear.
  nm_clear_usip(&t->ui.n, &user_env);
  if (__atomic_load_n(&t->ui.posted, __ATOMIC_SEQ_CST) != t->ui.posted_at_entry)
    nm_raise(&t->ui.n, NM_USIP);
  if (nm_uret(&t->ui.n, &user_env, &t->uc.pc) != 0)
    return -1;
  t->ui.in_handler--;
  t->uc.x[REG_A0] = a0;
  t->uc.x[REG_A7] = a7;
  return 0;
}

int uintr_emul_illegal(struct thread *t, uint32_t insn) {
  if (insn == NM_INSN_URET) {        // (legal anywhere; it leaves a handler if in one)
    if (nm_uret(&t->ui.n, &user_env, &t->uc.pc) != 0)
      return 0;
    if (t->ui.in_handler)
      t->ui.in_handler--;
    return 1;
  }
  if ((insn & 0x7f) != OPCODE_SYSTEM)
    return 0;
  uint32_t funct3 = (insn >> 12) & 7, rd = (insn >> 7) & 31, rs1 = (insn >> 15) & 31;
  if (funct3 == 0 || funct3 == 4)
    return 0;
  uint64_t src = (funct3 & 4) ? rs1 : (rs1 ? t->uc.x[rs1] : 0);   // immediate forms
  int write = (funct3 & 3) == NM_CSRRW || rs1 != 0;
  uint64_t old;
  if (nm_csr_access(&t->ui.n, &user_env, insn >> 20, funct3 & 3, src, write, &old) != 0)
    return 0;
  if (rd)
    t->uc.x[rd] = old;
  t->uc.pc += 4;
  return 1;
}
