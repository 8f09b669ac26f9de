// The CES mutex (see ces.h): an MCS-style queue of requests whose head is the
// holder. No data of its own (it is part of the shared, read-only vDSO image).
//
// Publication (lock-free, no shared word to spin on): a caller fills a node and
// swaps it into m->tail. If the old tail was NULL the lock was free and the
// caller holds it now; otherwise it links itself behind the old tail
// (prev->next = n) and blocks on its own node. Each node is written by exactly
// two parties, its owner and the one holder that reaches it, so waiters never
// share a cache line.
//
// Combining: the holder runs its section, then walks the queue: for each next
// node it runs that node's section and hands the node over as DONE, waking
// its coroutine with env->wake_elsewhere. The walk stops when
//   - the queue is empty: the holder swings m->tail from its last node back to
//     NULL and the lock is free;
//   - the next node is a lock-form node, or this turn has run m->batch
//     sections: the holder hands that node over as OWNER (waking it with
//     env->wake) and returns to its own continuation. The new owner runs its
//     section and goes on combining.
//     With m->spinners (ces.h, "Spinning callers") the batch limit hands
//     over only to a waiter still awake, by a compare-and-swap from WAITING
//     (no wake needed); a sleeping one's section is run for it, and the walk
//     goes on to the next node.
// Order and fairness: sections run in exactly the order the nodes were swapped
// into m->tail, the linearization point of a request. Nothing overtakes; the
// batch rule only decides which coroutine runs them. A combiner's own
// continuation waits for at most batch - 1 sections of others.
//
// Waiting: a queued caller may poll its node m->spin times (0 by default:
// CES's point is that the waiter's hart does other work), then moves its
// state from WAITING to SLEEPING with a compare-and-swap and blocks. The
// holder hands over with an atomic exchange of the state and wakes the
// coroutine only if the old state was SLEEPING. Both are read-modify-writes
// of one word, so one of them sees the other: a wake cannot be lost, and a
// caller that has not gone to sleep gets none (no stray wake ends a later,
// unrelated wait early). A woken caller re-checks its state anyway.
//
// Memory ordering:
//   - the swap into m->tail is acq_rel: release publishes the node's fields to
//     whoever finds it through tail, acquire makes the previous holder's
//     section visible to a caller that found the lock free;
//   - prev->next = n is a release store, read with acquire by the holder, so
//     the holder sees fn, arg and cid;
//   - the hand-over exchange and the caller's compare-and-swap are acq_rel:
//     the caller sees everything its section (run elsewhere) and the sections
//     before it wrote. The holder reads the node's cid before the exchange,
//     because from then on the caller may return and its node (on its stack)
//     is gone;
//   - freeing the lock is a release compare-and-swap of m->tail.
//
// One short spin remains, as in MCS: a caller that has swapped itself into
// m->tail but not yet linked itself (two instructions later) is invisible to a
// holder that wants to free the lock; the holder waits for the link, calling
// env->relax between polls (user space yields the hart there, in case that
// caller's thread was preempted in between).
#include "ces.h"

void ces_init(struct ces_mutex *m, const struct ces_env *env, uint32_t batch) {
  m->tail = 0;
  m->env = env;
  m->batch = batch ? batch : CES_BATCH_DEFAULT;
  m->spin = 0;
  m->spinners = 0;
  m->sections = m->combined = m->handoffs = m->queued = 0;
}

void ces_init_spinning(struct ces_mutex *m, const struct ces_env *env, uint32_t batch) {
  ces_init(m, env, batch);
  m->spinners = 1;
}

// Queue n. Returns 1 if the lock was free: then n holds it.
static int enqueue(struct ces_mutex *m, struct ces_node *n) {
  n->next = 0;
  n->state = CES_WAITING;
  struct ces_node *prev = __atomic_exchange_n(&m->tail, n, __ATOMIC_ACQ_REL);
  if (!prev)
    return 1;
  __atomic_store_n(&prev->next, n, __ATOMIC_RELEASE);
  __atomic_fetch_add(&m->queued, 1, __ATOMIC_RELAXED);
  return 0;
}

// The holder's side of a hand-over: publish `to` (DONE or OWNER) in n and
// wake n's coroutine if it has gone to sleep. One atomic exchange against
// the waiter's compare-and-swap to SLEEPING (in ces_poll), so exactly one
// of them sees the other: no lost and no needless wake. n may be gone as
// soon as the exchange is done, so its cid is read first.
static void hand_over(struct ces_mutex *m, struct ces_node *n, uint32_t to) {
  cid_t cid = n->cid;
  if (__atomic_exchange_n(&n->state, to, __ATOMIC_ACQ_REL) == CES_SLEEPING) {
    if (to == CES_DONE)
      m->env->wake_elsewhere(cid);
    else
      m->env->wake(cid);
  }
}

// Spin on our own node for up to m->spin polls, while it waits.
static void spin_a_while(struct ces_mutex *m, struct ces_node *n) {
  for (uint32_t i = 0; i < m->spin; i++)
    if (__atomic_load_n(&n->state, __ATOMIC_ACQUIRE) != CES_WAITING)
      return;
}

// The node queued after cur, or NULL once the lock has been freed (cur was last).
static struct ces_node *successor(struct ces_mutex *m, struct ces_node *cur) {
  struct ces_node *next = __atomic_load_n(&cur->next, __ATOMIC_ACQUIRE);
  if (next)
    return next;
  struct ces_node *expect = cur;
  if (__atomic_compare_exchange_n(&m->tail, &expect, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
    return 0;
  // Someone swapped in behind cur and is about to link itself.
  for (uint32_t spins = 0; !(next = __atomic_load_n(&cur->next, __ATOMIC_ACQUIRE)); spins++)
    m->env->relax(spins);
  return next;
}

// The holder's turn: `self` (its own node) has run its section; run what is
// queued behind it (ran = sections run in this turn so far), then free the lock
// or hand it on.
static void combine(struct ces_mutex *m, struct ces_node *self, uint32_t ran) {
  struct ces_node *cur = self;
  for (;;) {
    struct ces_node *next = successor(m, cur);
    if (cur != self)                      // finish a request we ran for its owner
      hand_over(m, cur, CES_DONE);
    if (!next)
      return;                             // the lock is free
    if (!next->fn || ran >= m->batch) {   // hand the lock (and the queue) on
      if (!m->spinners || !next->fn) {
        m->handoffs++;
        hand_over(m, next, CES_OWNER);
        return;
      }
      // Spinners about: only to a waiter that is awake (see ces.h). If it
      // went to sleep, its compare-and-swap came first: run its section.
      uint32_t s = CES_WAITING;
      if (__atomic_compare_exchange_n(&next->state, &s, CES_OWNER, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE)) {
        m->handoffs++;
        return;
      }
    }
    next->fn(next->arg);
    m->sections++;
    m->combined++;
    ran++;
    cur = next;
  }
}

// Queue a request; if the lock was free, run it and combine. 1: it has run.
static int submit(struct ces_mutex *m, struct ces_node *n, void (*fn)(void *), void *arg) {
  n->fn = fn;
  n->arg = arg;
  n->cid = m->env->current();
  if (!enqueue(m, n))
    return 0;
  fn(arg);
  m->sections++;
  combine(m, n, 1);
  return 1;
}

int ces_poll(struct ces_mutex *m, struct ces_node *n) {
  // Announce that we are going to sleep, unless a hand-over came first.
  uint32_t s = CES_WAITING;
  if (__atomic_compare_exchange_n(&n->state, &s, CES_SLEEPING, 0, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE) || s == CES_SLEEPING)
    return 0;                             // block; the hand-over wakes us
  if (s == CES_OWNER && n->fn) {          // handed the lock at a combiner's batch
    n->fn(n->arg);                        // limit: run our own section and
    m->sections++;                        // combine on
    combine(m, n, 1);
    n->state = CES_DONE;                  // no one else sees n now; a second poll
  }                                       // must not run fn again
  return 1;                               // (DONE: a combiner ran it for us)
}

int ces_submit(struct ces_mutex *m, struct ces_node *n, void (*fn)(void *), void *arg) {
  return submit(m, n, fn, arg) || ces_poll(m, n);
}

void ces_run(struct ces_mutex *m, void (*fn)(void *), void *arg) {
  struct ces_node n;
  if (submit(m, &n, fn, arg))
    return;
  spin_a_while(m, &n);
  while (!ces_poll(m, &n))
    m->env->block();
}

void ces_lock(struct ces_mutex *m, struct ces_node *n) {
  n->fn = 0;
  n->arg = 0;
  n->cid = m->env->current();
  if (enqueue(m, n))
    return;
  spin_a_while(m, n);
  while (!ces_poll(m, n))                 // a lock-form node is only ever made OWNER
    m->env->block();
}

// Combining without the exchange (ces.h, "Spinning callers"): wait on our own
// node, awake, for a combiner to run our section or to hand us the lock.
static uint32_t spin_until_served(struct ces_mutex *m, struct ces_node *n) {
  uint32_t s;
  for (uint32_t spins = 0; (s = __atomic_load_n(&n->state, __ATOMIC_ACQUIRE)) == CES_WAITING;
       spins++)
    m->env->relax(spins);
  return s;
}

void ces_run_spin(struct ces_mutex *m, void (*fn)(void *), void *arg) {
  struct ces_node n;
  if (submit(m, &n, fn, arg))
    return;
  if (spin_until_served(m, &n) == CES_OWNER) {   // at a combiner's batch limit
    fn(arg);
    m->sections++;
    combine(m, &n, 1);
  }
}

int ces_try_run(struct ces_mutex *m, void (*fn)(void *), void *arg) {
  // A glance first: a held lock's tail line is being written by others, and
  // a failed compare-and-swap would claim it for nothing.
  if (__atomic_load_n(&m->tail, __ATOMIC_RELAXED))
    return 0;
  struct ces_node n;
  n.fn = fn;
  n.arg = arg;
  n.cid = m->env->current();
  n.next = 0;
  n.state = CES_WAITING;
  // Only from free to n (enqueue's exchange would queue n behind a holder).
  // acq_rel, as that exchange: acquire for the last holder's sections,
  // release for n's fields.
  struct ces_node *none = 0;
  if (!__atomic_compare_exchange_n(&m->tail, &none, &n, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    return 0;
  fn(arg);
  m->sections++;
  combine(m, &n, 1);
  return 1;
}

void ces_lock_spin(struct ces_mutex *m, struct ces_node *n) {
  n->fn = 0;
  n->arg = 0;
  n->cid = m->env->current();
  if (!enqueue(m, n))
    spin_until_served(m, n);              // a lock-form node is only ever made OWNER
}

void ces_unlock(struct ces_mutex *m, struct ces_node *n) {
  m->sections++;
  combine(m, n, 1);
}
