// Kernel flavour of the executor lock (vdso/executor.c includes this header).
// Interrupts are masked while the lock is held, because interrupt handlers call
// exec_wake: without masking, a handler that interrupts exec_next on the same
// hart would spin forever. Inline, because this sits on every dispatch.
#ifndef EXEC_ARCH_H
#define EXEC_ARCH_H
#include <stdint.h>

// The state is sstatus as it was, whole: setting its bits again restores SIE
// without a branch, and without isolating SIE first (an and on every
// dispatch). That sets the other bits that were set too, which is harmless
// because the executor's critical sections change no bit of sstatus but SIE
// (no FP state, no sret, no SUM toggling in there), so they are set still.
typedef unsigned long exec_irqstate_t;

static inline exec_irqstate_t exec_lock_acquire(volatile uint64_t *l) {
  unsigned long s;
  __asm__ volatile("csrrci %0, sstatus, 2" : "=r"(s) :: "memory");   // clear SIE, keep old
  while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(l, __ATOMIC_RELAXED))
      ;
  return s;
}

static inline void exec_lock_release(volatile uint64_t *l, exec_irqstate_t s) {
  __asm__ volatile("fence rw, w" ::: "memory");   // a release store without an AMO: see
  *l = 0;                                          // spin_unlock in kernel/spinlock.c
  __asm__ volatile("csrs sstatus, %0" :: "r"(s) : "memory");
}

// The dispatch and wake steps of an executor with one lane (executor.h). The
// kernel's executor has a lane per hart, and the benchmarks' executors are
// private to the hart that runs them, so one with one lane is only ever used
// by one hart: masking interrupts (so that a handler's wake cannot run in the
// middle) is all the exclusion it needs, and the lock word is not touched.
static inline exec_irqstate_t exec_lock1_acquire(volatile uint64_t *l) {
  (void)l;
  unsigned long s;
  __asm__ volatile("csrrci %0, sstatus, 2" : "=r"(s) :: "memory");
  return s;
}

static inline void exec_lock1_release(volatile uint64_t *l, exec_irqstate_t s) {
  (void)l;
  __asm__ volatile("csrs sstatus, %0" :: "r"(s) : "memory");
}

#endif
