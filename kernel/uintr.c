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
#include "uintc.h"
#include "palloc.h"
#include "uvm.h"
#include "trace.h"

int uintr_native_harts;       // set once at boot, before the other harts start
#define native uintr_native_harts

void uintr_select(int n) { native = n; }
int uintr_is_native(void) { return native; }

const char *uintr_backend_name(void) {
  if (!native)
    return "emulated";
  return uintc_present() ? "native (N extension), with a user-interrupt controller"
                         : "native (N extension)";
}

void uintr_init_hart(void) {
  if (native)
    uintr_native_init_hart();
}

void uintr_init(struct thread *t) {
  // A slot reused within a process keeps its controller entry (and mapping),
  // emptied: entries go back only when the process ends (uintr_release).
  int entry1 = t->ui.uintc_entry1;
  t->ui = (struct uintr_state){ .uintc_entry1 = entry1 };
  if (entry1)
    uintc_reset(entry1 - 1);
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
  // in the kernel has had them moved into n.uip by uintr_leave. Bits waiting
  // in its controller entry are.
  int entry1 = t->ui.uintc_entry1;
  return (__atomic_load_n(&t->ui.n.uip, __ATOMIC_SEQ_CST) & NM_USIP) != 0 ||
         (entry1 && uintc_pending(entry1 - 1));
}

uint64_t uintr_recv_page(struct thread *t) {
  if (!native || !uintc_present())
    return 0;
  struct proc *p = t->proc;
  uint64_t va = USER_UINTC_RECV + (uint64_t)t->tid * PAGE_SIZE;
  if (!t->ui.uintc_entry1) {
    int e = uintc_alloc();
    if (e < 0)
      return 0;                // all taken: this thread keeps uip and IPIs
    // Under vm_lock: the walk may add a page-table page, and two threads of p
    // mapping their pages at once (their first async calls, on two harts)
    // would each add the same one, the other's mapping and page lost.
    spin_lock(&p->vm_lock);
    int err = uvm_map_shared(p->pagetable, va, uintc_recv_page(e), PTE_R | PTE_W);
    spin_unlock(&p->vm_lock);
    if (err) {
      uintc_free(e);
      return 0;
    }
    // Published last: from here on posts go to the controller.
    __atomic_store_n(&t->ui.uintc_entry1, e + 1, __ATOMIC_SEQ_CST);
    // t is in this call, its N state possibly still in the hart (uintr.h):
    // save it now, so that its next entry loads it in full and points the
    // new entry at the hart. (Without this the entry stayed inactive until
    // the thread next left the hart, and posts waited in it unseen.)
    uintr_leave(t);
  }
  return va;
}

void uintr_release(struct thread *t) {
  if (t->ui.uintc_entry1)
    uintc_free(t->ui.uintc_entry1 - 1);
  t->ui.uintc_entry1 = 0;
}

int uintr_ecall_ret(struct thread *t) {
  return native ? -1 : uintr_emul_ecall_ret(t);   // native: uret is an instruction
}

// How the post reaches the thread; uintr_post wraps it with the benchmark's
// instret readings.
static void post(struct thread *t) {
  // Counted before the bit is raised, sequentially consistent: the emulated
  // handler exit (uintr_emul_ecall_ret) relies on it.
  __atomic_fetch_add(&t->ui.posted, 1, __ATOMIC_SEQ_CST);
  int entry1 = __atomic_load_n(&t->ui.uintc_entry1, __ATOMIC_SEQ_CST);
  if (entry1) {
    // The controller keeps the bit until the thread's handler claims it, and
    // raises USIP on whichever hart the thread runs on (if it runs): no IPI.
    uintc_send(entry1 - 1);
    waitq_wake_all(&t->uwait);
    return;
  }
  nm_raise(&t->ui.n, NM_USIP);
  waitq_wake_all(&t->uwait);
  // Running on another hart right now? Interrupt it, so the delivery happens at
  // once rather than at its next tick: its trap brings the thread through
  // uintr_leave and uintr_deliver, which hand the bit to U. (The switcher
  // publishes the hart before it looks for pending interrupts: one of the two
  // sides sees the other.)
  int h = __atomic_load_n(&t->on_hart, __ATOMIC_SEQ_CST);
  if (h >= 0 && (uint32_t)h != this_hart()->index)
    hart_ipi((uint32_t)h, IPI_UINTR);
}

void uintr_post(struct thread *t) {
  TRACE_THREAD(TR_UPOST, t, 0, 0);
  uint64_t t0 = csr_read(instret);
  t->ui.post_instret = t0;           // for the delivery-latency benchmarks
  post(t);
  t->ui.post_cost = csr_read(instret) - t0;
}

int uintr_illegal(struct thread *t, uint32_t insn) {
  return native ? 0 : uintr_emul_illegal(t, insn);
}
