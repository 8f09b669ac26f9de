// Kernel flavour of the executor lock (vdso/executor.c includes this header).
// Interrupts are masked while the lock is held, because interrupt handlers call
// exec_wake: without masking, a handler that interrupts exec_next on the same
// hart would spin forever. Inline, because this sits on every dispatch.
#ifndef EXEC_ARCH_H
#define EXEC_ARCH_H
#include <stdint.h>

typedef unsigned long exec_irqstate_t;

static inline exec_irqstate_t exec_lock_acquire(volatile uint64_t *l) {
  unsigned long s;
  __asm__ volatile("csrrci %0, sstatus, 2" : "=r"(s) :: "memory");   // clear SIE, keep old
  while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(l, __ATOMIC_RELAXED))
      ;
  return s & 2;
}

static inline void exec_lock_release(volatile uint64_t *l, exec_irqstate_t s) {
  __atomic_store_n(l, 0, __ATOMIC_RELEASE);
  if (s)
    __asm__ volatile("csrsi sstatus, 2" ::: "memory");
}

#endif
