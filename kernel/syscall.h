// System calls (numbers and errors: kernel/abi.h; reference: docs/ABI.md).
#ifndef SYSCALL_H
#define SYSCALL_H
#include "proc.h"

// What the switching coroutine must do after a system call.
enum syscall_outcome {
  SC_DONE,        // result is in a0: return to the process at once
  SC_ASYNC_STARTED, // the same, and a kernel coroutine now serves the async call
                  // (it need not run before the process does: see switcher.c)
  SC_BLOCKED,     // the thread waits: its call parked on a queue, or served by a kernel coroutine
  SC_YIELD,       // the process gave up the hart: requeue it behind the others
  SC_EXIT,        // the process called exit
  SC_THREAD_EXIT, // the thread called thread_exit
  SC_FAULT,       // the thread misused the kernel (a bad SYS_uintr_ret): kill the process
};

enum syscall_outcome syscall_dispatch(struct thread *t);
// t's call waits on a queue with no kernel coroutine (t->park.wq set), and t
// was woken: the switcher that takes t repeats it before returning to U-mode.
// SC_DONE or SC_BLOCKED.
enum syscall_outcome syscall_resume(struct thread *t);
// The trap's short way for calls that only read a value (kernel/uservec.S):
// 0 if answered, 1 if the switching coroutine must take the call.
int syscall_fast(struct thread *t);
int syscall_fast_async(struct thread *t);   // an async pipe read or write (uservec)
// self, a thread of a process whose other threads may sleep in uwait, has
// entered the kernel: if the process's executor has had ready coroutines for
// the kick delay, wake one of those sleepers to take a share (see sys_uwait).
// leaving: self is about to stop running user code (it blocks in the kernel
// or gives up its hart), so ready coroutines wake a sleeper without a delay.
void uwait_kick_siblings(struct thread *self, int leaving);
// The same, only when a thread of self's live process sleeps in uwait: the
// look every caller makes first, inline (one load on every kernel entry). (A
// plain load: the executor sets its bitmap bits with acquire-release AMOs,
// which keep this load after them; sys_uwait's side is sequentially
// consistent.)
static inline void uwait_kick_if_waiting(struct thread *self, int leaving) {
  struct proc *p = self->proc;
  if (__atomic_load_n(&p->uwaiters, __ATOMIC_RELAXED) && !p->killed)
    uwait_kick_siblings(self, leaving);
}
// The kick delay, in microseconds (bootargs kick_us=N; 0: kick at the first
// entry that sees ready coroutines).
void uwait_set_kick_delay_us(uint32_t us);
#endif
