// Spinlocks that mask interrupts on the holding hart (nesting, as in xv6), so an
// interrupt handler never spins on a lock held by the code it interrupted.
#include "spinlock.h"
#include "hart.h"
#include "riscv.h"
#include "printf.h"

static void push_off(void) {
  int old = intr_get();
  intr_off();
  struct hart *h = this_hart();
  if (h->noff == 0)
    h->intena = old;
  h->noff++;
}

static void pop_off(void) {
  struct hart *h = this_hart();
  if (intr_get())
    kpanic("pop_off: interrupts enabled");
  if (h->noff < 1)
    kpanic("pop_off: unbalanced");
  h->noff--;
  if (h->noff == 0 && h->intena)
    intr_on();
}

void spin_init(struct spinlock *lk, const char *name) {
  lk->locked = 0;
  lk->holder = -1;
  lk->name = name;
}

void spin_lock(struct spinlock *lk) {
  push_off();
  if (spin_holding(lk))
    kpanic("spin_lock: %s already held by this hart", lk->name);
  while (__atomic_exchange_n(&lk->locked, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(&lk->locked, __ATOMIC_RELAXED))
      ;
  lk->holder = (int)this_hart()->index;
}

void spin_unlock(struct spinlock *lk) {
  if (!spin_holding(lk))
    kpanic("spin_unlock: %s not held by this hart", lk->name);
  lk->holder = -1;
  __atomic_store_n(&lk->locked, 0, __ATOMIC_RELEASE);
  pop_off();
}

int spin_holding(struct spinlock *lk) {
  return lk->locked && lk->holder == (int)this_hart()->index;
}
