// The COPS executor (see executor.h for the model). One source, linked by the
// kernel, built into the vDSO for user processes, and unit-tested on the host.
//
// Everything here is O(1) except the slot table growth (amortised: one chunk of
// EXEC_CHUNK_SLOTS control blocks at a time) and exec_check (a debugging walk).
#include "executor.h"
#include "exec_arch.h"   // exec_lock_acquire / exec_lock_release for this environment

const uint8_t exec_ctz8[256] = {
  0, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
  4, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
  5, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
  4, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
  6, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
  4, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
  5, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
  4, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
  7, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
  4, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
  5, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
  4, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
  6, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
  4, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
  5, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
  4, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0,
};

#define EXEC_LANE_FREE_MAX 64   // a lane's cache of free slots (see free_slot)

#define LOCKED(lockp) exec_irqstate_t irq_ = exec_lock_acquire(lockp)
#define UNLOCK(lockp) exec_lock_release(lockp, irq_)

static inline struct exec_lane *lane_at(const struct executor *ex, uint32_t i) {
  return (struct exec_lane *)(ex->lanes + ((size_t)i << ex->lane_shift));
}

int exec_init_lanes(struct executor *ex, uint32_t nprio, uint32_t nlanes,
                    void *(*alloc)(size_t), void (*free)(void *)) {
  if (nprio == 0 || nprio > NPRIO_MAX || nlanes == 0 || nlanes > EXEC_MAX_LANES || !alloc || !free)
    return EXEC_EINVAL;
  // Field by field rather than memset: this file must not depend on a libc.
  ex->lock = 0;
  ex->nprio = nprio;
  ex->nlanes = nlanes;
  ex->multi = nlanes > 1;
  ex->reserved = 0;
  ex->bitmap = 0;
  uint32_t shift = 5;
  while ((1u << shift) < sizeof(struct exec_lane) + nprio * sizeof(struct co_queue))
    shift++;
  ex->lane_shift = shift;
  // Room for every lane there may ever be, so exec_set_lanes can add some
  // later without moving the ones in use.
  ex->lanes = alloc((size_t)EXEC_MAX_LANES << shift);
  if (!ex->lanes)
    return EXEC_ENOMEM;
  for (uint32_t i = 0; i < EXEC_MAX_LANES; i++) {
    struct exec_lane *l = lane_at(ex, i);
    *l = (struct exec_lane){0};
    for (uint32_t p = 0; p < nprio; p++)
      l->ready[p].tail = 0;
  }
  for (uint32_t i = 0; i < EXEC_MAX_CHUNKS; i++)
    ex->chunks[i] = 0;
  ex->nchunks = 0;
  ex->free_list = 0;
  ex->st = (struct exec_stats){0};
  ex->stale_wakes = 0;
  ex->alloc = alloc;
  ex->free = free;
  return 0;
}

int exec_init(struct executor *ex, uint32_t nprio, void *(*alloc)(size_t), void (*free)(void *)) {
  return exec_init_lanes(ex, nprio, 1, alloc, free);
}

static void drop_resident(struct executor *ex, struct exec_lane *l);

int exec_set_lanes(struct executor *ex, uint32_t nlanes) {
  if (nlanes > EXEC_MAX_LANES)
    return EXEC_EINVAL;
  // Only ever grows, and sequentially consistent: a lane that clears a union
  // bit reads nlanes after its and (union_clear), so it either scans the new
  // lane or ran before anything could be queued there.
  // Under lane 0's lock: with one lane the union is kept without atomics by
  // whoever holds that lock (union_set), so the switch to the shared protocol
  // must not fall in the middle of such an update. (The one-lane steps take
  // exec_lock1_*, which may not touch the lock word: an environment that makes
  // it so has one thread using a one-lane executor, and that is the caller.)
  struct exec_lane *l0 = lane_at(ex, 0);
  LOCKED(&l0->lock);
  uint32_t n = __atomic_load_n(&ex->nlanes, __ATOMIC_RELAXED);
  while (n < nlanes && !__atomic_compare_exchange_n(&ex->nlanes, &n, nlanes, 0, __ATOMIC_SEQ_CST,
                                                    __ATOMIC_RELAXED))
    ;
  if (nlanes > 1) {
    // The several-lane steps know no residents (a steal's pop would take
    // one for a ready coroutine): lane 0's, if it has one, is unlinked.
    drop_resident(ex, l0);
    __atomic_store_n(&ex->multi, 1, __ATOMIC_SEQ_CST);
  }
  UNLOCK(&l0->lock);
  return 0;
}

void exec_destroy(struct executor *ex) {
  for (uint32_t i = 0; i < ex->nchunks; i++)
    ex->free(ex->chunks[i]);
  ex->nchunks = 0;
  ex->free_list = 0;
  ex->st.slots = 0;
  if (ex->lanes)
    ex->free(ex->lanes);
  ex->lanes = 0;
}

cid_t co_cid(const struct co *c) { return co_cid_inline(c); }

// ---- the union bitmap ----
// A lane sets its bit p in the union when its queue p becomes non-empty, and
// clears it when the queue empties -- unless another lane has p: the clearing
// lane clears the union's bit and then looks at the other lanes, and puts the
// bit back if one has it. Every access here is sequentially consistent, so of
// a lane that sets (own bit, then union) and one that clears (own bit, union,
// then the others) at least one sees the other: the union never lacks a bit a
// lane has. It may briefly have one no lane has (a clear and a put-back
// crossing); exec_next_on repairs that when a steal finds nothing.

// With one lane the union is a copy of the lane's bitmap, which the kernel
// reads without a lock. A volatile store: one aligned doubleword store is
// single-copy atomic, and GCC 12 turns a relaxed __atomic_store_n into an
// amoswap (and an address computation, as AMOs take no offset).
static inline __attribute__((always_inline)) void union_copy(struct executor *ex, uint64_t b) {
  *(volatile uint64_t *)&ex->bitmap = b;
}

// one: the caller knows the executor has one lane (then no load, no branch).
static inline __attribute__((always_inline)) void union_set(struct executor *ex,
                                                            struct exec_lane *l, uint64_t bit,
                                                            int one) {
  if (one || ex->nlanes == 1) {
    // One lane (every user process with one executor thread, a kernel on one
    // hart): every writer holds its lock, so the union is simply a copy.
    l->bitmap |= bit;
    union_copy(ex, l->bitmap);
    return;
  }
  __atomic_store_n(&l->bitmap, l->bitmap | bit, __ATOMIC_SEQ_CST);
  // Unconditionally: skipping the or when the union seems to have the bit
  // would let a clearer's and slip in between.
  __atomic_fetch_or(&ex->bitmap, bit, __ATOMIC_SEQ_CST);
}

// Clear bit in the union unless some lane (other than the caller's, whose own
// bit is already clear) has it.
static int any_lane_has(struct executor *ex, uint64_t bit, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (__atomic_load_n(&lane_at(ex, i)->bitmap, __ATOMIC_SEQ_CST) & bit)
      return 1;
  return 0;
}

static void union_clear(struct executor *ex, uint64_t bit) {
  // Look first: when another lane has the bit (the common case with work on
  // several harts), leave the union alone, so that it does not lack the bit
  // even for a moment. Only a clear that races with a set of the same bit
  // elsewhere opens that moment (between the and and the put-back below).
  uint32_t n = __atomic_load_n(&ex->nlanes, __ATOMIC_SEQ_CST);
  if (any_lane_has(ex, bit, n))
    return;
  __atomic_fetch_and(&ex->bitmap, ~bit, __ATOMIC_SEQ_CST);
  n = __atomic_load_n(&ex->nlanes, __ATOMIC_SEQ_CST);
  for (uint32_t i = 0; i < n; i++)
    if (__atomic_load_n(&lane_at(ex, i)->bitmap, __ATOMIC_SEQ_CST) & bit) {
      __atomic_fetch_or(&ex->bitmap, bit, __ATOMIC_SEQ_CST);
      return;
    }
}

static inline __attribute__((always_inline)) void lane_clear(struct executor *ex,
                                                             struct exec_lane *l, uint64_t bit,
                                                             int one) {
  if (one || ex->nlanes == 1) {
    l->bitmap &= ~bit;
    union_copy(ex, l->bitmap);
    return;
  }
  __atomic_store_n(&l->bitmap, l->bitmap & ~bit, __ATOMIC_SEQ_CST);
  union_clear(ex, bit);
}

// ---- ready rings (caller holds the lane's lock) ----
// The layout and the resident are described at struct co_queue (executor.h).
// l->best follows the lane's lowest bit: moved when a ring gets its first
// ready coroutine, and found again (the one ctz left) when the best ring
// loses its last.

static inline __attribute__((always_inline)) void find_best(struct exec_lane *l) {
  l->best = l->bitmap ? &l->ready[exec_ctz64(l->bitmap)] : 0;
}

// Link c (new, blocked, or running and not resident) as the last ready
// coroutine of its priority: after the tail, so before the resident if there
// is one (the tail's next). Sets c's state and clears its flags.
static inline __attribute__((always_inline)) void enqueue_in(struct executor *ex,
                                                             struct exec_lane *l, struct co *c,
                                                             int one) {
  struct co_queue *q = &l->ready[c->prio];
  struct co *t = q->tail;
  if (t) {
    c->next = t->next;
    c->prev = t;
    t->next = c;
  } else {
    c->next = c;
    if (!l->best || q < l->best)   // the rings lie in priority order
      l->best = q;
    union_set(ex, l, 1ULL << c->prio, one);
  }
  q->tail = c;
  exec_set_word(c, EXEC_READY_WORD);
}

// The ring q has lost its last ready coroutine, last (the caller has not yet
// cleared q->tail). A resident may not stay alone in it: unlink it too.
// (q's priority is last's: one load, where q's index in the lane is three
// instructions.)
static inline __attribute__((always_inline)) void ring_emptied(struct executor *ex,
                                                               struct exec_lane *l,
                                                               struct co_queue *q,
                                                               struct co *last,
                                                               struct co *resident, int one) {
  q->tail = 0;
  if (resident)
    resident->flags &= (uint8_t)~CO_RESIDENT;
  lane_clear(ex, l, 1ULL << last->prio, one);
  if (l->best == q)
    find_best(l);
}

// The lane's resident of q, or 0 (t is q's tail, non-zero).
static inline __attribute__((always_inline)) struct co *resident_of(struct co *t) {
  return (t->next->flags & CO_RESIDENT) ? t->next : 0;
}

// The resident c leaves its ring (it blocks, ends, or changes priority): it
// sits right after the tail, so the tail's next skips it. Its flags are the
// caller's to set.
static inline __attribute__((always_inline)) void unlink_resident(struct exec_lane *l,
                                                                  struct co *c) {
  l->ready[c->prio].tail->next = c->next;
}

// A ready coroutine leaves its ring (exec_reprio). O(1): its prev, or for
// the head the tail or the resident before it.
static void unlink_ready(struct executor *ex, struct exec_lane *l, struct co *c) {
  struct co_queue *q = &l->ready[c->prio];
  struct co *t = q->tail, *r = resident_of(t);
  struct co *before_head = r ? r : t, *head = before_head->next;
  if (c == head && c == t) {
    ring_emptied(ex, l, q, c, r, 0);
    return;
  }
  struct co *p = c == head ? before_head : c->prev;
  p->next = c->next;
  if (c == t)
    q->tail = p;             // (c is not the head: p is its prev)
  else
    c->next->prev = p;       // (a ready coroutine: the resident only follows the tail)
}

// Take the head of the lane's best ring (the lane is not empty, and has no
// resident: the loop that had one settled it first, or, with several
// lanes, there are none). It leaves the ring at once.
static inline __attribute__((always_inline)) struct co *pop_in(struct executor *ex,
                                                               struct exec_lane *l, int one) {
  struct co_queue *q = l->best;
  struct co *t = q->tail, *c = t->next;
  if (c == t)
    ring_emptied(ex, l, q, c, 0, one);
  else
    t->next = c->next;
  return c;
}

// Unlink the lane's resident, if it has one (it goes on running as any other).
static void drop_resident(struct executor *ex, struct exec_lane *l) {
  for (uint32_t p = 0; p < ex->nprio; p++) {
    struct co *t = l->ready[p].tail, *r = t ? resident_of(t) : 0;
    if (r) {
      unlink_resident(l, r);
      r->flags &= (uint8_t)~CO_RESIDENT;
    }
  }
}

// prev, running, is ready again (it yielded, or was woken while it ran): a
// resident becomes the tail where it is, any other is linked as one.
static inline __attribute__((always_inline)) void requeue(struct executor *ex,
                                                          struct exec_lane *l, struct co *prev,
                                                          int one) {
  if (prev->flags & CO_RESIDENT)
    exec_resident_ready(&l->ready[prev->prio], prev, EXEC_READY_WORD);
  else
    enqueue_in(ex, l, prev, one);
}

static inline __attribute__((always_inline)) void enqueue(struct executor *ex, struct exec_lane *l,
                                                          struct co *c) {
  enqueue_in(ex, l, c, 0);
}

static inline __attribute__((always_inline)) struct co *pop_highest(struct executor *ex,
                                                                    struct exec_lane *l) {
  return pop_in(ex, l, 0);
}

// ---- slot table ----

static struct co *slot_ptr(const struct executor *ex, uint32_t slot) {
  return &ex->chunks[slot / EXEC_CHUNK_SLOTS][slot % EXEC_CHUNK_SLOTS];
}

// Add one chunk of free slots. Called with the table lock held; the allocator
// takes its own lock, which is always taken after this one, never before. A
// chunk never moves, and nchunks is published after its pointer, so lookups
// read the table without a lock.
static int grow_table(struct executor *ex) {
  if (ex->nchunks == EXEC_MAX_CHUNKS)
    return EXEC_ENOMEM;
  struct co *chunk = ex->alloc(EXEC_CHUNK_SLOTS * sizeof(struct co));
  if (!chunk)
    return EXEC_ENOMEM;
  uint32_t base = ex->nchunks * EXEC_CHUNK_SLOTS;
  // Link the new slots so that the lowest index is handed out first.
  for (int i = EXEC_CHUNK_SLOTS - 1; i >= 0; i--) {
    struct co *c = &chunk[i];
    *c = (struct co){0};
    c->slot = base + (uint32_t)i;
    c->gen = 1;            // generation 0 is never used: cid 0 stays invalid
    c->state = CO_FREE;
    c->next = ex->free_list;
    ex->free_list = c;
  }
  ex->chunks[ex->nchunks] = chunk;
  __atomic_store_n(&ex->nchunks, ex->nchunks + 1, __ATOMIC_RELEASE);
  ex->st.slots += EXEC_CHUNK_SLOTS;
  return 0;
}

// Resolve a cid to its control block if it looks live, without a lock. The
// caller re-checks the generation under the coroutine's lane lock. Untrusted
// input is fine here: the slot is range-checked before indexing.
// (Is cid's slot index in range: all lookup_unlocked checks before it
// touches the slot.)
static inline __attribute__((always_inline)) int slot_exists(const struct executor *ex, cid_t cid) {
  return (uint32_t)cid < __atomic_load_n(&ex->nchunks, __ATOMIC_ACQUIRE) * EXEC_CHUNK_SLOTS;
}

static inline __attribute__((always_inline)) struct co *lookup_unlocked(const struct executor *ex,
                                                                       cid_t cid) {
  uint32_t gen = (uint32_t)(cid >> 32);
  if (!slot_exists(ex, cid))
    return 0;
  struct co *c = slot_ptr(ex, (uint32_t)cid);
  if (__atomic_load_n(&c->gen, __ATOMIC_RELAXED) != gen ||
      __atomic_load_n(&c->state, __ATOMIC_RELAXED) == CO_FREE)
    return 0;
  return c;
}

struct co *exec_lookup(struct executor *ex, cid_t cid) { return lookup_unlocked(ex, cid); }

// Lock the lane that c belongs to: its home, or lane 0 if its home is a lane
// folded away (exec_fold_lanes leaves a blocked coroutine's home as it was,
// so that it goes back there if the lane comes back before it wakes). A live
// coroutine changes lanes only while the lane it is in is locked (a steal, a
// wake), and the lane count only under lane 0's lock (exec_set_lanes) or
// every lock (exec_fold_lanes); so once the lane chosen from c's home before
// locking is still the one chosen after, it stays c's lane until we unlock.
// *at: that lane's index.
static struct exec_lane *lock_home(struct executor *ex, struct co *c, exec_irqstate_t *irq,
                                   uint32_t *at) {
  for (;;) {
    uint32_t i = __atomic_load_n(&c->lane, __ATOMIC_ACQUIRE);
    uint32_t in = i < __atomic_load_n(&ex->nlanes, __ATOMIC_ACQUIRE) ? i : 0;
    struct exec_lane *l = lane_at(ex, in);
    *irq = exec_lock_acquire(&l->lock);
    if (__atomic_load_n(&c->lane, __ATOMIC_RELAXED) == i &&
        (i < __atomic_load_n(&ex->nlanes, __ATOMIC_RELAXED) ? i : 0) == in) {
      *at = in;
      return l;
    }
    exec_lock_release(&l->lock, *irq);
  }
}

// ---- the COPS operations ----

// Refill an empty lane cache from the table's list (growing the table if it
// is empty too). Called with the lane's lock held.
static __attribute__((noinline)) int refill_free(struct executor *ex, struct exec_lane *l) {
  LOCKED(&ex->lock);
  int err = 0;
  if (!ex->free_list)
    err = grow_table(ex);
  while (!err && ex->free_list && l->nfree < EXEC_LANE_FREE_MAX / 2) {
    struct co *c = ex->free_list;
    ex->free_list = c->next;
    c->next = l->free;
    l->free = c;
    l->nfree++;
  }
  UNLOCK(&ex->lock);
  return err;
}

// The lane's cache is empty: fill it from the table (growing that if need be),
// then spawn again. Out of line, so that the common spawn needs no frame.
static __attribute__((noinline)) int64_t spawn_refilled(struct executor *ex, uint32_t lane,
                                                        co_poll_fn poll, void *arg, uint32_t prio,
                                                        enum co_kind kind) {
  struct exec_lane *l = lane_at(ex, lane);
  LOCKED(&l->lock);
  int err = l->free ? 0 : refill_free(ex, l);
  UNLOCK(&l->lock);
  if (err)
    return err;
  return exec_spawn_on(ex, lane, poll, arg, prio, kind);
}

int64_t exec_spawn_on(struct executor *ex, uint32_t lane, co_poll_fn poll, void *arg,
                      uint32_t prio, enum co_kind kind) {
  if (!poll || prio >= ex->nprio)
    return EXEC_EINVAL;
  uint32_t n = __atomic_load_n(&ex->nlanes, __ATOMIC_RELAXED);
  if (__builtin_expect(lane >= n, 0))
    lane %= n;
  struct exec_lane *l = lane_at(ex, lane);
  LOCKED(&l->lock);
  if (__builtin_expect(!l->free, 0)) {
    UNLOCK(&l->lock);
    return spawn_refilled(ex, lane, poll, arg, prio, kind);   // (a tail call)
  }
  struct co *c = l->free;
  l->free = c->next;
  l->nfree--;
  l->spawned++;
  c->poll = poll;
  c->arg = arg;
  c->kind = (uint8_t)kind;
  // A stale cid's waker may look at c->lane: it re-checks it under the lock
  // it takes, and then the generation, which moved on when the slot was freed.
  __atomic_store_n(&c->lane, lane, __ATOMIC_RELEASE);
  c->prio = (uint8_t)prio;      // (not beside kind's store: GCC would merge the two bytes with shifts)
  enqueue(ex, l, c);
  cid_t cid = co_cid_inline(c);
  UNLOCK(&l->lock);
  return (int64_t)cid;
}

int64_t exec_spawn(struct executor *ex, co_poll_fn poll, void *arg, uint32_t prio, enum co_kind kind) {
  return exec_spawn_on(ex, 0, poll, arg, prio, kind);
}

// The wake itself, with c's lane l (index at) locked: 1 queued, 0 absorbed,
// or stale. A blocked coroutine's home may be a folded lane (lock_home); it
// is queued in l, so l becomes its home. (A plain store: whoever acts on a
// home reads it again under the lock, whose release publishes this one; GCC
// makes a relaxed atomic store of a word an amoswap, which under QEMU's
// multi-threaded TCG costs several plain instructions.)
static inline __attribute__((always_inline)) int wake_locked(struct executor *ex,
                                                             struct exec_lane *l, uint32_t at,
                                                             struct co *c, cid_t cid, int one) {
  if (c->gen != (uint32_t)(cid >> 32) || c->state == CO_FREE)
    return EXEC_ESTALE;            // it exited between the lookup and the lock
  if (c->state == CO_BLOCKED) {
    c->lane = at;
    enqueue_in(ex, l, c, one);
    l->wakes++;
    return 1;
  }
  // Running (or trapped while running): it may be about to return PENDING, so
  // remember the wake. Already ready: it will be polled anyway.
  if (c->state != CO_READY) {
    c->flags |= CO_WAKE_PENDING;
    l->wakes_remembered++;
  }
  return 0;
}

static __attribute__((noinline)) int stale_wake(struct executor *ex) {
  __atomic_fetch_add(&ex->stale_wakes, 1, __ATOMIC_RELAXED);
  return EXEC_ESTALE;
}

// Several lanes: find and lock the coroutine's home first.
static __attribute__((noinline)) int wake_multi(struct executor *ex, cid_t cid, uint32_t *lane) {
  struct co *c = lookup_unlocked(ex, cid);
  if (!c)
    return stale_wake(ex);
  exec_irqstate_t irq;
  uint32_t at;
  struct exec_lane *l = lock_home(ex, c, &irq, &at);
  int r = wake_locked(ex, l, at, c, cid, 0);
  if (lane)
    *lane = c->lane;
  exec_lock_release(&l->lock, irq);
  return r == EXEC_ESTALE ? stale_wake(ex) : r;
}

// (inline: exec_wake, with no lane to report, is the common caller)
static inline __attribute__((always_inline)) int wake_lane(struct executor *ex, cid_t cid,
                                                          uint32_t *lane) {
  if (__atomic_load_n(&ex->multi, __ATOMIC_RELAXED))
    return wake_multi(ex, cid, lane);
  // One lane (see exec_next_on): every coroutine's home, no atomics for the
  // union, and no call but tail calls. Only the slot's index is checked
  // here: its generation and state are looked at once, by wake_locked (a
  // second look before the lock cost every wake five instructions).
  if (!slot_exists(ex, cid))
    return stale_wake(ex);
  struct co *c = slot_ptr(ex, (uint32_t)cid);
  struct exec_lane *l = (struct exec_lane *)ex->lanes;
  exec_irqstate_t irq = exec_lock1_acquire(&l->lock);
  int r = wake_locked(ex, l, 0, c, cid, 1);
  exec_lock1_release(&l->lock, irq);
  if (lane)
    *lane = 0;
  return r == EXEC_ESTALE ? stale_wake(ex) : r;
}

int exec_wake_lane(struct executor *ex, cid_t cid, uint32_t *lane) {
  return wake_lane(ex, cid, lane);
}

int exec_wake(struct executor *ex, cid_t cid) { return wake_lane(ex, cid, 0); }

int exec_wake_to(struct executor *ex, cid_t cid, uint32_t to) {
  uint32_t n = __atomic_load_n(&ex->nlanes, __ATOMIC_RELAXED);
  if (n == 1 || to >= n)
    return exec_wake_lane(ex, cid, 0);
  struct co *c = lookup_unlocked(ex, cid);
  if (!c) {
    __atomic_fetch_add(&ex->stale_wakes, 1, __ATOMIC_RELAXED);
    return EXEC_ESTALE;
  }
  for (;;) {
    uint32_t from = __atomic_load_n(&c->lane, __ATOMIC_ACQUIRE);
    if (from >= n || from == to)
      return exec_wake_lane(ex, cid, 0);
    // Both lanes, in index order (as lock_all takes them; nothing else holds
    // two), so two such moves in opposite directions cannot deadlock.
    struct exec_lane *lf = lane_at(ex, from), *lt = lane_at(ex, to);
    struct exec_lane *first = from < to ? lf : lt, *second = from < to ? lt : lf;
    exec_irqstate_t i1 = exec_lock_acquire(&first->lock);
    exec_irqstate_t i2 = exec_lock_acquire(&second->lock);
    int r = -100;
    if (to >= ex->nlanes || from >= ex->nlanes) {
      // `to`, or c's home, was folded meanwhile (exec_fold_lanes; a blocked
      // coroutine keeps a folded home, and lane 0 holds it): a plain wake, below.
      r = -200;
    } else if (__atomic_load_n(&c->lane, __ATOMIC_RELAXED) == from) {
      if (c->gen == (uint32_t)(cid >> 32) && c->state == CO_BLOCKED) {
        // A blocked coroutine moves under its old lane's lock (the rule
        // lock_home relies on) and is queued in the new one.
        __atomic_store_n(&c->lane, to, __ATOMIC_RELEASE);
        enqueue(ex, lt, c);
        lt->wakes++;
        r = 1;
      } else {
        r = wake_locked(ex, lf, from, c, cid, 0);   // stale, running or ready: as a plain wake
      }
    }
    exec_lock_release(&second->lock, i2);
    exec_lock_release(&first->lock, i1);
    if (r == -200)
      return exec_wake_lane(ex, cid, 0);
    if (r == EXEC_ESTALE)
      __atomic_fetch_add(&ex->stale_wakes, 1, __ATOMIC_RELAXED);
    if (r != -100)
      return r;
  }
}

int exec_reprio(struct executor *ex, cid_t cid, uint32_t prio) {
  if (prio >= ex->nprio)
    return EXEC_EINVAL;
  struct co *c = lookup_unlocked(ex, cid);
  if (!c)
    return EXEC_ESTALE;
  exec_irqstate_t irq;
  uint32_t at;
  struct exec_lane *l = lock_home(ex, c, &irq, &at);
  int r = 0;
  if (c->gen != (uint32_t)(cid >> 32) || c->state == CO_FREE) {
    r = EXEC_ESTALE;
  } else if (c->state == CO_READY) {
    unlink_ready(ex, l, c);
    c->prio = (uint8_t)prio;
    enqueue(ex, l, c);
  } else {
    if (c->flags & CO_RESIDENT) {
      unlink_resident(l, c);   // (its ring keeps its ready coroutines)
      c->flags &= (uint8_t)~CO_RESIDENT;
    }
    c->prio = (uint8_t)prio;   // takes effect when it is next queued
  }
  exec_lock_release(&l->lock, irq);
  return r;
}

// A lane keeps the slots freed on it, for its own spawns: exit and spawn then
// take no lock but the lane's. A cache beyond EXEC_LANE_FREE_MAX gives half
// back to the table's list (out of line: rare).

static __attribute__((noinline)) void spill_free(struct executor *ex, struct exec_lane *l) {
  LOCKED(&ex->lock);       // order: a lane's lock, then the table's
  while (l->nfree > EXEC_LANE_FREE_MAX / 2) {
    struct co *c = l->free;
    l->free = c->next;
    l->nfree--;
    c->next = ex->free_list;
    ex->free_list = c;
  }
  UNLOCK(&ex->lock);
}

// A coroutine is done: its slot goes to the lane's cache, a generation on.
// Returns whether the cache is now over its size (the caller spills it).
static inline __attribute__((always_inline)) int free_slot(struct exec_lane *l, struct co *c) {
  uint32_t gen = c->gen + 1;
  if (gen == 0)
    gen = 1;               // after 2^32 reuses, skip the never-valid generation 0
  __atomic_store_n(&c->gen, gen, __ATOMIC_RELAXED);
  __atomic_store_n(&c->state, CO_FREE, __ATOMIC_RELAXED);
  c->flags = 0;
  c->poll = 0;
  c->arg = 0;
  c->next = l->free;
  l->free = c;
  l->exited++;
  return ++l->nfree > EXEC_LANE_FREE_MAX;
}

// Put the coroutine that just returned from poll where its result says; the
// caller holds the lock of c's lane, l.
// one: the executor has one lane (see union_set). Returns whether the lane's
// free-slot cache is now overfull; the caller spills it in its own way.
static inline __attribute__((always_inline)) int settle_in(struct executor *ex,
                                                           struct exec_lane *l, struct co *c,
                                                           int result, int one) {
  if (result == CO_DONE || (result == CO_PENDING && !(c->flags & CO_WAKE_PENDING))) {
    if (c->flags & CO_RESIDENT)
      unlink_resident(l, c);
    if (result == CO_DONE)
      return free_slot(l, c);
    exec_set_word(c, CO_BLOCKED);
  } else {
    // CO_YIELD, or a wake arrived while it ran: back to the tail of its queue.
    requeue(ex, l, c, one);
  }
  return 0;
}

static inline __attribute__((always_inline)) void settle(struct executor *ex, struct exec_lane *l,
                                                         struct co *c, int result) {
  if (settle_in(ex, l, c, result, 0))
    spill_free(ex, l);
}

// Take the best coroutine of another lane if it is better than `than` (a
// priority; NPRIO_MAX: anything). It moves to lane `self`. One lane lock at a
// time, so two harts stealing from each other cannot deadlock.
static struct co *steal(struct executor *ex, uint32_t self, uint32_t than) {
  uint32_t n = __atomic_load_n(&ex->nlanes, __ATOMIC_RELAXED);
  for (int attempt = 0; attempt < 2; attempt++) {
    uint32_t best = than, victim = self;
    for (uint32_t k = 1; k < n; k++) {
      uint32_t v = self + k < n ? self + k : self + k - n;
      uint64_t b = __atomic_load_n(&lane_at(ex, v)->bitmap, __ATOMIC_SEQ_CST);
      if (b && exec_ctz64(b) < best) {
        best = exec_ctz64(b);
        victim = v;
      }
    }
    if (victim == self)
      return 0;
    struct exec_lane *l = lane_at(ex, victim);
    struct co *c = 0;
    LOCKED(&l->lock);
    if (l->bitmap && exec_ctz64(l->bitmap) < than) {
      c = pop_highest(ex, l);
      c->state = CO_RUNNING;
      __atomic_store_n(&c->lane, self, __ATOMIC_RELEASE);   // under the old lane's lock
    }
    UNLOCK(&l->lock);
    if (c) {
      lane_at(ex, self)->steals++;   // only this lane's own loop writes it
      return c;
    }
  }
  return 0;
}

// exec_next_on's other case: the union has something better than this lane's
// best (or this lane has nothing). Steal it; failing that, repair the union
// and take our own best.
static __attribute__((noinline)) struct co *next_elsewhere(struct executor *ex, uint32_t lane,
                                                           uint64_t mine) {
  uint32_t than = mine ? exec_ctz64(mine) : NPRIO_MAX;
  struct co *c = steal(ex, lane, than);
  if (c)
    return c;
  // The union promised better work than any lane had (a clear and a put-back
  // crossed, or someone took it first): clear the bits nobody backs, so that
  // idle loops can sleep and the next dispatch does not look again. Under
  // our lane's lock, like every other clear, so that exec_check (which holds
  // every lane) never sees a bit cleared and not yet put back.
  struct exec_lane *l = lane_at(ex, lane);
  LOCKED(&l->lock);
  uint64_t all = __atomic_load_n(&ex->bitmap, __ATOMIC_SEQ_CST);
  if (than < 64)
    all &= (1ULL << than) - 1;
  while (all) {
    uint64_t bit = all & -all;
    union_clear(ex, bit);
    all &= ~bit;
  }
  if (l->bitmap) {
    c = pop_highest(ex, l);
    c->state = CO_RUNNING;
  }
  UNLOCK(&l->lock);
  return c;
}

// The last fold left one lane (exec_fold_lanes), and lane 0's thread, the
// only one that steps from now on, comes by: it turns the one-lane steps on
// itself. The fold cannot: those steps take no lock, so a thread that found
// `multi` clear with a plain load could read the lane as it was before the
// fold's stores (RVWMO lets loads pass one another). Taking lane 0's lock
// here orders this thread after the fold; the steps it takes afterwards are
// in its own program order. (nlanes changes only under lane 0's lock.)
static __attribute__((noinline)) int back_to_one_lane(struct executor *ex) {
  struct exec_lane *l0 = lane_at(ex, 0);
  LOCKED(&l0->lock);
  int one = __atomic_load_n(&ex->nlanes, __ATOMIC_RELAXED) == 1;
  if (one) {
    // The one-lane union is an exact copy of the lane's bitmap (union_copy);
    // with several it may hold a bit nobody backs any more.
    __atomic_store_n(&ex->bitmap, l0->bitmap, __ATOMIC_RELAXED);
    __atomic_store_n(&ex->multi, 0, __ATOMIC_RELAXED);
  }
  UNLOCK(&l0->lock);
  return one;
}

static inline __attribute__((always_inline)) struct co *next_one(struct executor *ex,
                                                                 struct co *prev,
                                                                 int prev_result);

// Several lanes: the general step.
static __attribute__((noinline)) struct co *next_multi(struct executor *ex, uint32_t lane,
                                                       struct co *prev, int prev_result) {
  uint32_t n = __atomic_load_n(&ex->nlanes, __ATOMIC_RELAXED);
  if (__builtin_expect(lane >= n, 0))
    lane %= n;
  else if (__builtin_expect(n == 1, 0) && back_to_one_lane(ex))
    return next_one(ex, prev, prev_result);
  struct exec_lane *l = lane_at(ex, lane);
  LOCKED(&l->lock);
  uint64_t all = __atomic_load_n(&ex->bitmap, __ATOMIC_RELAXED);
  if (prev) {
    uint64_t upto = (2ULL << prev->prio) - 1;
    if (prev_result == CO_YIELD && !(l->bitmap & upto)) {
      // Fast path: a coroutine that yields while nothing of its priority or
      // better is ready anywhere would be queued and taken straight back;
      // keep it running instead.
      if (!(all & upto)) {
        prev->flags = 0;   // it runs again anyway, as settle would arrange (no resident
                           // with several lanes: exec_set_lanes)
        UNLOCK(&l->lock);
        return prev;
      }
      // A yield gives way to equal priority too (round robin among equals),
      // and what is ready is in another lane: take it from there. (A
      // switching coroutine yields only at its process's traps; the lane's
      // own hart may be in user code for up to a tick.) One lane lock at a
      // time: prev stays RUNNING here meanwhile, so a wake only marks it.
      UNLOCK(&l->lock);
      struct co *c = steal(ex, lane, prev->prio + 1u);
      irq_ = exec_lock_acquire(&l->lock);
      settle(ex, l, prev, CO_YIELD);
      if (c) {
        UNLOCK(&l->lock);
        return c;
      }
    } else {
      settle(ex, l, prev, prev_result);
    }
    all = __atomic_load_n(&ex->bitmap, __ATOMIC_RELAXED);
  }
  uint64_t mine = l->bitmap;
  // Our best is the best anywhere (nothing strictly better in the union): the
  // common path, with no other lock touched.
  if (__builtin_expect(mine && !(all & ((mine & -mine) - 1)), 1)) {
    struct co *c = pop_highest(ex, l);
    c->state = CO_RUNNING;
    UNLOCK(&l->lock);
    return c;
  }
  UNLOCK(&l->lock);
  if (!all)
    return 0;
  // Something better (or, if we have nothing, anything) is in another lane.
  return next_elsewhere(ex, lane, mine);
}

// The cache overflowed in the one-lane step: give half back, then return c
// (a tail call there, so that step needs no stack frame).
static __attribute__((noinline)) struct co *spill_and_return(struct executor *ex, struct co *c) {
  struct exec_lane *l = lane_at(ex, 0);
  LOCKED(&l->lock);
  if (l->nfree > EXEC_LANE_FREE_MAX)
    spill_free(ex, l);
  UNLOCK(&l->lock);
  return c;
}

// One lane (a process with one executor thread, a kernel on one hart): the
// step with the union a plain copy of the lane's bitmap, written inline, the
// lock exec_lock1_* (executor.h), and no call but tail calls. (nlanes only
// grows from 1 while the caller's own thread is the only one, outside this
// function: exec_set_lanes.) Inlined into both entry points, so that neither
// is a hop to the other.
static inline __attribute__((always_inline)) struct co *next_one(struct executor *ex,
                                                                 struct co *prev,
                                                                 int prev_result) {
  struct exec_lane *l = (struct exec_lane *)ex->lanes;
  exec_irqstate_t irq = exec_lock1_acquire(&l->lock);
  struct co *c;
  if (prev) {
    // (No flags: neither woken while it ran nor resident.)
    if (__builtin_expect(prev_result == CO_PENDING && !prev->flags, 1)) {
      prev->state = CO_BLOCKED;           // the common case in the kernel: first
    } else if (prev_result == CO_YIELD) {
      struct co_queue *q = &l->ready[prev->prio], *best = l->best;
      __asm__("" : "+r"(q));          // (as in exec_rotation_queue)
      if (best == q) {
        // Round robin among equals (executor.h): the same result as settling
        // prev and fetching. A prev that a pop took is linked as the tail
        // first; either way the head stays linked, as the resident.
        if (prev->flags & CO_RESIDENT) {
          c = exec_rotate(q, prev);
        } else {
          enqueue_in(ex, l, prev, 1);
          c = prev->next;
          exec_set_word(c, EXEC_RESIDENT_WORD);
        }
        exec_lock1_release(&l->lock, irq);
        return c;
      }
      if (!best || best > q) {
        // Nothing of its priority or better is ready: it would be queued and
        // taken straight back, so it keeps running. (It is no resident: a
        // resident's ring has a ready coroutine, so best <= q.)
        prev->flags = 0;
        exec_lock1_release(&l->lock, irq);
        return prev;
      }
      requeue(ex, l, prev, 1);          // something better is ready
    } else if (prev_result == CO_DONE) {
      if (prev->flags & CO_RESIDENT)
        unlink_resident(l, prev);
      if (__builtin_expect(free_slot(l, prev), 0)) {
        c = l->best ? pop_in(ex, l, 1) : 0;
        if (c)
          c->state = CO_RUNNING;
        exec_lock1_release(&l->lock, irq);
        return spill_and_return(ex, c);   // the cache is overfull: give half back
      }
    } else if (prev->flags & CO_WAKE_PENDING) {
      requeue(ex, l, prev, 1);          // woken while it ran: ready again
    } else {
      unlink_resident(l, prev);         // a resident that blocks
      exec_set_word(prev, CO_BLOCKED);
    }
  }
  if (__builtin_expect(!l->best, 0)) {
    exec_lock1_release(&l->lock, irq);
    return 0;
  }
  c = pop_in(ex, l, 1);
  c->state = CO_RUNNING;
  exec_lock1_release(&l->lock, irq);
  return c;
}

// Several lanes: the caller's own lane only, under its lock (the union is
// kept as on every other pop). Work in other lanes is their harts' to run,
// or a loop's to steal.
static __attribute__((noinline)) struct co *take_stackless_multi(struct executor *ex, uint32_t lane,
                                                                 uint32_t max_prio) {
  uint32_t n = __atomic_load_n(&ex->nlanes, __ATOMIC_RELAXED);
  struct exec_lane *l = lane_at(ex, lane < n ? lane : lane % n);
  LOCKED(&l->lock);
  struct co *c = l->best ? l->best->tail->next : 0;   // (no residents with several lanes)
  if (c && c->prio <= max_prio && c->kind == CO_STACKLESS) {
    pop_in(ex, l, 0);
    c->state = CO_RUNNING;
  } else {
    c = 0;
  }
  UNLOCK(&l->lock);
  return c;
}

struct co *exec_take_stackless(struct executor *ex, uint32_t lane, uint32_t max_prio) {
  if (__atomic_load_n(&ex->multi, __ATOMIC_RELAXED))
    return take_stackless_multi(ex, lane, max_prio);
  struct exec_lane *l = (struct exec_lane *)ex->lanes;
  exec_irqstate_t irq = exec_lock1_acquire(&l->lock);
  struct co_queue *q = l->best;
  struct co *c = 0;
  if (q) {
    // The caller runs, and may be the lane's resident, linked before the
    // head: then the head is the one after it.
    struct co *t = q->tail, *r = resident_of(t), *before = r ? r : t;
    c = before->next;
    if (c->prio <= max_prio && c->kind == CO_STACKLESS) {
      if (c == t)
        ring_emptied(ex, l, q, c, r, 1);
      else
        before->next = c->next;
      c->state = CO_RUNNING;
    } else {
      c = 0;
    }
  }
  exec_lock1_release(&l->lock, irq);
  return c;
}

void exec_settle_one(struct executor *ex, struct co *c, int result) {
  if (__atomic_load_n(&ex->multi, __ATOMIC_RELAXED)) {
    // c runs, so no steal can move it: its lane is where it was taken.
    exec_irqstate_t irq;
    uint32_t at;
    struct exec_lane *l = lock_home(ex, c, &irq, &at);
    if (settle_in(ex, l, c, result, 0))
      spill_free(ex, l);
    exec_lock_release(&l->lock, irq);
    return;
  }
  struct exec_lane *l = (struct exec_lane *)ex->lanes;
  exec_irqstate_t irq = exec_lock1_acquire(&l->lock);
  int spill = settle_in(ex, l, c, result, 1);
  exec_lock1_release(&l->lock, irq);
  if (spill)
    spill_and_return(ex, 0);     // the free-slot cache is overfull: give half back
}

struct co *exec_next_on(struct executor *ex, uint32_t lane, struct co *prev, int prev_result) {
  if (__builtin_expect(__atomic_load_n(&ex->multi, __ATOMIC_RELAXED), 0))
    return next_multi(ex, lane, prev, prev_result);
  return next_one(ex, prev, prev_result);
}

struct co *exec_next(struct executor *ex, struct co *prev, int prev_result) {
  if (__builtin_expect(__atomic_load_n(&ex->multi, __ATOMIC_RELAXED), 0))
    return next_multi(ex, 0, prev, prev_result);
  return next_one(ex, prev, prev_result);
}

int exec_reserve(struct executor *ex, uint32_t slots) {
  LOCKED(&ex->lock);
  int r = 0;
  while (r == 0 && ex->nchunks * EXEC_CHUNK_SLOTS < slots)
    r = grow_table(ex);
  UNLOCK(&ex->lock);
  return r;
}

int exec_ready_anywhere(struct executor *ex) {
  if (__atomic_load_n(&ex->bitmap, __ATOMIC_SEQ_CST))
    return 1;
  return any_lane_has(ex, ~0ULL, __atomic_load_n(&ex->nlanes, __ATOMIC_SEQ_CST));
}

int exec_lane_has_ready(struct executor *ex, uint32_t lane) {
  return lane < __atomic_load_n(&ex->nlanes, __ATOMIC_ACQUIRE) &&
         __atomic_load_n(&lane_at(ex, lane)->bitmap, __ATOMIC_ACQUIRE) != 0;
}

uint32_t exec_best_prio(const struct executor *ex) {
  uint64_t b = __atomic_load_n(&ex->bitmap, __ATOMIC_RELAXED);
  return b ? exec_ctz64(b) : NPRIO_MAX;
}

// Take every lane's lock (in index order; nothing else holds two lane locks)
// and then the table's: the order the rest of this file uses. Returns how
// many lanes it locked: all there are. The count changes only under lane
// 0's lock (exec_set_lanes) or every lock (exec_fold_lanes), so it is read
// again once they are held, and if one came first, the locks are taken
// again for the new count.
static void unlock_all(struct executor *ex, exec_irqstate_t *irq, uint32_t n);

static uint32_t lock_all(struct executor *ex, exec_irqstate_t *irq) {
  for (;;) {
    uint32_t n = __atomic_load_n(&ex->nlanes, __ATOMIC_SEQ_CST);
    for (uint32_t i = 0; i < n; i++)
      irq[i] = exec_lock_acquire(&lane_at(ex, i)->lock);
    irq[n] = exec_lock_acquire(&ex->lock);
    if (__atomic_load_n(&ex->nlanes, __ATOMIC_SEQ_CST) == n)
      return n;
    unlock_all(ex, irq, n);
  }
}

static void unlock_all(struct executor *ex, exec_irqstate_t *irq, uint32_t n) {
  exec_lock_release(&ex->lock, irq[n]);
  for (uint32_t i = n; i-- > 0;)
    exec_lock_release(&lane_at(ex, i)->lock, irq[i]);
}

// exec_set_lanes's opposite, for a kernel whose idle harts park (kernel/park.c).
// Lanes nlanes.. must have nothing ready (refused otherwise) and nothing
// running: their harts are idle and stay out of the executor from now on,
// which only the caller can know (a running coroutine there is a caller's
// bug that exec_check reports). Their free slots and counters go to lane 0,
// so that the executor looks as if it had always had nlanes lanes; with one
// lane left, lane 0's next step turns the one-lane steps on again
// (back_to_one_lane: not here, for the ordering). The coroutines blocked there
// keep their home: until their lane comes back, a wake queues them in lane 0
// (lock_home) and makes that their home, and if it comes back first
// (exec_set_lanes), they wake where they lived before, so that a hart parked
// and started again finds the work it had. (Rehoming them here instead was a
// walk of the whole slot table under every lock, 92,666 instructions with
// 10,240 slots, during which no hart could take a step.) Under every lock
// (lock_all), so no step of another lane is half done; one that read the old
// nlanes before finds the folded lanes empty, and a waker that read it
// chooses again under the lock (lock_home) or is told by exec_wake_to's
// check. A spawn into a folded lane is the caller's to prevent. Returns 0,
// EXEC_EINVAL, or EXEC_EBUSY (something ready there: nothing changed).
int exec_fold_lanes(struct executor *ex, uint32_t nlanes) {
  exec_irqstate_t irq[EXEC_MAX_LANES + 1];
  uint32_t nl = lock_all(ex, irq);
  int r = 0;
  if (nlanes == 0 || nlanes >= nl)
    r = EXEC_EINVAL;
  for (uint32_t i = nlanes; i < nl && !r; i++)
    if (lane_at(ex, i)->bitmap)
      r = EXEC_EBUSY;
  if (!r) {
    struct exec_lane *l0 = lane_at(ex, 0);
    for (uint32_t i = nlanes; i < nl; i++) {
      struct exec_lane *l = lane_at(ex, i);
      while (l->free) {
        struct co *c = l->free;
        l->free = c->next;
        c->next = ex->free_list;
        ex->free_list = c;
      }
      l->nfree = 0;
      l0->wakes += l->wakes;
      l0->wakes_remembered += l->wakes_remembered;
      l0->steals += l->steals;
      l0->spawned += l->spawned;
      l0->exited += l->exited;
      l->wakes = l->wakes_remembered = l->steals = 0;
      l->spawned = l->exited = 0;
    }
    __atomic_store_n(&ex->nlanes, nlanes, __ATOMIC_SEQ_CST);
  }
  unlock_all(ex, irq, nl);
  return r;
}

// Counters, plus how many coroutines are in each state (a walk of the slot
// table: for statistics and tests, not for hot paths).
void exec_get_stats(struct executor *ex, struct exec_stats *st) {
  exec_irqstate_t irq[EXEC_MAX_LANES + 1];
  uint32_t nl = lock_all(ex, irq);
  *st = ex->st;
  st->stale_wakes = __atomic_load_n(&ex->stale_wakes, __ATOMIC_RELAXED);
  uint32_t spawned = 0, exited = 0;
  for (uint32_t i = 0; i < EXEC_MAX_LANES; i++) {
    struct exec_lane *l = lane_at(ex, i);
    st->wakes += l->wakes;
    st->wakes_remembered += l->wakes_remembered;
    st->steals += l->steals;
    spawned += l->spawned;
    exited += l->exited;
  }
  st->spawned = ex->st.spawned + spawned;
  st->exited = ex->st.exited + exited;
  st->live = spawned - exited;
  st->ready = st->running = st->blocked = 0;
  for (uint32_t s = 0; s < ex->nchunks * EXEC_CHUNK_SLOTS; s++) {
    uint8_t state = slot_ptr(ex, s)->state;
    st->ready += state == CO_READY;
    st->running += state == CO_RUNNING || state == CO_SUSPENDED;
    st->blocked += state == CO_BLOCKED;
  }
  unlock_all(ex, irq, nl);
}

// ---- invariant checking (tests and the debug console) ----

static int fail(char *why, size_t len, const char *msg, uint64_t v) {
  // A tiny formatter: "msg <decimal>". No libc here.
  size_t i = 0;
  while (msg[i] && i + 1 < len) {
    why[i] = msg[i];
    i++;
  }
  char digits[24];
  int n = 0;
  do {
    digits[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v && n < 24);
  if (i + 1 < len)
    why[i++] = ' ';
  while (n > 0 && i + 1 < len)
    why[i++] = digits[--n];
  if (len)
    why[i < len ? i : len - 1] = 0;
  return -1;
}

int exec_check(struct executor *ex, char *why, size_t whylen) {
  int r = 0;
  exec_irqstate_t irq[EXEC_MAX_LANES + 1];
  uint32_t nl = lock_all(ex, irq);
  uint32_t nslots = ex->nchunks * EXEC_CHUNK_SLOTS;
  uint32_t queued = 0, nfree = 0, counted[CO_SUSPENDED + 1] = {0};
  uint32_t spawned = 0, exited = 0, residents = 0, flagged = 0;
  uint64_t any = 0;
  for (uint32_t i = 0; i < nl && !r; i++) {
    struct exec_lane *l = lane_at(ex, i);
    uint32_t lane_residents = 0;
    any |= l->bitmap;
    spawned += l->spawned;
    exited += l->exited;
    for (uint32_t p = 0; p < NPRIO_MAX && !r; p++) {
      if (p >= ex->nprio) {
        if ((l->bitmap >> p) & 1)
          r = fail(why, whylen, "bitmap bit beyond nprio:", p);
        break;
      }
      struct co_queue *q = &l->ready[p];
      int bit = (l->bitmap >> p) & 1;
      if (bit != (q->tail != 0)) {
        r = fail(why, whylen, "bitmap bit disagrees with ring of priority", p);
        break;
      }
      if (!q->tail)
        continue;
      // From the tail: the resident, if any, then the ready ones from the
      // head round to the tail again.
      struct co *t = q->tail, *c = t->next;
      if (c->flags & CO_RESIDENT) {
        if (c->state != CO_RUNNING || c->prio != p || c->lane != i || c == t) {
          r = fail(why, whylen, "bad resident: slot", c->slot);
          break;
        }
        lane_residents++;
        c = c->next;
      }
      struct co *prev = 0;
      uint32_t steps = 0;
      for (;; prev = c, c = c->next) {
        if (++steps > nslots) {
          r = fail(why, whylen, "the ring does not come back to its tail; priority", p);
          break;
        }
        if (c->state != CO_READY || c->flags || c->prio != p || (prev && c->prev != prev) ||
            c->lane != i) {
          r = fail(why, whylen, "bad coroutine in ready ring: slot", c->slot);
          break;
        }
        queued++;
        if (c == t)
          break;
      }
    }
    if (!r && lane_residents > 1)
      r = fail(why, whylen, "more than one resident in lane", i);
    residents += lane_residents;
    if (!r && l->best != (l->bitmap ? &l->ready[exec_ctz64(l->bitmap)] : 0))
      r = fail(why, whylen, "the lane's best queue is not its lowest bit's; lane", i);
    uint32_t cached = 0;
    for (struct co *c = l->free; c && !r; c = c->next) {
      if (++cached > nslots || c->state != CO_FREE)
        r = fail(why, whylen, "bad entry in a lane's free cache: slot", c->slot);
    }
    if (!r && cached != l->nfree)
      r = fail(why, whylen, "lane free cache count is wrong; lane", i);
    nfree += cached;
  }
  // (A fold to one lane leaves `multi` set until lane 0's next step:
  // back_to_one_lane.)
  if (!r && !ex->multi && nl > 1)
    r = fail(why, whylen, "the one-lane flag is set with several lanes", nl);
  if (!r && (any & ~__atomic_load_n(&ex->bitmap, __ATOMIC_SEQ_CST)))
    r = fail(why, whylen, "a lane has a priority the union bitmap lacks; lanes' union", any);
  for (struct co *c = ex->free_list; c && !r; c = c->next) {
    if (++nfree > nslots || c->state != CO_FREE)
      r = fail(why, whylen, "bad free list entry: slot", c->slot);
  }
  for (uint32_t s = 0; s < nslots && !r; s++) {
    struct co *c = slot_ptr(ex, s);
    // (A blocked coroutine's home may be a folded lane: exec_fold_lanes.)
    if (c->slot != s || c->state > CO_SUSPENDED || c->lane >= EXEC_MAX_LANES ||
        (c->state != CO_FREE && c->state != CO_BLOCKED && c->lane >= nl)) {
      r = fail(why, whylen, "corrupt slot", s);
      break;
    }
    counted[c->state]++;
    flagged += (c->flags & CO_RESIDENT) != 0;
  }
  if (!r && residents != flagged)
    r = fail(why, whylen, "coroutines flagged resident, not all found in a ring:", flagged);
  if (!r && nl > 1 && residents != 0)
    r = fail(why, whylen, "residents with several lanes:", residents);
  if (!r && queued != counted[CO_READY])
    r = fail(why, whylen, "READY coroutines not all queued exactly once:", counted[CO_READY]);
  if (!r && nfree != counted[CO_FREE])
    r = fail(why, whylen, "FREE slots not all on a free list:", counted[CO_FREE]);
  if (!r && (spawned - exited != nslots - nfree || ex->st.slots != nslots))
    r = fail(why, whylen, "counters disagree with the table; live =", spawned - exited);
  unlock_all(ex, irq, nl);
  return r;
}
