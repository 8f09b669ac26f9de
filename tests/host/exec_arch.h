// Host flavour of the executor's lock: a test-and-set spinlock on GCC atomics.
// (The kernel's kernel/exec_arch.h also masks interrupts; user/exec_arch.h masks
// nothing, because the user-interrupt handler never takes the lock: see there.)
#ifndef EXEC_ARCH_H
#define EXEC_ARCH_H
#include <sched.h>
typedef int exec_irqstate_t;
static inline exec_irqstate_t exec_lock_acquire(volatile uint64_t *l) {
  while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
    sched_yield();
  return 0;
}
static inline void exec_lock_release(volatile uint64_t *l, exec_irqstate_t s) {
  (void)s;
  __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}
// An executor with one lane takes its lock like any other here: the stress
// test checks and wakes from one thread while another steps a one-lane
// executor (one thread steps it, as in every environment).
static inline exec_irqstate_t exec_lock1_acquire(volatile uint64_t *l) { return exec_lock_acquire(l); }
static inline void exec_lock1_release(volatile uint64_t *l, exec_irqstate_t s) { exec_lock_release(l, s); }
#endif
