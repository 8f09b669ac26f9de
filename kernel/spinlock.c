// Spinlocks that mask interrupts on the holding hart (nesting, as in xv6), so an
// interrupt handler never spins on a lock held by the code it interrupted.
#include "spinlock.h"
#include "hart.h"
#include "riscv.h"
#include "printf.h"

// The checks below catch misuse (a lock taken twice, released by a hart that
// does not hold it, unbalanced masking); their reports live out of line so the
// common path stays short (no stack frame).
static __attribute__((noinline, cold, noreturn)) void misuse(const char *what, struct spinlock *lk) {
  kpanic("spinlock %s: %s", lk && lk->name ? lk->name : "-", what);
}

static void push_off(struct hart *h) {
  uint64_t old;
  __asm__ volatile("csrrc %0, sstatus, %1" : "=r"(old) : "r"(SSTATUS_SIE) : "memory");
  if (h->noff++ == 0)
    h->intena = (int)(old & SSTATUS_SIE);   // (nonzero if they were on: not normalised, one shift less)
}

void spin_init(struct spinlock *lk, const char *name) {
  lk->locked = 0;
  lk->holder = -1;
  lk->name = name;
}

void spin_lock(struct spinlock *lk) {
  struct hart *h = this_hart();
  push_off(h);
  if (lk->locked && lk->holder == (int)h->index)
    misuse("already held by this hart", lk);
  while (__atomic_exchange_n(&lk->locked, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(&lk->locked, __ATOMIC_RELAXED))
      ;
  lk->holder = (int)h->index;
}

// The checks of spin_unlock and pop_off, out of line and cold: with them
// inline, spin_unlock needed a stack frame on every release.
static __attribute__((noinline, cold, noreturn)) void bad_release(struct spinlock *lk, struct hart *h) {
  if (!lk->locked || lk->holder != (int)h->index)
    misuse("released by a hart that does not hold it", lk);
  if (intr_get())
    misuse("interrupts enabled while held", 0);
  misuse("unbalanced release", 0);
}

void spin_unlock(struct spinlock *lk) {
  struct hart *h = this_hart();
  // (noff read once: nothing else on this hart runs while interrupts are
  // masked, and after the release's fence GCC would load it again)
  int noff = h->noff;
  if (__builtin_expect(!lk->locked || lk->holder != (int)h->index || intr_get() || noff <= 0, 0))
    bad_release(lk, h);
  lk->holder = -1;
  __atomic_store_n(&lk->locked, 0, __ATOMIC_RELEASE);
  h->noff = --noff;
  if (noff == 0 && h->intena)
    intr_on();
}

int spin_holding(struct spinlock *lk) {
  return lk->locked && lk->holder == (int)this_hart()->index;
}
