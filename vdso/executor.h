// The COPS executor: one priority-bitmap scheduler for coroutines, shared by the
// kernel and (through the vDSO) by user processes. This header is the whole
// interface; vdso/executor.c is the single implementation both sides link.
//
// Model (docs/DESIGN.md, "Execution model"):
//   - NPRIO priorities, 0 highest. Ready coroutines wait in one intrusive FIFO per
//     priority (a ring: see struct co_queue); bit p of `bitmap` is set exactly when
//     queue p has a ready coroutine, so the best ready priority is
//     count-trailing-zeros(bitmap): O(1) fetch-highest.
//   - A coroutine is a poll function + argument. The executor calls poll(arg);
//     poll returns CO_YIELD (run me again later), CO_PENDING (block until woken) or
//     CO_DONE (exit). Stackful coroutines are built on top (vdso/stackful.h): their
//     poll switches onto their own stack.
//   - A cid names a coroutine: slot index in the low 32 bits, the slot's generation
//     in the high 32. Exiting bumps the generation, so a stale cid never matches a
//     reused slot. cid 0 is never valid.
//   - No lost wakeup: waking a coroutine that is still running (it has decided to
//     block but has not returned PENDING yet) sets CO_WAKE_PENDING, and the
//     executor requeues it instead of blocking it.
//
// Concurrency: lanes. An executor has one or more lanes (the kernel: one per
// hart; a user process: one per thread that runs its loop). Each lane has its
// own lock, ready queues and bitmap; a coroutine belongs to one lane at a time
// (its home: where it was spawned or last ran), and a wake queues it there.
// The dispatch step locks only the caller's lane. Priority order still holds
// across lanes: `bitmap` in the executor is the union of the lanes' bitmaps,
// kept with atomic or/and on the rare transitions of a lane's bit, and a lane
// whose best is worse than that union's best steals from the lane that has the
// better coroutine (which then moves: its home becomes the thief's lane). The
// slot table and its free list have a lock of their own, taken only when a
// lane's cache of free slots runs dry or overflows (and to grow the table).
// How a lock is taken is environment-specific and comes from "exec_arch.h"
// (the kernel's masks interrupts while it holds a lock so that interrupt
// handlers may call wake). So does exec_lock1_*, what the dispatch and wake
// steps of an executor with one lane take instead: an environment in which
// such an executor is only ever used by one hart or thread at a time (the
// kernel, whose executor has one lane only on a one-hart machine; the user
// runtime, which has one lane only while main's thread is its only executor
// thread) needs no spinning there, only what keeps its own interrupt
// handlers out.
#ifndef EXECUTOR_H
#define EXECUTOR_H
#include <stdint.h>
#include <stddef.h>

#define NPRIO_MAX 64        // one uint64_t bitmap describes an executor
#define NPRIO_DEFAULT 8
#define EXEC_MAX_LANES 8    // harts (kernel) or executor threads (user) with a lane
#define EXEC_MAX_CHUNKS 256 // slot table: 256 chunks of 256 slots = 65,536 coroutines

typedef uint64_t cid_t;
#define CID_NONE ((cid_t)0)

// Values a poll function returns.
enum co_poll { CO_PENDING = 0, CO_YIELD = 1, CO_DONE = 2 };

// States, as in the COPS paper's model. A slot is FREE between exit and reuse.
// SUSPENDED is "running-suspended": the coroutine trapped into the kernel while
// running. exec_check accepts it, but nothing sets it yet: a user coroutine that
// traps stays RUNNING in its executor, and a kernel coroutine that takes a trap
// continues right after the handler, on the same stack.
enum co_state { CO_FREE = 0, CO_READY, CO_RUNNING, CO_BLOCKED, CO_SUSPENDED };

enum co_kind { CO_STACKLESS = 0, CO_STACKFUL = 1 };

// Errors (negative); the kernel maps them onto errno values at the syscall layer.
#define EXEC_ESTALE (-1)    // no live coroutine has this cid
#define EXEC_EINVAL (-2)    // priority out of range, null poll function
#define EXEC_ENOMEM (-3)    // no memory for another slot chunk
#define EXEC_EBUSY (-4)     // exec_fold_lanes: a lane to fold has work

typedef int (*co_poll_fn)(void *arg);

// Bits of co.flags.
#define CO_WAKE_PENDING 1   // woken while running: requeue instead of blocking
#define CO_RESIDENT 2       // running, and still linked in its priority's ring (below)

// Coroutine control block: 48 bytes. It lives in the executor's slot table, so a
// cid resolves to it by indexing, never by searching.
struct co {
  struct co *next, *prev;   // ready-ring links; `next` also links the free list
  co_poll_fn poll;
  void *arg;
  uint32_t gen;             // generation of this slot; part of the cid
  uint32_t slot;            // index in the slot table
  uint8_t prio;
  uint8_t kind;             // enum co_kind
  uint8_t state;            // enum co_state
  uint8_t flags;            // CO_WAKE_PENDING, CO_RESIDENT (state and flags share a
                            // halfword, so that one store sets a state and clears
                            // or sets the flags with it)
  uint32_t lane;            // home lane: where it is queued, runs, or was freed
                            // (a blocked one's may be a folded lane: lane 0 holds it)
};

// The ready coroutines of one priority in one lane, in FIFO order, form a ring
// through `next` (the tail's next is the head), and the queue keeps only its
// tail: a yield among equals then moves no link at all. A READY coroutine's
// prev is its predecessor, except the head's, which is not kept (a pop would
// store it for nothing).
//
// The running coroutine that the lane's last rotation (exec_rotate) took may
// stay linked: it is the lane's resident (state RUNNING, flag CO_RESIDENT),
// and it sits right after the tail, before the head. When it yields to an
// equal again, it becomes the tail where it is and the head after it becomes
// the resident: no unlinking, no appending. When it blocks or ends, one store
// (the tail's next) takes it out. A ring never holds a resident alone: the
// step that takes its last ready coroutine away unlinks the resident too, so
// tail != 0 exactly when the priority has a ready coroutine. Only an executor
// with one lane has residents (exec_set_lanes unlinks lane 0's), and a lane
// has at most one: the coroutine its loop runs. A coroutine taken by a plain
// fetch (a pop) is unlinked at once, so that dispatching one that then blocks
// (the kernel's common case) costs no more than with a list.
struct co_queue {
  struct co *tail;
};

#define EXEC_CHUNK_SLOTS 256    // slots per table chunk: 256 * 48 B = 12 KiB

struct exec_stats {
  uint64_t spawned, exited, wakes, stale_wakes, wakes_remembered, steals;
  uint32_t live, slots;
  uint32_t ready, running, blocked;   // filled in by exec_get_stats (a table walk)
};

// One lane: a lock, a bitmap and nprio ready rings (the array is sized at
// exec_init, so a lane costs 72 + 8 * nprio bytes, rounded up to a power of
// two so that finding a lane is a shift).
struct exec_lane {
  volatile uint64_t lock;
  uint64_t bitmap;                    // bit p <=> ready[p] has a ready coroutine (under lock)
  uint64_t wakes, wakes_remembered;   // counters, under lock
  uint64_t steals;                    // coroutines this lane took from others
  struct co *free;                    // slots freed here, reused by spawns here
  uint32_t nfree;
  uint32_t spawned, exited;           // counters, under lock (wrap: only differences count)
  uint32_t reserved;
  struct co_queue *best;              // ready[lowest bit of bitmap], 0 when empty (under lock):
                                      // a fetch reads it instead of finding the bit
  struct co_queue ready[];            // nprio queues
};

struct executor {
  volatile uint64_t lock;             // slot table and free list (spawn, exit)
  uint32_t nprio, nlanes;
  uint64_t bitmap;                    // union of the lanes' bitmaps: the kernel reads it
  char *lanes;                        // nlanes lanes, 1 << lane_shift bytes apart
  uint32_t lane_shift;
  uint32_t nchunks;                   // published with release; readers need no lock
  uint32_t multi;                     // nlanes > 1 (or a fold to 1 that lane 0 has not seen):
                                      // the steps' one test for the one-lane path
  uint32_t reserved;
  struct co *chunks[EXEC_MAX_CHUNKS]; // slot s is chunks[s/256][s%256]; never moved
  struct co *free_list;               // FREE slots not in a lane's cache, linked through `next`
  struct exec_stats st;               // slots (under lock); the rest is summed from the lanes
  uint64_t stale_wakes;               // atomic
  void *(*alloc)(size_t);             // memory for chunks and lanes (kmalloc in the kernel)
  void (*free)(void *);
};

// Set up an empty executor with nprio priorities (1..NPRIO_MAX) and nlanes
// lanes (1..EXEC_MAX_LANES). exec_init is exec_init_lanes with one lane.
int exec_init_lanes(struct executor *ex, uint32_t nprio, uint32_t nlanes,
                    void *(*alloc)(size_t), void (*free)(void *));
int exec_init(struct executor *ex, uint32_t nprio, void *(*alloc)(size_t), void (*free)(void *));
// Use nlanes lanes from now on (more than before; at most EXEC_MAX_LANES:
// room for all is allocated at init). 0 or EXEC_EINVAL.
int exec_set_lanes(struct executor *ex, uint32_t nlanes);
// Use only lanes 0..nlanes-1 from now on (fewer than now): their harts stop
// (kernel/park.c). The others must have nothing ready or running; a
// coroutine blocked there keeps its home, wakes in lane 0 while that lane is
// folded, and in it again once exec_set_lanes has grown it back (executor.c
// says what the caller must keep out). 0, EXEC_EINVAL or EXEC_EBUSY.
int exec_fold_lanes(struct executor *ex, uint32_t nlanes);
// Grow the slot table to at least `slots` slots now (it grows by itself when
// full; reserving up front keeps a peak of live coroutines from changing the
// memory counters that leak tests compare). 0 or EXEC_ENOMEM.
int exec_reserve(struct executor *ex, uint32_t slots);
// Free the slot table and the lanes. Only valid when no coroutine is live.
void exec_destroy(struct executor *ex);

// Create a ready coroutine in lane `lane` (taken modulo nlanes; exec_spawn uses
// lane 0). Returns its cid, or a negative EXEC_* error.
int64_t exec_spawn_on(struct executor *ex, uint32_t lane, co_poll_fn poll, void *arg,
                      uint32_t prio, enum co_kind kind);
int64_t exec_spawn(struct executor *ex, co_poll_fn poll, void *arg, uint32_t prio, enum co_kind kind);

// Make a blocked coroutine ready, in its home lane. Returns 1 if it became
// ready, 0 if the wake was absorbed (already ready, or running: then it is
// remembered), EXEC_ESTALE otherwise. exec_wake_lane also stores the lane it
// was queued in (a hint for whom to wake up: it may be stolen at once).
int exec_wake(struct executor *ex, cid_t cid);
int exec_wake_lane(struct executor *ex, cid_t cid, uint32_t *lane);
// The same, but a blocked coroutine is queued in lane `to` and that becomes
// its home (the CES mutex hands a requester's continuation to another hart
// this way). A coroutine that is running or ready is treated as by exec_wake.
int exec_wake_to(struct executor *ex, cid_t cid, uint32_t to);

// Change a coroutine's priority; a ready one moves to the tail of its new queue.
int exec_reprio(struct executor *ex, cid_t cid, uint32_t prio);

// The loop's step for lane `lane`: settle the coroutine that just ran (prev,
// with the value its poll returned) in this lane, then take the best ready
// coroutine -- from this lane, or stolen from another whose best is strictly
// better (or from any, when this lane has nothing) -- and mark it running.
// Returns NULL when nothing is ready anywhere. prev may be NULL; it must have
// been returned by a previous call for the same lane. exec_next is lane 0.
struct co *exec_next_on(struct executor *ex, uint32_t lane, struct co *prev, int prev_result);
struct co *exec_next(struct executor *ex, struct co *prev, int prev_result);

// Running a stackless coroutine on the caller's own stack, for a running
// stackful coroutine that would otherwise yield to it only to be resumed
// right after (the kernel's switching coroutines, before a return to user
// mode). It takes the best ready coroutine of lane `lane` (with one lane:
// the best anywhere) if that one is stackless and of priority max_prio or
// better, and marks it running, as exec_next would; exec_settle_one puts it
// where its poll's result says.
struct co *exec_take_stackless(struct executor *ex, uint32_t lane, uint32_t max_prio);
void exec_settle_one(struct executor *ex, struct co *c, int result);

// Is a coroutine ready in any lane? Reads every lane's bitmap, not only the
// union (which may lack a bit for a moment while a lane clears it): an idle
// loop asks this before it sleeps. Sequentially consistent, so that a waker
// that queues (lane bitmap first) and then looks for sleepers, and a sleeper
// that announces itself and then asks this, cannot miss each other.
int exec_ready_anywhere(struct executor *ex);
// Has lane `lane` a ready coroutine (a glance, without its lock)?
int exec_lane_has_ready(struct executor *ex, uint32_t lane);

// Priority of the best ready coroutine, or NPRIO_MAX when none is ready.
uint32_t exec_best_prio(const struct executor *ex);

// Look up a live coroutine's control block (NULL for a stale or bad cid).
// The pointer is only stable while the coroutine cannot exit concurrently.
struct co *exec_lookup(struct executor *ex, cid_t cid);
cid_t co_cid(const struct co *c);
static inline cid_t co_cid_inline(const struct co *c) { return ((cid_t)c->gen << 32) | c->slot; }

// Walk every structure and check the invariants: in every lane bit p <=> ring
// p has a ready coroutine, every coroutine in a ring is READY with that
// priority and names that lane (but for at most one resident per lane, right
// after a tail); no lane has a bit the union lacks; every slot is in exactly
// one of {ready rings, blocked, running, free list}, counters match. Returns 0
// when all hold, else -1 with a reason in why. Takes every lock.
int exec_check(struct executor *ex, char *why, size_t whylen);

void exec_get_stats(struct executor *ex, struct exec_stats *st);

// The halfword of state and flags (little-endian: state is the low byte).
// EXEC_READY_WORD is a ready coroutine's (no flags), EXEC_RESIDENT_WORD the
// resident's (see struct co_queue). exec_rotate_k takes both as arguments,
// for a loop that keeps them in registers across its turns instead of forming
// them on each (user/cops.c); exec_rotate is it with the constants.
#define EXEC_READY_WORD ((uint16_t)CO_READY)
#define EXEC_RESIDENT_WORD ((uint16_t)(CO_RUNNING | CO_RESIDENT << 8))
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "EXEC_READY_WORD");
_Static_assert(offsetof(struct co, flags) == offsetof(struct co, state) + 1 &&
               offsetof(struct co, state) % 2 == 0, "state and flags: one halfword");

static inline __attribute__((always_inline)) void exec_set_word(struct co *c, uint64_t word) {
  typedef uint16_t __attribute__((may_alias)) halfword;
  *(halfword *)&c->state = (uint16_t)word;
}

// The round robin among equals, the common yield, inline so that the user
// runtime's loop takes it without calling into the vDSO (it is also the
// vDSO's own, in exec_next_on). exec_rotation_queue says whether it applies
// to an executor with one lane, l (ex->lanes, which never moves once
// exec_init has set it): prev's queue is that lane's best (the queue, or 0).
// The caller must know that the executor has one lane: the user runtime
// does, since it adds lanes itself (cops_alloc_cpu), and keeps l only while
// there is one (its loop asks the same question of a queue it keeps for as
// long as the answer can only depend on l->best). Then, when prev is the
// lane's resident (the flag: exec_next_on's own rotation, or this one, took
// it), exec_rotate does what exec_next_on(ex, 0, prev, CO_YIELD) would: prev
// becomes the tail where it is, and the head after it runs as the new
// resident; the ring keeps its ready coroutines, so no bitmap changes. The
// caller excludes everything else that may use the executor, as exec_lock1_*
// does (the user runtime: its loop's step, which its interrupt handler stays
// out of; one lane means one thread there). Inline code in user binaries
// fixes this layout: VDSO_VERSION (vdso.h) counts it.
static inline __attribute__((always_inline)) struct co_queue *
exec_rotation_queue(struct exec_lane *l, const struct co *prev) {
  struct co_queue *q = &l->ready[prev->prio];
  // (Opaque to the optimiser, so that it addresses the queue through q
  // afterwards instead of computing its address a second time.)
  __asm__("" : "+r"(q));
  if (l->best != q)
    return 0;
  if (!q)
    __builtin_unreachable();   // (a queue's address: the caller need not test it)
  return q;
}

// The resident prev becomes the tail of q, ready; it sits after the old tail
// already, whose address becomes its prev (a resident keeps none). Its state
// is stored first and the ring read after it: the user runtime's interrupt
// handler tells the loop's rotation by the running coroutine's state
// (user/cops.c, run_loop), and until that store it may still queue a
// coroutine in this ring.
static inline __attribute__((always_inline)) void exec_resident_ready(struct co_queue *q,
                                                                      struct co *prev,
                                                                      uint64_t ready_word) {
  exec_set_word(prev, ready_word);
  __asm__ volatile("" ::: "memory");
  prev->prev = q->tail;
  q->tail = prev;
}

// prev's stores come first and the head is loaded last, so that prev is dead
// before c is loaded: a loop that turns c into the next prev may then keep
// both in one register (no move per turn).
static inline __attribute__((always_inline)) struct co *
exec_rotate_k(struct co_queue *q, struct co *prev, uint64_t ready_word, uint64_t resident_word) {
  exec_resident_ready(q, prev, ready_word);
  struct co *c = prev->next;   // the head: it stays where it is, after the new tail
  exec_set_word(c, resident_word);
  return c;
}

static inline __attribute__((always_inline)) struct co *exec_rotate(struct co_queue *q,
                                                                    struct co *prev) {
  return exec_rotate_k(q, prev, EXEC_READY_WORD, EXEC_RESIDENT_WORD);
}

// Index of the lowest set bit of a non-zero word, without Zbb: isolate the lowest
// bit and look it up by a de Bruijn multiply (6 instructions, no libgcc call, no
// loop). Always defined so the host tests can check it against the builtin.
static inline uint32_t exec_ctz64_soft(uint64_t x) {
  static const uint8_t table[64] = {
    0, 1, 2, 53, 3, 7, 54, 27, 4, 38, 41, 8, 34, 55, 48, 28,
    62, 5, 39, 46, 44, 42, 22, 9, 24, 35, 59, 56, 49, 18, 29, 11,
    63, 52, 6, 26, 37, 40, 33, 47, 61, 45, 43, 21, 23, 58, 17, 10,
    51, 25, 36, 32, 60, 20, 57, 16, 50, 31, 19, 15, 30, 14, 13, 12,
  };
  return table[((x & -x) * 0x022fdd63cc95386dULL) >> 58];
}

// ctz of a non-zero byte (entry 0 unused), in executor.c.
extern const uint8_t exec_ctz8[256];

// Used for fetch-highest: the best ready priority is the lowest set bit. With the
// default 8 priorities every bitmap fits in the low byte, where a table lookup is
// 4 instructions.
static inline __attribute__((always_inline)) uint32_t exec_ctz64(uint64_t x) {
#if defined(__riscv) && !defined(__riscv_zbb)
  if (x & 0xff)
    return exec_ctz8[x & 0xff];
  return exec_ctz64_soft(x);
#else
  return (uint32_t)__builtin_ctzll(x);
#endif
}

#endif
