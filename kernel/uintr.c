// User interrupts, the part both backends share (see uintr.h): the choice of
// backend, a thread's initial N state, posting, and "is one pending". The
// backends differ only in how a thread's state meets the hart on its way into
// and out of U-mode (uintr_emul.c, uintr_native.c).
#include "uintr.h"
#include "uintr_backend.h"
#include "hart.h"
#include "proc.h"
#include "riscv.h"
#include "sbi.h"

static int native;            // set once at boot, before the other harts start

void uintr_select(int n) { native = n; }

const char *uintr_backend_name(void) {
  return native ? "native (N extension)" : "emulated";
}

void uintr_init_hart(void) {
  if (native)
    uintr_native_init_hart();
}

void uintr_init(struct thread *t) {
  t->ui = (struct uintr_state){ 0 };
  // What S-mode does on an N hart: delegate the user software interrupt, and
  // only it (csrw sideleg): the kernel raises nothing else. The model keeps it
  // for the emulation; the native backend writes the same value into the real
  // sideleg of every hart, so uie and uip read the same on both (utrace).
  const struct nm_env kernel_env = { .priv = NM_PRIV_S, .mideleg = NM_U_INTS };
  uint64_t old;
  nm_csr_access(&t->ui.n, &kernel_env, NM_CSR_SIDELEG, NM_CSRRW, NM_USIP, 1, &old);
}

int uintr_pending(struct thread *t) {
  // Bits the hardware raised are never counted here: a thread whose state is
  // in the kernel has had them moved into n.uip by uintr_leave.
  return (__atomic_load_n(&t->ui.n.uip, __ATOMIC_SEQ_CST) & NM_USIP) != 0;
}

void uintr_post(struct thread *t) {
  t->ui.post_instret = csr_read(instret);   // for the delivery-latency benchmark
  nm_raise(&t->ui.n, NM_USIP);
  __atomic_fetch_add(&t->ui.posted, 1, __ATOMIC_RELAXED);
  waitq_wake_all(&t->uwait);
  // Running on another hart right now? Interrupt it, so the delivery happens at
  // once rather than at its next tick: its trap brings the thread through
  // uintr_leave and uintr_deliver, which hand the bit to U. (The switcher
  // publishes the hart before it looks for pending interrupts: one of the two
  // sides sees the other.)
  int h = __atomic_load_n(&t->on_hart, __ATOMIC_SEQ_CST);
  if (h >= 0 && (uint32_t)h != this_hart()->index)
    sbi_send_ipi(1, harts[h].hartid);
}

void uintr_deliver(struct thread *t) {
  if (native)
    uintr_native_enter(t);
  else
    uintr_emul_deliver(t);
}

void uintr_leave(struct thread *t) {
  if (native)
    uintr_native_leave(t);
}

int uintr_illegal(struct thread *t, uint32_t insn) {
  return native ? 0 : uintr_emul_illegal(t, insn);
}
