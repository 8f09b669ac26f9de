// The COPS API for user programs (user/cops.c), on top of the shared executor in
// the vDSO. Every program's main() already runs as a stackful coroutine of its
// process's executor; these calls add more, of either kind.
//
//   stackless: cops_spawn(poll, arg, prio): poll returns CO_PENDING (block until
//              woken), CO_YIELD (run again later) or CO_DONE (finished)
//   stackful:  cops_spawn_stackful(fn, arg, prio): fn may call cops_yield and
//              cops_block at any depth (CACS switch)
// Priorities run from 0 (highest) to COPS_NPRIO - 1. A wake that arrives while
// its target is still running is remembered, so "wake before block" is safe;
// a wake with a stale or foreign cid fails with a negative value.
#ifndef COPS_H
#define COPS_H
#include <stdint.h>
#include <stddef.h>
#include "executor.h"
#include "ces.h"
#include "stackful.h"

#define COPS_NPRIO NPRIO_DEFAULT
#define COPS_MAIN_PRIO 4                // main() starts at this priority
#define COPS_STACK_SIZE (16 * 1024)     // stack of a stackful coroutine

int64_t cops_spawn(co_poll_fn poll, void *arg, uint32_t prio);    // cid, or < 0
int64_t cops_spawn_stackful(void (*fn)(void *), void *arg, uint32_t prio);
// The same with a stack of size bytes (at least COPS_STACK_MIN): a server with
// thousands of coroutines gives each what it measured it needs (cops_stack_used).
#define COPS_STACK_MIN 2048
int64_t cops_spawn_stackful_sized(void (*fn)(void *), void *arg, uint32_t prio, size_t size);
// Set cops_paint_stacks before spawning to fill new stacks with a pattern;
// then cops_stack_used says how deep the calling stackful coroutine's stack
// has ever been (bytes; 0 when not painted or not stackful). User interrupts
// run on the interrupted stack, so their frames count too.
extern int cops_paint_stacks;
size_t cops_stack_used(void);
cid_t cops_current(void);
int cops_wake(cid_t cid);               // 1 made ready, 0 absorbed, < 0 stale
int cops_reprio(cid_t cid, uint32_t prio);
// cops_yield (stackful coroutines and main only) and cops_block (returns once
// woken) are below: inline, because they switch by CACS (vdso/stackful.h),
// which saves only what is live where it is written.
int cops_check(char *why, size_t len);  // the executor's invariants; 0 = hold
void cops_stats(struct exec_stats *st);

// The asynchronous form of a system call that may wait (SYS_read, SYS_write,
// SYS_sleep, SYS_wait; up to three arguments). Only the calling coroutine waits:
// the process keeps running its other coroutines. Returns the call's result.
// The caller must be a stackful coroutine (main is one).
// (Inline below: cops_async_submit makes the call, the caller waits.)
struct cops_op {                        // an async call's entry in the operation table (cops.c)
  volatile cid_t cid;                   // the waiting caller's cid, 0 once completed
  long result;
};
// The call's entry; bit 0 set when it is over already (the result is in it).
uintptr_t cops_async_submit(uint64_t nr, long a0, long a1, long a2);
uint64_t cops_uintr_count(void);        // user interrupts taken so far
uint64_t cops_uintr_entry_instret(void); // instret when the handler last began (benchmarks)
// COPS alloc_cpu: add n threads that run this process's executor too, so its
// coroutines can run on up to n + 1 harts at once. Returns how many were added.
int cops_alloc_cpu(int n);
int cops_thread_index(void);            // 0 for the main thread, 1.. for alloc_cpu's
// Tests only: while held, completions are left in the ring (as if the process
// were busy in the runtime), so it can be made to overflow.
void cops_hold_completions(int hold);

// CES mutexes (user/cops_ces.c over vdso/ces.h), for stackful coroutines on
// any of the process's threads. Contended sections run back to back on the
// thread that holds the mutex, and each waiter's continuation goes back to
// the executor, where any thread may take it.
//   cops_ces_run(m, fn, arg): run fn(arg) under m (fn must not block)
//   cops_mutex_lock/unlock(m, &node): the caller runs its section itself;
//     the node (any storage) must live until the unlock returns
//   cops_ces_submit/poll(m, &node, ...): cops_ces_run in two steps, for
//     stackless coroutines: 0 from either means "queued: return CO_PENDING
//     and poll again when woken"; 1 means fn has run (vdso/ces.h)
typedef struct ces_mutex cops_mutex_t;
typedef struct ces_node cops_mutex_node_t;
int cops_mutex_init(cops_mutex_t *m);   // 0, or -ENOSYS (the vDSO has no CES)
void cops_ces_run(cops_mutex_t *m, void (*fn)(void *), void *arg);
void cops_mutex_lock(cops_mutex_t *m, cops_mutex_node_t *n);
void cops_mutex_unlock(cops_mutex_t *m, cops_mutex_node_t *n);
int cops_ces_submit(cops_mutex_t *m, cops_mutex_node_t *n, void (*fn)(void *), void *arg);
int cops_ces_poll(cops_mutex_t *m, cops_mutex_node_t *n);

// Called by crt0: set up the executor, run main as the first coroutine, return
// main's status when it finishes.
int cops_start(int argc, char **argv);

// The calling coroutine's stackful record. tp points at the thread's runtime
// state, whose first word is the coroutine it runs (user/cops.c).
static inline __attribute__((always_inline)) struct stackful *cops_stackful_self(void) {
  struct co *cur;
  // (Loaded off tp in one instruction: C would copy tp to another register
  // first. Volatile, so that it is not moved across the switches, which are.)
  __asm__ volatile("ld %0, 0(tp)" : "=r"(cur));
  return (struct stackful *)cur->arg;
}

// Every user coroutine switches by CACS (cops.c makes them so): suspend to
// the executor loop straight from the call site.
static inline __attribute__((always_inline)) void cops_yield(void) {
  stackful_suspend_cacs(cops_stackful_self(), CO_YIELD);
}

static inline __attribute__((always_inline)) void cops_block(void) {
  stackful_suspend_cacs(cops_stackful_self(), CO_PENDING);
}

// The wait blocks before it looks: a completion that was drained already has
// woken the caller while it ran, and the executor remembered that wake, so
// the block returns at once. Inline, so that the switch saves only what is
// live in the caller. s is what cops_async_submit returned: a caller may keep
// the call's entry meanwhile (its cid is 0 once the call is over).
static inline __attribute__((always_inline)) long cops_async_wait(uintptr_t s) {
  struct cops_op *o = (struct cops_op *)(s & ~(uintptr_t)1);
  if (__builtin_expect(!(s & 1), 1)) {
    // (Only a completion stores 0 there, and only the caller its cid.)
    do
      cops_block();
    while (__atomic_load_n(&o->cid, __ATOMIC_ACQUIRE) != 0);
  }
  return o->result;
}

static inline __attribute__((always_inline)) long cops_async(uint64_t nr, long a0, long a1, long a2) {
  return cops_async_wait(cops_async_submit(nr, a0, a1, a2));
}

#endif
