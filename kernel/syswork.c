// Kernel coroutines that finish the system calls that had to wait: a system
// call becomes a kernel coroutine (COPS). How, each process chooses at run time
// with setkmode; the modes are the kernel halves of the paper's server models
// (section 5):
//
//   KMODE_COROUTINE  (KC*) one stackless kernel coroutine per waiting call. It
//                    registers on the wait queue the call named (sa->wq) or a
//                    timer (sa->deadline), returns CO_PENDING, and repeats the
//                    call, without waiting, each time it is woken.
//   KMODE_THREAD     (KT*) one stackful kernel coroutine per waiting call, which
//                    repeats the call with may_block = 1 and blocks inside it,
//                    on its own 16 KiB stack, as a kernel thread does.
//   KMODE_POLLER     (KTUC) async calls go to one kernel thread per process,
//                    which holds them and, each time it is woken, tries the
//                    ones that may have progressed; synchronous calls are
//                    served as in KMODE_THREAD.
//
// A call that cannot say what it waits for (the console, wait, thread_join)
// always gets a stackful coroutine; pipes and sockets name their queue (and
// hold their file or socket while they wait), and uwait names the thread's own
// (it parks in every mode: kernel/syscall.c). Completion is the same in all
// modes: an async call's result goes to the completion ring with a user
// interrupt (kernel/ring.c); a synchronous call's result goes to the blocked
// thread's a0 and the thread becomes runnable again.
#include "sysargs.h"
#include "file.h"
#include "kco.h"
#include "klib.h"
#include "kmalloc.h"
#include "ring.h"
#include "timer.h"
#include "waitq.h"
#include "hart.h"
#include "riscv.h"
#include "trace.h"

struct worker {                // (syswork_start sets every field: keep it in step)
  struct async_worker link;  // async, own coroutine: on p->async_workers while it runs
  struct thread *t;          // the calling thread
  struct proc *p;
  struct sysargs sa;         // owns the references sa holds
  cid_t cid;                 // async: the user coroutine to complete; 0: a sync call
  uint32_t prio;
  int woken;                 // KMODE_POLLER: WOKEN_ON_STACK (notify_poller), and
                             // WOKEN_OVER: finished while on it (see result)
  union {
    struct {
      // without a stack of its own: how it waits
      struct waiter waiter;      // on `registered`
      struct waitq *registered;
      uint64_t timer_set;        // the deadline a timer has been armed for
      struct worker *next;       // on the poller's incoming list, then its calls
      // KMODE_POLLER (its poller is p->poller, which outlives every call it holds)
      struct worker **pprev;     // on the poller's calls (O(1) removal)
      struct worker *timed_next; // on its timed list: calls with a deadline
      struct worker *woken_next; // on its woken stack, pushed by notify_poller
                                 // (lock-free: a wake may come from an interrupt)
      long result;               // when over: finished while on the woken stack
    };
    struct {                     // KMODE_COROUTINE: an async pipe read, parked (below);
      struct pipe_reader pr;     // of the rest, only t, p and cid are set
      struct file *park_file;    // the read end it waits on (a reference)
      uint32_t park_slot;        // its slot in p->apark
    };
  };
};
// 256 bytes at most: one kmalloc class (the next is 512).
_Static_assert(sizeof(struct worker) <= 256, "struct worker outgrew its kmalloc class");
// syswork_start sets each field by name: a new field must be set there too.
_Static_assert(sizeof(struct worker) == 256, "struct worker changed: update syswork_start");
// ... and copies struct sysargs field by field.
_Static_assert(sizeof(struct sysargs) == 13 * 8, "struct sysargs changed: update syswork_start");
_Static_assert(sizeof(struct worker) >= RING_SPARE_BYTES, "a worker is ring_complete's spare");

// The polling kernel thread of a KMODE_POLLER process.
struct poller {
  struct async_worker link;  // exit wakes it through p->async_workers
  struct proc *p;
  cid_t cid;
  struct worker *incoming;   // new calls, guarded by p->lock
  struct worker *calls;      // the calls it holds; its own
  struct worker *timed;      // of those, the ones with a deadline (sleeps)
  struct worker *woken;      // calls whose event fired since the last pass (a stack)
  uint32_t nprio[NPRIO_DEFAULT];   // calls held at each priority
  uint64_t attempts;         // calls tried (KSTAT_POLLER_ATTEMPTS)
};

// ---- worker records: a small per-hart cache in front of kmalloc ----
// Every call that waits takes a record and gives it back when it completes;
// kmalloc, kfree and clearing cost about 470 instructions, the cache about
// 20. Each hart keeps a few freed records in slots of its own. A slot is
// claimed with one atomic exchange and filled with one compare-and-swap, so
// no lock is taken (a lock round was about 45 instructions each way): a
// coroutine that moves to another hart meanwhile, or a drain from another
// hart, only meets a slot that is taken or free as a whole. The memory
// counters drain every cache first (syswork_drain), so cached records never
// look like a leak and never hold a slab page. (kernel/hartcache.h is the
// same mechanism for other users. Written out here: through its helpers GCC
// inlined the round trip's callers differently, and the async round trip
// cost 9 to 16 instructions more.)
#define WORKER_CACHE 4
struct worker_cache {
  struct worker *free[WORKER_CACHE];   // atomic; 0: empty
} __attribute__((aligned(64)));        // (a cache line per hart)
static struct worker_cache worker_cache[BOARD_MAX_HARTS];
_Static_assert(WORKER_CACHE == 4, "the unroll pragmas below name it");

// A record from this hart's cache, or 0. (Inline: a call cost the async
// round trip, whose park takes one, 5 instructions.)
static inline __attribute__((always_inline)) struct worker *worker_cached(void) {
  struct worker_cache *c = &worker_cache[this_hart()->index];
#pragma GCC unroll 4   // (WORKER_CACHE: unrolled, no loop bound to form nor counter to keep)
  for (int i = 0; i < WORKER_CACHE; i++) {
    struct worker *w = __atomic_load_n(&c->free[i], __ATOMIC_RELAXED);
    if (w && (w = __atomic_exchange_n(&c->free[i], 0, __ATOMIC_ACQUIRE)))
      return w;
  }
  return 0;
}

// Uninitialised: syswork_start fills in every field at once.
static inline __attribute__((always_inline)) struct worker *worker_new(void) {
  struct worker *w = worker_cached();
  return w ? w : kmalloc(sizeof(struct worker));
}

static void worker_free(struct worker *w) {
  struct worker_cache *c = &worker_cache[this_hart()->index];
#pragma GCC unroll 4   // (as in worker_cached)
  for (int i = 0; i < WORKER_CACHE; i++) {
    struct worker *none = 0;
    if (!__atomic_load_n(&c->free[i], __ATOMIC_RELAXED) &&
        __atomic_compare_exchange_n(&c->free[i], &none, w, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
      return;
  }
  kfree(w);
}

void syswork_drain(void) {
  for (uint32_t i = 0; i < BOARD_MAX_HARTS; i++)
    for (int j = 0; j < WORKER_CACHE; j++) {
      struct worker *w = __atomic_exchange_n(&worker_cache[i].free[j], 0, __ATOMIC_ACQUIRE);
      if (w)
        kfree(w);
    }
}

static void unregister(struct worker *w) {
  if (w->registered)
    waitq_remove(w->registered, &w->waiter);
  w->registered = 0;
}

// An async call is over (its references released): the process has been
// running all along, so post {cid, result} to its completion ring and raise
// a user interrupt in the calling thread. If the ring is full, the completion
// waits in w's own memory (w is done with it: the ring kfrees it later).
static void complete_async(struct worker *w, long r) {
  struct proc *p = w->p;
  if (!ring_complete(w->t, w->cid, r, w))
    worker_free(w);
  proc_async_done(p);          // last: exit may free the process after this
}

// Deliver the result and free the worker.
static void finish(struct worker *w, long r) {
  struct thread *t = w->t;
  TRACE_THREAD(TR_COMPLETE, t, w->cid, r);
  unregister(w);
  sysargs_release(&w->sa);
  if (w->cid) {
    complete_async(w, r);
  } else {
    worker_free(w);
    t->uc.x[REG_A0] = (uint64_t)r;
    t->worker = 0;
    thread_make_runnable(t);
  }
}

// One attempt at w's call, never waiting. Returns the result, or WOULD_BLOCK
// with coroutine `waker` registered for the event the call waits for. The
// registration comes before the attempt that fails, so no event is lost.
// (This was once missing on the second wait: a wake unlinks the waiter, and a
// connection's third request then waited forever. socktest and the network
// tests cover repeated waits in every mode.)
static long attempt(struct worker *w, cid_t waker) {
  for (;;) {
    // A wake unlinks the waiter: register again (a no-op if still linked)
    // before the attempt.
    if (w->registered)
      waitq_add(w->registered, &w->waiter, waker);
    if (__atomic_load_n(&w->p->killed, __ATOMIC_SEQ_CST))
      return -EINTR;
    w->sa.wq = 0;
    long r = w->sa.call(w->t, &w->sa, 0);
    if (r != WOULD_BLOCK)
      return r;
    if (w->sa.deadline && w->timer_set != w->sa.deadline) {
      timer_add(w->sa.deadline, waker);
      w->timer_set = w->sa.deadline;
    }
    if (w->sa.wq == w->registered)
      return WOULD_BLOCK;
    unregister(w);               // a different queue than last time: move, then retry
    waitq_add(w->sa.wq, &w->waiter, waker);
    w->registered = w->sa.wq;
  }
}

// ---- KMODE_COROUTINE: a stackless kernel coroutine per call ----
// A synchronous call's worker names itself in t->worker, where an exit finds
// it (proc_terminate sets `killed`, then wakes t->worker), before it first
// waits; then it looks at `killed` (both sequentially consistent: one of the
// two sides sees the other). Not the submitter after the spawn: the worker may
// already have finished by then and the thread made another call, whose worker
// that late store hid from the exit. (Seen: a thread asleep in uwait for good
// after its process had exited, native cestest at 4 harts, 2 runs in 40.)
// Returns 1 if the process is being killed.
static int publish_worker(struct worker *w) {
  __atomic_store_n(&w->t->worker, kco_current(), __ATOMIC_SEQ_CST);
  return __atomic_load_n(&w->p->killed, __ATOMIC_SEQ_CST);
}

static int stackless_poll(void *arg) {
  struct worker *w = arg;
  long r = attempt(w, kco_current());
  if (r == WOULD_BLOCK && !w->cid && w->t->worker != kco_current() && publish_worker(w))
    r = attempt(w, kco_current());     // -EINTR
  if (r == WOULD_BLOCK && w->cid && !w->link.kcid) {
    // Its first wait: from now on an exit must be able to wake it, so it goes
    // on p->async_workers. (Not before: a call that completes at its first
    // poll, the common case, never needs the list.) An exit that walked the
    // list just before this set `killed` first: look at it again, so that
    // such an exit's wake is never missed (both sides hold p->lock).
    proc_async_register(w->p, &w->link, kco_current());
    if (__atomic_load_n(&w->p->killed, __ATOMIC_SEQ_CST))
      r = attempt(w, kco_current());   // -EINTR
  }
  if (r == WOULD_BLOCK)
    return CO_PENDING;
  if (w->link.kcid)
    proc_async_unregister(w->p, &w->link);
  finish(w, r);
  return CO_DONE;
}

// ---- KMODE_COROUTINE, synchronous calls: parked, with no coroutine ----
// The blocked thread needs nothing a coroutine would add: its registers keep
// the arguments, and the switcher that takes it from the run queue repeats
// the call before returning to U-mode (syscall_resume). So the call waits as
// the thread's own waiter on the queue, and the waker queues the thread
// (thread_park_notify). A spawn, a worker record, a switch into the executor
// and back, and a second run-queue pass cost about 600 instructions per wait.
int syswork_park(struct thread *t, struct sysargs *sa, long *result) {
  struct thread_park *pk = &t->park;
  while (sa->wq) {
    struct waitq *q = sa->wq;
    // Registration before the attempt, as in attempt(): no event is lost.
    __atomic_store_n(&pk->state, PARK_WAITING, __ATOMIC_RELAXED);   // (waitq_add's lock orders it)
    pk->waiter.notify = thread_park_notify;
    waitq_add(q, &pk->waiter, 0);
    long r = WOULD_BLOCK;
    if (__atomic_load_n(&t->proc->killed, __ATOMIC_SEQ_CST))
      r = -EINTR;
    else if (!sa->file || file_wait_may_be_over(sa->file, q)) {
      sa->wq = 0;                  // (the attempt names its queue again)
      r = sa->call(t, sa, 0);
    }                              // (a pipe that says nothing came: no attempt)
    if (r == WOULD_BLOCK && sa->wq == q) {
      TRACE_THREAD(TR_SUBMIT, t, 0, (long)sa->nr);
      pk->wq = q;
      pk->call = sa->call;
      pk->file = sa->file;
      pk->sock = sa->sock;
      sa->file = 0;
      sa->sock = 0;
      return 1;
    }
    waitq_remove(q, &pk->waiter);  // (a waker inside notify has left when this returns)
    __atomic_store_n(&pk->state, PARK_NONE, __ATOMIC_RELAXED);
    if (r != WOULD_BLOCK) {
      *result = r;
      return 0;
    }
  }                                // another queue: register there and try again
  return -1;
}

void syswork_unpark(struct thread *t, struct sysargs *sa) {
  struct thread_park *pk = &t->park;
  // Woken by its queue, the waiter is unlinked and its waker is done with it
  // (notify's exchange is its last touch). Otherwise (a kill, or woken while
  // it registered) it may still be linked, or a waker may be inside notify:
  // remove it under the queue's lock.
  if (__atomic_load_n(&pk->state, __ATOMIC_ACQUIRE) != PARK_WOKEN)
    waitq_remove(pk->wq, &pk->waiter);
  sa->call = pk->call;
  sa->wq = 0;                      // (the next attempt names its queue again)
  sa->deadline = 0;
  sa->file = pk->file;
  sa->sock = pk->sock;
  pk->wq = 0;
  pk->file = 0;
  pk->sock = 0;
  __atomic_store_n(&pk->state, PARK_NONE, __ATOMIC_RELAXED);
}

// ---- KMODE_COROUTINE, async reads of a pipe: parked, completed by the writer ----
// An async read of an empty pipe needs no coroutine either. Its worker parks
// on the pipe itself (struct pipe_reader, kernel/file.c), and the writer that
// brings bytes copies them into the reader's buffer while it holds the pipe's
// lock for its own copy (copyout walks the reader's page table in software),
// then, with the lock released, posts the completion to the ring and raises
// the user interrupt (apark_done). The close of the last write end does the
// same with the end of file. The spawn, the wait queue, the switcher's
// dispatch, the call's second dispatch and its lock round are gone. The copy
// is bounded (one FILE_CHUNK, as every pipe read), so doing it at the
// writer's priority instead of the call's is the trade an interrupt handler
// makes.
//
// Exit must be able to end such a call, which has no coroutine to wake: the
// process keeps its parked reads in slots (p->apark; a call that finds none
// free becomes a coroutine as before). The slot's pointer is the call's
// ownership (the pipe_reader's owner word): whoever swaps it for 0 -- a
// writer (under the pipe's lock) or exit -- completes the call; a writer
// that loses leaves it parked, and exit takes it off the pipe under that
// lock.
static struct worker *parked_worker(struct pipe_reader *r) {
  return (struct worker *)(void *)((char *)r - offsetof(struct worker, pr));
}

static void apark_free_slot(struct worker *w) {
  __atomic_fetch_and(&w->p->apark_used, ~(1ULL << w->park_slot), __ATOMIC_RELEASE);
}

// A writer (or the last close, or exit) completed the read: deliver it.
static void apark_done(struct pipe_reader *r) {
  struct worker *w = parked_worker(r);
  apark_free_slot(w);
  TRACE_THREAD(TR_COMPLETE, w->t, w->cid, w->pr.result);
  file_close(w->park_file);
  complete_async(w, w->pr.result);   // (read after the call: nothing kept across it but w)
}

// syswork_park_read with its record w (last: the arguments stay in their
// registers on the way here). Out of line, so that no call comes
// before the stores of what it is given (kmalloc's comes before, in
// syswork_park_read, when the cache is empty): they need no saved registers.
// What it needs after its own calls it reads back from w, until the park.
static __attribute__((noinline)) int park_read(struct thread *t, struct file *f, uint64_t uva,
                                               long n, cid_t cid, struct worker *w) {
  // Only what the park side uses (the record never becomes a coroutine):
  // syswork_start's full set of fields cost about 100 instructions more.
  struct proc *p = t->proc;
  w->t = t;
  w->p = p;
  w->cid = cid;
  w->park_file = f;
  w->pr.pt = p->pagetable;
  w->pr.uva = uva;
  w->pr.n = n;
  w->pr.mine = w;
  w->pr.done = apark_done;
  uint64_t used = __atomic_load_n(&p->apark_used, __ATOMIC_RELAXED);
  uint32_t slot;
  do {
    if (~used == 0) {
      worker_free(w);
      return 1;
    }
    slot = exec_ctz64(~used);
  } while (!__atomic_compare_exchange_n(&p->apark_used, &used, used | 1ULL << slot, 1,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED));
  w->park_slot = slot;
  w->pr.owner = &p->apark[slot];
  proc_async_start(p);
  // (before the park: from then on the call may complete, and t even exit,
  // on another hart)
  TRACE_THREAD(TR_SUBMIT, w->t, w->cid, (long)SYS_read);
  __atomic_store_n(w->pr.owner, w, __ATOMIC_RELEASE);
  if (pipe_park_reader(w->park_file, &w->pr)) {
    // (p, not w->p: once parked, w may be completed and freed on another
    // hart already; p stays, its thread t being in this call)
    __atomic_fetch_add(&p->apark_total, 1, __ATOMIC_RELAXED);
    return 0;
  }
  // Bytes or the end of file came after the caller looked: the read is done
  // (w->pr.result), and the call completes through the ring at once.
  *w->pr.owner = 0;              // (never parked: nobody else saw it)
  apark_done(&w->pr);
  return 0;
}

// (Out of line too: the call to kmalloc made syswork_park_read a frame.)
static __attribute__((noinline)) int park_read_kmalloc(struct thread *t, struct file *f,
                                                       uint64_t uva, long n, cid_t cid) {
  struct worker *w = kmalloc(sizeof(struct worker));
  return w ? park_read(t, f, uva, n, cid, w) : -ENOMEM;
}

int syswork_park_read(struct thread *t, struct file *f, uint64_t uva, long n, cid_t cid) {
  struct worker *w = worker_cached();
  return w ? park_read(t, f, uva, n, cid, w) : park_read_kmalloc(t, f, uva, n, cid);
}

// Exit: end every parked read of p (no thread of p runs any more).
void syswork_cancel_parked(struct proc *p) {
  uint64_t used = __atomic_load_n(&p->apark_used, __ATOMIC_ACQUIRE);
  for (; used; used &= used - 1) {
    struct worker *w = __atomic_exchange_n(&p->apark[exec_ctz64(used)], 0, __ATOMIC_ACQ_REL);
    if (!w)
      continue;                  // a writer has it
    pipe_unpark_reader(w->park_file, &w->pr);
    w->pr.result = -EINTR;
    apark_done(&w->pr);
  }
}

// ---- KMODE_THREAD: a stackful kernel coroutine that blocks in the call ----
static void stackful_main(void *arg) {
  struct worker *w = arg;
  if (w->cid)
    proc_async_register(w->p, &w->link, kco_current());
  else
    publish_worker(w);             // (its call's waits test `killed`)
  long r = w->sa.call(w->t, &w->sa, 1);
  if (w->cid)
    proc_async_unregister(w->p, &w->link);
  finish(w, r);
}

// ---- KMODE_POLLER: one polling kernel thread per process ----
// The poller holds every async call of its process. A pass tries only the
// calls that may have progressed: new ones, those whose wait queue fired (each
// call's waiter notifies the poller with a pointer to itself, notify_poller,
// instead of just waking it), and sleeps whose deadline has passed. So a wake
// costs O(calls that may have progressed), not O(calls held). (It once tried
// every call on every wake.) When the process is killed, every call is tried
// once more: each ends with -EINTR.

static void hold(struct poller *pl, struct worker *w) {
  w->next = pl->calls;
  if (pl->calls)
    pl->calls->pprev = &w->next;
  w->pprev = &pl->calls;
  pl->calls = w;
  pl->nprio[w->prio]++;
  if (w->sa.deadline) {
    w->timed_next = pl->timed;
    pl->timed = w;
  }
}

static void release(struct poller *pl, struct worker *w) {
  *w->pprev = w->next;
  if (w->next)
    w->next->pprev = w->pprev;
  pl->nprio[w->prio]--;
  for (struct worker **pp = &pl->timed; *pp; pp = &(*pp)->timed_next)
    if (*pp == w) {              // (sleeps only: a short list)
      *pp = w->timed_next;
      break;
    }
}

#define WOKEN_ON_STACK 1
#define WOKEN_OVER 2

static void notify_poller(struct waiter *wt) {
  struct worker *w = (struct worker *)(void *)((char *)wt - offsetof(struct worker, waiter));
  struct poller *pl = w->p->poller;
  if (__atomic_exchange_n(&w->woken, WOKEN_ON_STACK, __ATOMIC_ACQ_REL))
    return;                      // already on the woken stack
  struct worker *head = __atomic_load_n(&pl->woken, __ATOMIC_RELAXED);
  do
    w->woken_next = head;
  while (!__atomic_compare_exchange_n(&pl->woken, &head, w, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
  kco_wake(pl->cid);
}

// Try call w once; finish it if it is over. A finished call may still be on
// the woken stack (notified just before it stopped listening): then it is
// finished when the stack hands it back, so no pointer to it outlives it.
static void poll_one(struct poller *pl, struct worker *w) {
  if (__atomic_load_n(&w->woken, __ATOMIC_ACQUIRE) & WOKEN_OVER)
    return;
  pl->attempts++;
  long r = attempt(w, pl->cid);
  if (r == WOULD_BLOCK)
    return;
  unregister(w);                 // no notification after this
  if (__atomic_exchange_n(&w->woken, WOKEN_ON_STACK, __ATOMIC_ACQ_REL)) {
    w->result = r;               // on the stack: finished when it comes off
    __atomic_store_n(&w->woken, WOKEN_ON_STACK | WOKEN_OVER, __ATOMIC_RELEASE);
    return;
  }
  release(pl, w);
  finish(w, r);
}

static void poller_main(void *arg) {
  struct poller *pl = arg;
  struct proc *p = pl->p;
  proc_async_register(p, &pl->link, kco_current());
  for (;;) {
    spin_lock(&p->lock);
    struct worker *fresh = pl->incoming;
    pl->incoming = 0;
    int done = p->killed && !pl->calls && !fresh && !__atomic_load_n(&pl->woken, __ATOMIC_ACQUIRE);
    if (done)
      p->poller = 0;             // later calls get -EINTR (p->killed)
    spin_unlock(&p->lock);
    if (done)
      break;
    while (fresh) {              // new calls: adopt, and try once
      struct worker *w = fresh;
      fresh = w->next;
      w->waiter.notify = notify_poller;
      hold(pl, w);
      poll_one(pl, w);
    }
    // Calls whose event fired. A wake during the pass pushes again and wakes
    // this thread (the executor remembers it), so the block below returns.
    struct worker *woken = __atomic_exchange_n(&pl->woken, 0, __ATOMIC_ACQUIRE);
    while (woken) {
      struct worker *w = woken;
      woken = w->woken_next;
      if (__atomic_load_n(&w->woken, __ATOMIC_ACQUIRE) & WOKEN_OVER) {
        release(pl, w);
        finish(w, w->result);
        continue;
      }
      __atomic_store_n(&w->woken, 0, __ATOMIC_RELEASE);
      poll_one(pl, w);
    }
    uint64_t now = rdtime();
    for (struct worker *w = pl->timed, *next; w; w = next) {
      next = w->timed_next;      // (poll_one may release w)
      if (w->sa.deadline <= now)
        poll_one(pl, w);
    }
    if (p->killed)
      for (struct worker *w = pl->calls, *next; w; w = next) {
        next = w->next;
        poll_one(pl, w);
      }
    uint32_t best = NPRIO_DEFAULT - 1;
    for (uint32_t i = 0; i < NPRIO_DEFAULT; i++)
      if (pl->nprio[i]) {
        best = i;
        break;
      }
    kco_reprio_self(best);       // as urgent as the most urgent call it holds
    if (!p->killed)
      kco_block();
  }
  proc_async_unregister(p, &pl->link);
  kfree(pl);
  proc_async_done(p);            // last: exit may free the process after this
}

uint64_t syswork_poller_attempts(struct proc *p) {
  spin_lock(&p->lock);
  uint64_t n = p->poller ? p->poller->attempts : 0;
  spin_unlock(&p->lock);
  return n;
}

static int poller_submit(struct worker *w) {
  struct proc *p = w->p;
  struct poller *fresh = 0;
  spin_lock(&p->lock);
  while (!p->poller && !p->killed && !fresh) {
    spin_unlock(&p->lock);       // allocate without the lock, then look again
    fresh = kzalloc(sizeof *fresh);
    if (!fresh)
      return -ENOMEM;
    fresh->p = p;
    spin_lock(&p->lock);
  }
  if (p->killed) {
    spin_unlock(&p->lock);
    kfree(fresh);
    return -EINTR;
  }
  if (!p->poller) {
    proc_async_start(p);         // the poller itself counts as work in flight
    int64_t kcid = kco_spawn_stackful(poller_main, fresh, w->prio, 0);
    if (kcid < 0) {
      spin_unlock(&p->lock);
      kfree(fresh);
      proc_async_done(p);
      return -ENOMEM;
    }
    fresh->cid = (cid_t)kcid;
    p->poller = fresh;
    fresh = 0;
  }
  struct poller *pl = p->poller;
  w->next = pl->incoming;
  pl->incoming = w;
  cid_t cid = pl->cid;
  spin_unlock(&p->lock);
  kfree(fresh);                  // lost a race to create it
  if (w->prio < NPRIO_DEFAULT)
    kco_reprio(cid, w->prio);    // at least as urgent as this call (it lowers itself after a pass)
  kco_wake(cid);
  return 0;
}

int syswork_start(struct thread *t, struct sysargs *sa, cid_t cid, uint32_t prio) {
  struct proc *p = t->proc;
  if (cid && sa->file && sa->file->type == F_PIPE_READ && sa->nr == SYS_read &&
      __atomic_load_n(&p->kmode, __ATOMIC_RELAXED) == KMODE_COROUTINE) {
    int r = syswork_park_read(t, sa->file, sa->a[1], (long)sa->a[2], cid);
    if (r <= 0) {
      if (r == 0)
        sa->file = 0;            // the park holds it now, and may be over already
      return r;
    }
  }                              // (no free slot: a coroutine, as below)
  struct worker *w = worker_new();
  if (!w)
    return -ENOMEM;
  // Field by field (keep in step with struct worker): a memset of the whole
  // record first cost about 110 instructions on every call that waits.
  w->link.next = w->link.prev = 0;
  w->link.kcid = 0;
  w->t = t;
  w->p = p;
  // sa's own args[] are unset (the trap's sa points at t's registers): a
  // copy of the whole struct, then of the arguments, moved them twice.
  w->sa.nr = sa->nr;
  const uint64_t *a = sa->a;
  uint64_t *args = w->sa.args;   // its own copy: t's registers move on
  args[0] = a[0], args[1] = a[1], args[2] = a[2];
  args[3] = a[3], args[4] = a[4], args[5] = a[5];
  w->sa.a = args;
  w->sa.call = sa->call;
  w->sa.wq = sa->wq;
  w->sa.deadline = sa->deadline;
  w->sa.sock = sa->sock;
  w->sa.file = sa->file;
  w->cid = cid;
  w->prio = prio;
  w->woken = 0;
  int mode = __atomic_load_n(&p->kmode, __ATOMIC_RELAXED);
  if (cid)
    proc_async_start(p);
  // (before the spawn or the park: from then on t may finish its call, and
  // even exit, on another hart)
  TRACE_THREAD(TR_SUBMIT, t, cid, (long)sa->nr);
  // The union's other side (syswork_park_read sets its own).
  w->waiter.next = w->waiter.prev = 0;
  w->waiter.cid = 0;
  w->waiter.linked = 0;
  w->waiter.notify = 0;
  w->registered = 0;
  w->timer_set = 0;
  w->next = 0;
  w->pprev = 0;
  w->timed_next = w->woken_next = 0;
  w->result = 0;
  int stackless_ok = sa->wq || sa->deadline;
  int64_t kcid = 0;
  if (!stackless_ok || mode == KMODE_THREAD || (mode == KMODE_POLLER && !cid))
    kcid = kco_spawn_stackful(stackful_main, w, prio, 0);
  else if (mode == KMODE_POLLER)
    kcid = poller_submit(w);
  else
    kcid = kco_spawn(stackless_poll, w, prio);
  if (kcid < 0) {
    if (cid)
      proc_async_done(p);
    worker_free(w);
    return kcid == -EINTR ? -EINTR : -ENOMEM;
  }
  sa->sock = 0;                  // w holds the call's references now
  sa->file = 0;
  return 0;
}
