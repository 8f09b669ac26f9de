// Wait queues: a list of coroutines (by cid) waiting for an event.
//
// To wait without losing a wakeup, register first, then test the condition, then
// block; KCO_WAIT_UNTIL does this for stackful coroutines. A stackless coroutine
// does the same with waitq_add + return CO_PENDING, and removes its waiter when it
// finds the condition true. Wakeups may be spurious: always re-test.
#ifndef WAITQ_H
#define WAITQ_H
#include "executor.h"
#include "spinlock.h"

struct waiter {
  struct waiter *next, *prev;
  cid_t cid;
  int linked;
  // If set, a wake calls this (after unlinking, with the queue's lock held,
  // possibly from an interrupt) instead of waking cid: a coroutine that waits
  // on many queues at once learns which one fired (syswork.c's poller).
  void (*notify)(struct waiter *w);
};

struct waitq {
  struct spinlock lock;
  struct waiter *head, *tail;
};

void waitq_init(struct waitq *q, const char *name);
void waitq_add(struct waitq *q, struct waiter *w, cid_t cid);   // no-op if already linked
void waitq_remove(struct waitq *q, struct waiter *w);           // no-op if not linked
int waitq_wake_one_locked_look(struct waitq *q);                // (the part under the lock)
int waitq_wake_all_locked_look(struct waitq *q);

// Wakers look at the queue without its lock when it is empty (the common case:
// a pipe or socket that nobody waits on; see waitq.c for why that is safe).
// Inline, so that look costs a fence, a load and a branch.
static inline int waitq_empty_for_waker(struct waitq *q) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);   // the caller's change before this look
  return __atomic_load_n(&q->head, __ATOMIC_RELAXED) == 0;
}
// Returns 1 if one was woken.
static inline int waitq_wake_one(struct waitq *q) {
  return waitq_empty_for_waker(q) ? 0 : waitq_wake_one_locked_look(q);
}
// Returns how many were woken.
static inline int waitq_wake_all(struct waitq *q) {
  return waitq_empty_for_waker(q) ? 0 : waitq_wake_all_locked_look(q);
}

#define KCO_WAIT_UNTIL(q, cond)                     \
  do {                                              \
    struct waiter w_ = { 0 };                       \
    for (;;) {                                      \
      waitq_add((q), &w_, kco_current());           \
      if (cond)                                     \
        break;                                      \
      kco_block();                                  \
    }                                               \
    waitq_remove((q), &w_);                         \
  } while (0)

#endif
