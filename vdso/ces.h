// CES (combine-and-exchange) mutex for coroutines: one source for the kernel,
// the vDSO (user coroutines) and the host tests, like the executor.
//
// When the lock is free, ces_run(m, fn, arg) runs fn(arg) inline. When it is
// held, the caller publishes a request (a node on its own stack) and blocks;
// the holder, the *combiner*, runs the queued sections back to back on its own
// hart and wakes each requester with ces_env.wake_elsewhere: the critical
// sections stay on one hart, and each requester's continuation (the parallel
// work after its section) goes to another hart. Requests are served in the
// order they were queued (strict FIFO); a combiner runs at most m->batch
// sections in one turn (its own included) and then hands the lock, with the
// duty to combine, to the next waiter, so its own continuation waits at most
// batch - 1 other sections.
//
// The lock form, ces_lock/ces_unlock, queues the caller itself: a combiner that
// reaches such a node hands the lock to it. A mutex used only through the lock
// form is therefore a FIFO hand-off mutex (each unlock passes the lock directly
// to the next waiter), the baseline the CES paper calls dispatch scheduling.
//
// The algorithm, memory ordering and fairness rule are in ces.c.
//
// Environment: the mutex reaches the scheduler only through struct ces_env,
// given at ces_init (kernel: kernel/kces.c; user: user/cops_ces.c; host
// tests: tests/host/test_ces.c). ces_run and ces_lock block, so their callers
// must be stackful coroutines; stackless ones use ces_submit/ces_poll. A
// section fn must not block and must not depend on which coroutine or hart
// runs it: under contention another coroutine runs it for the caller.
#ifndef CES_H
#define CES_H
#include <stdint.h>
#include "executor.h"

struct ces_env {
  cid_t (*current)(void);             // the calling coroutine
  void (*block)(void);                // block it until woken; may return early,
                                      // and a wake that came first is not lost
  int (*wake)(cid_t);                 // make a blocked coroutine ready
  int (*wake_elsewhere)(cid_t);       // the same, preferably on another hart
                                      // than the caller's (CES's "exchange")
  void (*relax)(uint32_t spins);      // one step of a short spin (see ces.c)
};

#define CES_BATCH_DEFAULT 16          // sections per combiner turn

// A queued request. ces_run keeps its own on the caller's stack; the lock form
// takes one from the caller, which must stay valid until ces_unlock returns.
struct ces_node {
  struct ces_node *next;              // the request queued after this one
  void (*fn)(void *);                 // the section; NULL: the lock form
  void *arg;
  cid_t cid;                          // who to wake
  volatile uint32_t state;            // enum below
};

// WAITING: queued; SLEEPING: queued, and its coroutine blocks until woken;
// DONE: its section has run; OWNER: it holds the lock now.
enum { CES_WAITING = 0, CES_DONE = 1, CES_OWNER = 2, CES_SLEEPING = 3 };

struct ces_mutex {
  struct ces_node *tail;              // the last request queued; NULL: free
  const struct ces_env *env;
  uint32_t batch;                     // at most this many sections per turn (>= 1)
  uint32_t spin;                      // polls of its node before a waiter sleeps
                                      // (ces_init sets 0: sleep at once)
  uint32_t spinners;                  // 1: some callers spin (ces_run_spin,
                                      // ces_lock_spin); see "Spinning callers"
  // Counters, written by the holder only (read them when the mutex is quiet):
  uint64_t sections;                  // critical sections run
  uint64_t combined;                  // ... of which for another coroutine
  uint64_t handoffs;                  // times the lock passed to a waiter
  uint64_t queued;                    // requests that found the lock held (atomic:
                                      // written by the requesters)
};

// batch 0 means CES_BATCH_DEFAULT.
void ces_init(struct ces_mutex *m, const struct ces_env *env, uint32_t batch);
// Run fn(arg) under m (see above). Returns when fn has run.
void ces_run(struct ces_mutex *m, void (*fn)(void *), void *arg);
// The same in two steps, for coroutines that cannot block (stackless ones):
// ces_submit returns 1 if fn has run, or 0 if the request is queued; then the
// caller waits to be woken (returns CO_PENDING) and calls ces_poll, which
// returns 1 once fn has run (it may run it, and combine, itself) and 0 while
// the request still waits. n must stay valid until then; ces_run is these
// two with n on the caller's stack.
int ces_submit(struct ces_mutex *m, struct ces_node *n, void (*fn)(void *), void *arg);
int ces_poll(struct ces_mutex *m, struct ces_node *n);
// The lock form: the caller runs its section itself between the two.
void ces_lock(struct ces_mutex *m, struct ces_node *n);
void ces_unlock(struct ces_mutex *m, struct ces_node *n);

// Spinning callers: combining without the exchange, for callers that cannot
// block (a system call's first attempt on the switcher, a stackless
// coroutine in the middle of a call chain). The caller polls its own node
// (env->relax between polls) instead of sleeping: a combiner runs its section
// for it, or hands it the lock. A mutex with such callers must set
// m->spinners (ces_init_spinning): then the lock passes at a batch limit only
// to a waiter that is still awake (a compare-and-swap from WAITING, which a
// waiter going to sleep cannot race), and a sleeping waiter's section is run
// for it instead, so no spinner ever waits behind a coroutine that must first
// be dispatched (on one hart, or with every other hart busy at better
// priorities, that dispatch might never come while the spinner holds its hart).
// The lock form is then for spinners only (ces_lock_spin): a sleeping
// lock-form waiter would have to be made owner.
void ces_init_spinning(struct ces_mutex *m, const struct ces_env *env, uint32_t batch);
void ces_run_spin(struct ces_mutex *m, void (*fn)(void *), void *arg);
void ces_lock_spin(struct ces_mutex *m, struct ces_node *n);   // release: ces_unlock
// Neither block nor spin: if m is free, run fn(arg) under it (and combine
// what queues behind meanwhile) and return 1; if it is held, return 0 with
// nothing done and nothing queued. For a caller that has somewhere better
// to wait than its own hart: the kernel's system calls hand such a call to a
// stackful kernel coroutine, which can sleep in ces_run (net/netlock.c).
int ces_try_run(struct ces_mutex *m, void (*fn)(void *), void *arg);

#endif
