// Host stand-in for kernel/spinlock.c: the same interface on top of GCC atomics,
// so portable kernel files can be unit-tested with threads under ASan/UBSan.
#include "spinlock.h"
#include <sched.h>

void spin_init(struct spinlock *lk, const char *name) { lk->locked = 0; lk->holder = -1; lk->name = name; }
void spin_lock(struct spinlock *lk) {
  while (__atomic_exchange_n(&lk->locked, 1, __ATOMIC_ACQUIRE)) sched_yield();
  lk->holder = 0;
}
void spin_unlock(struct spinlock *lk) { lk->holder = -1; __atomic_store_n(&lk->locked, 0, __ATOMIC_RELEASE); }
int spin_holding(struct spinlock *lk) { return __atomic_load_n(&lk->locked, __ATOMIC_RELAXED) != 0; }
// Threads take indices in the order they first ask, as harts have theirs.
unsigned spin_this_cpu(void) {
  static unsigned next;
  static __thread unsigned mine;      // index + 1; 0: not asked yet
  if (!mine)
    mine = __atomic_add_fetch(&next, 1, __ATOMIC_RELAXED);
  return mine - 1;
}
