// The COPS executor: one priority-bitmap scheduler for coroutines, shared by the
// kernel and (through the vDSO) by user processes. This header is the whole
// interface; vdso/executor.c is the single implementation both sides link.
//
// Model (docs/DESIGN.md, "Execution model"):
//   - NPRIO priorities, 0 highest. Ready coroutines wait in one intrusive FIFO per
//     priority; bit p of `bitmap` is set exactly when queue p is non-empty, so the
//     best ready priority is count-trailing-zeros(bitmap): O(1) fetch-highest.
//   - A coroutine is a poll function + argument. The executor calls poll(arg);
//     poll returns CO_YIELD (run me again later), CO_PENDING (block until woken) or
//     CO_DONE (exit). Stackful coroutines are built on top (vdso/stackful.h): their
//     poll switches onto their own stack.
//   - A cid names a coroutine: slot index in the low 32 bits, the slot's generation
//     in the high 32. Exiting bumps the generation, so a stale cid never matches a
//     reused slot. cid 0 is never valid.
//   - No lost wakeup: waking a coroutine that is still running (it has decided to
//     block but has not returned PENDING yet) sets wake_pending, and the executor
//     requeues it instead of blocking it.
//
// Concurrency: every operation takes the executor's lock, so several harts (or
// threads) may run the loop and call spawn/wake/reprio at once. How the lock is
// taken is environment-specific and comes from "exec_arch.h" (the kernel's masks
// interrupts while it holds the lock so that interrupt handlers may call wake).
#ifndef EXECUTOR_H
#define EXECUTOR_H
#include <stdint.h>
#include <stddef.h>

#define NPRIO_MAX 64        // one uint64_t bitmap describes an executor
#define NPRIO_DEFAULT 8

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

typedef int (*co_poll_fn)(void *arg);

// Coroutine control block: 48 bytes. It lives in the executor's slot table, so a
// cid resolves to it by indexing, never by searching.
struct co {
  struct co *next, *prev;   // ready-queue links; `next` also links the free list
  co_poll_fn poll;
  void *arg;
  uint32_t gen;             // generation of this slot; part of the cid
  uint32_t slot;            // index in the slot table
  uint8_t prio;
  uint8_t state;            // enum co_state
  uint8_t wake_pending;     // woken while running: requeue instead of blocking
  uint8_t kind;             // enum co_kind, informational
  uint32_t reserved;
};

struct co_queue {
  struct co *head, *tail;
};

#define EXEC_CHUNK_SLOTS 256    // slots per table chunk: 256 * 48 B = 12 KiB

struct exec_stats {
  uint64_t spawned, exited, wakes, stale_wakes, wakes_remembered;
  uint32_t live, slots;
  uint32_t ready, running, blocked;   // filled in by exec_get_stats (a table walk)
};

struct executor {
  volatile uint64_t lock;             // 64-bit: amoswap.d needs no sign extension
  uint32_t nprio;
  uint64_t bitmap;                    // bit p <=> ready[p] non-empty
  struct co_queue ready[NPRIO_MAX];
  struct co **chunks;                 // chunk directory: slot s is chunks[s/256][s%256]
  uint32_t nchunks, chunk_cap;
  struct co *free_list;               // FREE slots, linked through `next`
  struct exec_stats st;
  void *(*alloc)(size_t);             // memory for chunks (kmalloc in the kernel)
  void (*free)(void *);
};

// Set up an empty executor with nprio priorities (1..NPRIO_MAX).
int exec_init(struct executor *ex, uint32_t nprio, void *(*alloc)(size_t), void (*free)(void *));
// Grow the slot table to at least `slots` slots now (it grows by itself when
// full; reserving up front keeps a peak of live coroutines from changing the
// memory counters that leak tests compare). 0 or EXEC_ENOMEM.
int exec_reserve(struct executor *ex, uint32_t slots);
// Free the slot table. Only valid when no coroutine is live.
void exec_destroy(struct executor *ex);

// Create a ready coroutine. Returns its cid, or a negative EXEC_* error.
int64_t exec_spawn(struct executor *ex, co_poll_fn poll, void *arg, uint32_t prio, enum co_kind kind);

// Make a blocked coroutine ready. Returns 1 if it became ready, 0 if the wake was
// absorbed (already ready, or running: then it is remembered), EXEC_ESTALE otherwise.
int exec_wake(struct executor *ex, cid_t cid);

// Change a coroutine's priority; a ready one moves to the tail of its new queue.
int exec_reprio(struct executor *ex, cid_t cid, uint32_t prio);

// The loop's single locked step: settle the coroutine that just ran (prev, with the
// value its poll returned), then take the best ready coroutine and mark it running.
// Returns NULL when nothing is ready. prev may be NULL.
struct co *exec_next(struct executor *ex, struct co *prev, int prev_result);

// Priority of the best ready coroutine, or NPRIO_MAX when none is ready.
uint32_t exec_best_prio(const struct executor *ex);

// Look up a live coroutine's control block (NULL for a stale or bad cid).
// The pointer is only stable while the coroutine cannot exit concurrently.
struct co *exec_lookup(struct executor *ex, cid_t cid);
cid_t co_cid(const struct co *c);
static inline cid_t co_cid_inline(const struct co *c) { return ((cid_t)c->gen << 32) | c->slot; }

// Walk every structure and check the invariants: bit p <=> queue p non-empty, every
// queued coroutine is READY with that priority, every slot is in exactly one of
// {ready queue, blocked, running, free list}, counters match. Returns 0 when all
// hold, else -1 with a reason in why. Takes the lock.
int exec_check(struct executor *ex, char *why, size_t whylen);

void exec_get_stats(struct executor *ex, struct exec_stats *st);

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
static inline uint32_t exec_ctz64(uint64_t x) {
#if defined(__riscv) && !defined(__riscv_zbb)
  if (x & 0xff)
    return exec_ctz8[x & 0xff];
  return exec_ctz64_soft(x);
#else
  return (uint32_t)__builtin_ctzll(x);
#endif
}

#endif
