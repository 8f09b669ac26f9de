// Spinlocks. In the kernel, holding a spinlock also masks interrupts on this hart
// (nesting like xv6's push_off/pop_off) so an interrupt handler that wakes a
// coroutine can never spin on a lock its own hart already holds.
// The host unit tests link tests/host/spinlock_host.c instead of kernel/spinlock.c.
#ifndef SPINLOCK_H
#define SPINLOCK_H
#include <stdint.h>

struct spinlock {
  volatile uint32_t locked;
  int holder;              // hart index of the holder, -1 when free (debugging)
  const char *name;
};

#define SPINLOCK_INIT(n) { 0, -1, (n) }
void spin_init(struct spinlock *lk, const char *name);
void spin_lock(struct spinlock *lk);
void spin_unlock(struct spinlock *lk);
int spin_holding(struct spinlock *lk);
// The index of the hart the caller runs on (host tests: of its thread), for
// per-hart data that a lock of its own guards: a kernel coroutine may move to
// another hart right after, so the answer only says where to look first.
unsigned spin_this_cpu(void);
// How often a lock named `name` (the very pointer given at init) was found
// held and waited for, since boot (the console's `locks` shows them all).
uint64_t spin_waits(const char *name);

#endif
