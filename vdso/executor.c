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

#define LOCK(ex) exec_irqstate_t irq_ = exec_lock_acquire(&(ex)->lock)
#define UNLOCK(ex) exec_lock_release(&(ex)->lock, irq_)

int exec_init(struct executor *ex, uint32_t nprio, void *(*alloc)(size_t), void (*free)(void *)) {
  if (nprio == 0 || nprio > NPRIO_MAX || !alloc || !free)
    return EXEC_EINVAL;
  // Field by field rather than memset: this file must not depend on a libc.
  ex->lock = 0;
  ex->nprio = nprio;
  ex->bitmap = 0;
  for (uint32_t p = 0; p < NPRIO_MAX; p++)
    ex->ready[p].head = ex->ready[p].tail = 0;
  ex->chunks = 0;
  ex->nchunks = ex->chunk_cap = 0;
  ex->free_list = 0;
  ex->st = (struct exec_stats){0};
  ex->alloc = alloc;
  ex->free = free;
  return 0;
}

void exec_destroy(struct executor *ex) {
  for (uint32_t i = 0; i < ex->nchunks; i++)
    ex->free(ex->chunks[i]);
  if (ex->chunks)
    ex->free(ex->chunks);
  ex->chunks = 0;
  ex->nchunks = ex->chunk_cap = 0;
  ex->free_list = 0;
  ex->st.slots = 0;
}

cid_t co_cid(const struct co *c) { return co_cid_inline(c); }

// ---- ready queues and bitmap (caller holds the lock) ----

static void enqueue(struct executor *ex, struct co *c) {
  struct co_queue *q = &ex->ready[c->prio];
  c->next = 0;
  c->prev = q->tail;
  if (q->tail)
    q->tail->next = c;
  else
    q->head = c;
  q->tail = c;
  ex->bitmap |= 1ULL << c->prio;
  c->state = CO_READY;
}

static void unlink_ready(struct executor *ex, struct co *c) {
  struct co_queue *q = &ex->ready[c->prio];
  if (c->prev)
    c->prev->next = c->next;
  else
    q->head = c->next;
  if (c->next)
    c->next->prev = c->prev;
  else
    q->tail = c->prev;
  if (!q->head)
    ex->bitmap &= ~(1ULL << c->prio);
  c->next = c->prev = 0;
}

// Take the head of the best non-empty queue. The common path of every dispatch.
static struct co *pop_highest(struct executor *ex) {
  if (!ex->bitmap)
    return 0;
  struct co_queue *q = &ex->ready[exec_ctz64(ex->bitmap)];
  struct co *c = q->head;
  q->head = c->next;
  if (c->next)
    c->next->prev = 0;
  else {
    q->tail = 0;
    ex->bitmap &= ~(1ULL << c->prio);
  }
  return c;
}

// ---- slot table ----

static struct co *slot_ptr(struct executor *ex, uint32_t slot) {
  return &ex->chunks[slot / EXEC_CHUNK_SLOTS][slot % EXEC_CHUNK_SLOTS];
}

// Add one chunk of free slots. Called with the lock held; the allocator takes its
// own lock, which is always taken after this one, never before.
static int grow_table(struct executor *ex) {
  if (ex->nchunks == ex->chunk_cap) {
    uint32_t cap = ex->chunk_cap ? ex->chunk_cap * 2 : 8;
    struct co **dir = ex->alloc(cap * sizeof(*dir));
    if (!dir)
      return EXEC_ENOMEM;
    for (uint32_t i = 0; i < ex->nchunks; i++)
      dir[i] = ex->chunks[i];
    if (ex->chunks)
      ex->free(ex->chunks);
    ex->chunks = dir;
    ex->chunk_cap = cap;
  }
  struct co *chunk = ex->alloc(EXEC_CHUNK_SLOTS * sizeof(struct co));
  if (!chunk)
    return EXEC_ENOMEM;
  uint32_t base = ex->nchunks * EXEC_CHUNK_SLOTS;
  ex->chunks[ex->nchunks++] = chunk;
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
  ex->st.slots += EXEC_CHUNK_SLOTS;
  return 0;
}

// Resolve a cid to its live control block, or NULL. Untrusted input is fine here:
// the slot is range-checked before indexing and the generation must match.
static struct co *lookup_locked(struct executor *ex, cid_t cid) {
  uint32_t slot = (uint32_t)cid, gen = (uint32_t)(cid >> 32);
  if (slot >= ex->nchunks * EXEC_CHUNK_SLOTS)
    return 0;
  struct co *c = slot_ptr(ex, slot);
  if (c->gen != gen || c->state == CO_FREE)
    return 0;
  return c;
}

struct co *exec_lookup(struct executor *ex, cid_t cid) {
  LOCK(ex);
  struct co *c = lookup_locked(ex, cid);
  UNLOCK(ex);
  return c;
}

// ---- the COPS operations ----

int64_t exec_spawn(struct executor *ex, co_poll_fn poll, void *arg, uint32_t prio, enum co_kind kind) {
  if (!poll || prio >= ex->nprio)
    return EXEC_EINVAL;
  LOCK(ex);
  if (!ex->free_list) {
    int err = grow_table(ex);
    if (err) {
      UNLOCK(ex);
      return err;
    }
  }
  struct co *c = ex->free_list;
  ex->free_list = c->next;
  c->poll = poll;
  c->arg = arg;
  c->prio = (uint8_t)prio;
  c->kind = (uint8_t)kind;
  c->wake_pending = 0;
  enqueue(ex, c);
  ex->st.live++;
  ex->st.spawned++;
  cid_t cid = co_cid(c);
  UNLOCK(ex);
  return (int64_t)cid;
}

int exec_wake(struct executor *ex, cid_t cid) {
  int r;
  LOCK(ex);
  struct co *c = lookup_locked(ex, cid);
  if (!c) {
    ex->st.stale_wakes++;
    r = EXEC_ESTALE;
  } else if (c->state == CO_BLOCKED) {
    enqueue(ex, c);
    ex->st.wakes++;
    r = 1;
  } else {
    // Running (or trapped while running): it may be about to return PENDING, so
    // remember the wake. Already ready: it will be polled anyway.
    if (c->state != CO_READY) {
      c->wake_pending = 1;
      ex->st.wakes_remembered++;
    }
    r = 0;
  }
  UNLOCK(ex);
  return r;
}

int exec_reprio(struct executor *ex, cid_t cid, uint32_t prio) {
  if (prio >= ex->nprio)
    return EXEC_EINVAL;
  LOCK(ex);
  struct co *c = lookup_locked(ex, cid);
  if (!c) {
    UNLOCK(ex);
    return EXEC_ESTALE;
  }
  if (c->state == CO_READY) {
    unlink_ready(ex, c);
    c->prio = (uint8_t)prio;
    enqueue(ex, c);
  } else {
    c->prio = (uint8_t)prio;   // takes effect when it is next queued
  }
  UNLOCK(ex);
  return 0;
}

// Put the coroutine that just returned from poll where its result says.
// (Only the counters that are off the dispatch path are kept here; how many are
// ready, running or blocked is derived by exec_get_stats.)
static void settle(struct executor *ex, struct co *c, int result) {
  if (result == CO_DONE) {
    c->gen++;
    if (c->gen == 0)
      c->gen = 1;          // after 2^32 reuses, skip the never-valid generation 0
    c->state = CO_FREE;
    c->poll = 0;
    c->arg = 0;
    c->next = ex->free_list;
    ex->free_list = c;
    ex->st.live--;
    ex->st.exited++;
  } else if (result == CO_PENDING && !c->wake_pending) {
    c->state = CO_BLOCKED;
  } else {
    // CO_YIELD, or a wake arrived while it ran: back to the tail of its queue.
    c->wake_pending = 0;
    enqueue(ex, c);
  }
}

struct co *exec_next(struct executor *ex, struct co *prev, int prev_result) {
  LOCK(ex);
  // Fast path: a coroutine that yields while nothing of its priority or better is
  // ready would be queued and taken straight back; keep it running instead.
  if (prev && prev_result == CO_YIELD && !(ex->bitmap & ((2ULL << prev->prio) - 1))) {
    prev->wake_pending = 0;   // it runs again anyway, as settle would arrange
    UNLOCK(ex);
    return prev;
  }
  if (prev)
    settle(ex, prev, prev_result);
  struct co *c = pop_highest(ex);
  if (c)
    c->state = CO_RUNNING;
  UNLOCK(ex);
  return c;
}

int exec_reserve(struct executor *ex, uint32_t slots) {
  LOCK(ex);
  int r = 0;
  while (r == 0 && ex->nchunks * EXEC_CHUNK_SLOTS < slots)
    r = grow_table(ex);
  UNLOCK(ex);
  return r;
}

uint32_t exec_best_prio(const struct executor *ex) {
  uint64_t b = __atomic_load_n(&ex->bitmap, __ATOMIC_RELAXED);
  return b ? exec_ctz64(b) : NPRIO_MAX;
}

// Counters, plus how many coroutines are in each state (a walk of the slot
// table: for statistics and tests, not for hot paths).
void exec_get_stats(struct executor *ex, struct exec_stats *st) {
  LOCK(ex);
  *st = ex->st;
  st->ready = st->running = st->blocked = 0;
  for (uint32_t s = 0; s < ex->nchunks * EXEC_CHUNK_SLOTS; s++) {
    uint8_t state = slot_ptr(ex, s)->state;
    st->ready += state == CO_READY;
    st->running += state == CO_RUNNING || state == CO_SUSPENDED;
    st->blocked += state == CO_BLOCKED;
  }
  UNLOCK(ex);
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
  LOCK(ex);
  uint32_t nslots = ex->nchunks * EXEC_CHUNK_SLOTS;
  uint32_t queued = 0, nfree = 0, counted[CO_SUSPENDED + 1] = {0};
  (void)counted[CO_RUNNING];
  for (uint32_t p = 0; p < NPRIO_MAX && !r; p++) {
    struct co_queue *q = &ex->ready[p];
    int bit = (ex->bitmap >> p) & 1;
    if (bit != (q->head != 0) || (q->head == 0) != (q->tail == 0)) {
      r = fail(why, whylen, "bitmap bit disagrees with queue of priority", p);
      break;
    }
    if (p >= ex->nprio && q->head) {
      r = fail(why, whylen, "queue beyond nprio is non-empty:", p);
      break;
    }
    struct co *prev = 0;
    uint32_t steps = 0;
    for (struct co *c = q->head; c; prev = c, c = c->next) {
      if (++steps > nslots) {
        r = fail(why, whylen, "cycle in ready queue", p);
        break;
      }
      if (c->state != CO_READY || c->prio != p || c->prev != prev) {
        r = fail(why, whylen, "bad coroutine in ready queue: slot", c->slot);
        break;
      }
      queued++;
    }
    if (!r && q->tail != prev)
      r = fail(why, whylen, "tail does not end queue", p);
  }
  for (struct co *c = ex->free_list; c && !r; c = c->next) {
    if (++nfree > nslots || c->state != CO_FREE)
      r = fail(why, whylen, "bad free list entry: slot", c->slot);
  }
  for (uint32_t s = 0; s < nslots && !r; s++) {
    struct co *c = slot_ptr(ex, s);
    if (c->slot != s || c->state > CO_SUSPENDED) {
      r = fail(why, whylen, "corrupt slot", s);
      break;
    }
    counted[c->state]++;
  }
  if (!r && queued != counted[CO_READY])
    r = fail(why, whylen, "READY coroutines not all queued exactly once:", counted[CO_READY]);
  if (!r && nfree != counted[CO_FREE])
    r = fail(why, whylen, "FREE slots not all on the free list:", counted[CO_FREE]);
  if (!r && (ex->st.live != nslots - nfree || ex->st.slots != nslots ||
             ex->st.spawned - ex->st.exited != ex->st.live))
    r = fail(why, whylen, "counters disagree with the table; live =", ex->st.live);
  UNLOCK(ex);
  return r;
}
