// The switching coroutines: COPS's bridge between kernel coroutines and user
// processes. Each is a stackful kernel coroutine; there is one per hart, so as
// many user threads as harts can run at once. A switcher takes a runnable thread,
// enters U-mode with user_return(), and gets control back at the process's next
// trap as the return of that call:
//   - system call: handled here if it needs no waiting (then straight back to
//     user mode, no page-table switch); otherwise a kernel coroutine takes it
//     over and the switcher moves on to another process;
//   - interrupt: handled; after a timer tick (taken in U-mode or during one of
//     the thread's calls) the process goes to the back of the run queue if
//     others are waiting, so a process that spins, or loops on calls, delays
//     others by at most a tick; and whenever a kernel coroutine of better
//     priority than the switcher is ready, the switcher yields to it before
//     resuming user code;
//   - exception: the process is killed alone (status -1) and all it held freed.
#include "switcher.h"
#include "hart.h"
#include "kco.h"
#include "printf.h"
#include "proc.h"
#include "riscv.h"
#include "syscall.h"
#include "trap.h"
#include "ring.h"
#include "uintr.h"
#include "prio.h"
#include "trace.h"

// A process of equal or better priority is waiting for a hart (equal: round
// robin among equals at each tick or yield).
static int others_waiting(uint32_t my_prio) { return proc_runq_best() <= my_prio; }

// Has a tick come on this hart since the last look? Wherever it was taken: in
// U-mode, or in the kernel during one of the thread's calls. A thread that
// spends its time in calls takes most of its ticks in the kernel, and on QEMU
// can take all of them there (a tick raised while the vCPU handles an ecall
// waits, masked, for the call's intr_on): looking only at ticks taken in
// U-mode, such a thread once kept a runnable sibling off a lone hart for good
// (threadtest's close race, native N at -smp 1).
static int tick_seen(void) {
  struct hart *h = this_hart();
  if (!h->tick_unseen)
    return 0;
  h->tick_unseen = 0;
  return 1;
}

// The priority a switcher carries while it runs p: what p published at its last
// kernel entry (COPS: the switching coroutine carries the priority of the
// process it runs). Until p's next trap nothing reads it but the trace, and
// that trap publishes p's rank afresh (so no rank is computed here).
static inline uint32_t carried_priority(struct proc *p) {
  uint32_t prio = __atomic_load_n(&p->pub_prio, __ATOMIC_RELAXED);
  return prio < NPRIO_DEFAULT ? prio : NPRIO_DEFAULT - 1;
}

enum run_end { RUN_BLOCKED, RUN_PREEMPTED, RUN_EXITED };

// Run the thread in U-mode until its next trap (kernel/uservec.S). The call
// keeps ra, sp, s0 and tp and nothing else: every other register is declared
// clobbered here, so the compiler saves only the values it needs afterwards.
static inline __attribute__((always_inline)) void enter_user(struct uctx *uc) {
  register struct uctx *a0 __asm__("a0") = uc;
  __asm__ volatile("call user_return"
                   : "+r"(a0)
                   :
                   : "ra", "t0", "t1", "t2", "t3", "t4", "t5", "t6", "a1", "a2", "a3", "a4",
                     "a5", "a6", "a7", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9",
                     "s10", "s11", "memory");
}

// The faulting instruction is in stval when the hart reports it; otherwise read
// it from the process (4 bytes: u-CSR instructions are never compressed).
static int emulate_illegal(struct thread *t, uint64_t stval) {
  uint32_t insn = (uint32_t)stval;
  if (insn == 0 && copyin(t->proc->pagetable, &insn, t->uc.pc, sizeof insn) < 0)
    return 0;
  return uintr_illegal(t, insn);
}

// Stop thread t for good. If t is the last thread, the process is freed right
// here (and with it the page table this hart holds: uvm_free moves it off).
static enum run_end stop(struct thread *t, int status) {
  uintr_leave(t);
  thread_stop(t, status);
  return RUN_EXITED;
}

// t gives up its hart to other work: its process's ready coroutines go to an
// idle sibling thread now, not after the kick delay (uwait_kick_siblings).
static enum run_end preempted(struct thread *t) {
  uwait_kick_if_waiting(t, 1);
  return RUN_PREEMPTED;
}

static enum run_end run_thread(struct thread *t) {
  struct proc *p = t->proc;
  uvm_activate(p->pagetable);
  uint32_t my_prio = carried_priority(p);
  kco_reprio_self(my_prio);
  // A call that waited parked on a queue, and t was woken: repeat it first
  // (here, not on a kernel coroutine: see syswork_park).
  if (t->park.wq && syscall_resume(t) == SC_BLOCKED)
    return RUN_BLOCKED;
  this_hart()->tick_unseen = 0;  // t's turn starts now
  for (;;) {
    if (p->killed)
      return stop(t, -1);
    // Round robin at each tick among threads of equal priority (and a better
    // one first). (my_prio: published at the last trap's entry, below.)
    if (tick_seen() && others_waiting(my_prio))
      return preempted(t);
    intr_off();                 // stvec points at uservec until the trap
    // Publish where t runs before looking for pending user interrupts, so a
    // completion posted from another hart either is seen here or sends an IPI.
    __atomic_store_n(&t->on_hart, (int)this_hart()->index, __ATOMIC_SEQ_CST);
    if (p->ring_waiting)
      ring_flush(t);            // completions that waited for ring space
    uintr_deliver(t, &t->ui);
    TRACE_THREAD(TR_UENTER, t, 0, 0);
    enter_user(&t->uc);
    uintr_trap(t);
    __atomic_store_n(&t->on_hart, -1, __ATOMIC_SEQ_CST);
    uint64_t cause = csr_read(scause), stval = csr_read(stval);
    TRACE_THREAD(TR_UEXIT, t, 0, (long)cause);
    p->traps++;
    prio_publish(p);            // on every kernel entry, as COPS specifies
    uwait_kick_if_waiting(t, 0);      // idle executor threads of p: work for them?
    // ... and the switcher carries that priority from here on (what the
    // process runs now: it may have switched coroutines since the last trap).
    my_prio = carried_priority(p);
    kco_reprio_self(my_prio);
    if (cause & SCAUSE_INTERRUPT) {
      trap_interrupt(cause);    // (a tick: seen at the top of the loop)
      intr_on();
    } else if (cause == EXC_ECALL_U) {
      intr_on();
      t->uc.pc += 4;
      switch (syscall_dispatch(t)) {
      case SC_DONE:
        break;
      case SC_ASYNC_STARTED:
        // The call's kernel coroutine is ready at the caller's priority. It
        // would only find, right now, that its event has not happened (the call
        // just tried): let the process go on, and run it at the next trap or on
        // an idle hart, unless it is of strictly better priority (below).
        if (exec_best_prio(&kexec) >= my_prio)
          continue;
        break;
      case SC_BLOCKED:          // t belongs to its waker now (dispatch called
        return RUN_BLOCKED;     // uintr_leave before t could be woken)
      case SC_YIELD:            // (my_prio: published at this trap's entry, above)
        if (others_waiting(my_prio))
          return preempted(t);
        break;
      case SC_EXIT:             // the whole process ends; this thread first
        proc_terminate(p, (int)t->uc.x[REG_A0]);
        return stop(t, (int)t->uc.x[REG_A0]);
      case SC_THREAD_EXIT:
        return stop(t, (int)t->uc.x[REG_A0]);
      case SC_FAULT:
        kprintf("coral: pid %d (%s) thread %d killed: uintr_ret outside a user-interrupt "
                "handler, or its stack unreadable (sp %p)\n", p->pid, p->name, t->tid,
                (void *)t->uc.x[REG_SP]);
        proc_terminate(p, -1);
        return stop(t, -1);
      }
    } else if (cause == EXC_ILLEGAL_INST && emulate_illegal(t, stval)) {
      intr_on();                // a u-CSR access or uret: emulated, carry on
    } else {
      intr_on();
      kprintf("coral: pid %d (%s) thread %d killed: %s at pc %p, stval %p\n", p->pid, p->name,
              t->tid, trap_exception_name(cause), (void *)t->uc.pc, (void *)stval);
      proc_terminate(p, -1);    // a faulting thread takes its process down
      return stop(t, -1);
    }
    // Kernel work of better or equal priority first (cooperative priority, as
    // in COPS; equal: round robin, e.g. the call another process is waiting on).
    // Stackless work runs right here, on this hart and this stack: t's N state
    // and p's page table stay (a post to t meanwhile waits in its record or
    // its controller entry, both handed over on the way back to U; kernel
    // code reaches user memory through explicit page tables, never satp).
    // Leaving and re-entering cost native N about 110 instructions a time
    // (the u-CSRs saved and loaded, the controller entry detached and
    // re-attached). For the rest the switcher yields, and may resume on
    // another hart, whose satp may be someone else's: load p's page table
    // again before going back to user mode (nothing, if it is still loaded:
    // uvm_activate is lazy, and this hart keeps p's table while it runs the
    // kernel work; if p ends meanwhile, uvm_free leaves the root page to the
    // last hart that holds it).
    if (exec_best_prio(&kexec) <= my_prio && !kco_run_stackless(my_prio)) {
      uintr_leave(t);           // (this switcher may resume on another hart)
      kco_yield();
      uvm_activate(p->pagetable);
    }
  }
}

static void switcher_main(void *arg) {
  (void)arg;
  struct thread *next = 0;       // taken from the run queue already (runq_switch)
  for (;;) {
    struct thread *t = next ? next : runq_pop_wait();
    next = 0;
    if (run_thread(t) == RUN_PREEMPTED) {
      uintr_leave(t);           // before another hart can take t
      // Kernel work of equal or better priority goes first (round robin among
      // equals), with t back in the run queue meanwhile, for any hart to take;
      // without any, hand t back and take the next thread in one step.
      if (exec_best_prio(&kexec) <= this_hart()->cur->prio) {
        thread_make_runnable(t);
        kco_yield();
      } else {
        next = runq_switch(t, this_hart()->cur->prio);
      }
    }
    if (!next)                  // (run_thread gives it next's priority at once)
      kco_reprio_self(SWITCHER_PRIO);
  }
}

void switcher_start(void) {
  for (uint32_t i = 0; i < nharts_online; i++)
    if (kco_spawn_stackful(switcher_main, 0, SWITCHER_PRIO, 0) < 0)
      kpanic("switcher: cannot spawn");
}
