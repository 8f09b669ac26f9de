// User flavour of the executor lock (vdso/executor.c, as built into the vDSO and
// into user programs): a plain spinlock, with nothing to mask. The user-interrupt
// handler never spins on it: the runtime takes it only inside a critical section
// (the counter in user/cops.c) or its loop's step, and a handler that interrupts
// either only marks the ring drain as due, which the interrupted code does when
// it leaves.
#ifndef EXEC_ARCH_H
#define EXEC_ARCH_H
#include <stdint.h>

typedef int exec_irqstate_t;

static inline exec_irqstate_t exec_lock_acquire(volatile uint64_t *l) {
  while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(l, __ATOMIC_RELAXED))
      ;
  return 0;
}

static inline void exec_lock_release(volatile uint64_t *l, exec_irqstate_t s) {
  (void)s;
  __asm__ volatile("fence rw, w" ::: "memory");   // a release store without an AMO: see
  *l = 0;                                          // spin_unlock in kernel/spinlock.c
}

// The dispatch and wake steps of an executor with one lane (executor.h). The
// runtime (user/cops.c) has one lane only while main's thread is its only
// executor thread: cops_alloc_cpu adds a lane before it starts another, and
// threads that are not executor threads cannot call the runtime (they have no
// runtime state: their tp is 0). The user-interrupt handler, on the same
// thread, stays out of the executor by the critical-section counter and
// during run_loop's step (the thread's running coroutine is NULL then). So there
// is nothing to exclude: no lock word, no atomic.
static inline exec_irqstate_t exec_lock1_acquire(volatile uint64_t *l) {
  (void)l;
  __asm__ volatile("" ::: "memory");
  return 0;
}

static inline void exec_lock1_release(volatile uint64_t *l, exec_irqstate_t s) {
  (void)l;
  (void)s;
  __asm__ volatile("" ::: "memory");
}

#endif
