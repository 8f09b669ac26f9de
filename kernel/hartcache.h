// A few freed objects of one kind, kept per hart for reuse: a small cache in
// front of an allocator whose round trip is costly (kmalloc and kfree, or
// palloc's search for contiguous pages, under global locks).
//
// Each hart has HARTCACHE_SLOTS slots of its own. A slot is claimed with one
// atomic exchange and filled with one compare-and-swap, so no lock is taken:
// a coroutine that moves to another hart in between, or a drain from another
// hart, only meets a slot that is taken or free as a whole. Users drain
// every hart's cache before memory is counted, so that what a cache holds
// never looks like a leak. Used by sched.c (stackful coroutines' records with
// their stacks); syswork.c's worker records use the same mechanism, written
// out there (it says why).
#ifndef HARTCACHE_H
#define HARTCACHE_H
#include "hart.h"

#define HARTCACHE_SLOTS 4
struct hartcache {
  void *slot[HARTCACHE_SLOTS];   // atomic; 0: empty
} __attribute__((aligned(64)));  // (a cache line per hart)
_Static_assert(HARTCACHE_SLOTS == 4, "the unroll pragmas below name it");

// An object from this hart's cache (c: one per hart), or 0. Inline, and
// unrolled (no loop bound to form nor counter to keep).
static inline __attribute__((always_inline)) void *hartcache_take(struct hartcache *c) {
  c += this_hart()->index;
#pragma GCC unroll 4
  for (int i = 0; i < HARTCACHE_SLOTS; i++) {
    void *p = __atomic_load_n(&c->slot[i], __ATOMIC_RELAXED);
    if (p && (p = __atomic_exchange_n(&c->slot[i], 0, __ATOMIC_ACQUIRE)))
      return p;
  }
  return 0;
}

// Keep p in this hart's cache: 1, or 0 if every slot is full (the caller
// frees it).
static inline __attribute__((always_inline)) int hartcache_put(struct hartcache *c, void *p) {
  c += this_hart()->index;
#pragma GCC unroll 4
  for (int i = 0; i < HARTCACHE_SLOTS; i++) {
    void *none = 0;
    if (!__atomic_load_n(&c->slot[i], __ATOMIC_RELAXED) &&
        __atomic_compare_exchange_n(&c->slot[i], &none, p, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
      return 1;
  }
  return 0;
}

// Empty every hart's cache (c: BOARD_MAX_HARTS of them), giving each object
// to release.
static inline void hartcache_drain(struct hartcache *c, void (*release)(void *)) {
  for (uint32_t i = 0; i < BOARD_MAX_HARTS; i++)
    for (int j = 0; j < HARTCACHE_SLOTS; j++) {
      void *p = __atomic_exchange_n(&c[i].slot[j], 0, __ATOMIC_ACQUIRE);
      if (p)
        release(p);
    }
}

#endif
