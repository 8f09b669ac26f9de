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
//                    which keeps a list of them and, each time it is woken,
//                    polls every one; synchronous calls are served as in
//                    KMODE_THREAD.
//
// A call that cannot say what it waits for (the console, wait, uwait,
// thread_join) always gets a stackful coroutine; pipes and sockets name their
// queue (and hold their file or socket while they wait). Completion is the same in all
// modes: an async call's result goes to the completion ring with a user
// interrupt (kernel/ring.c); a synchronous call's result goes to the blocked
// thread's a0 and the thread becomes runnable again.
#include "sysargs.h"
#include "kco.h"
#include "klib.h"
#include "kmalloc.h"
#include "ring.h"
#include "timer.h"
#include "waitq.h"
#include "hart.h"

struct worker {
  struct async_worker link;  // async, own coroutine: on p->async_workers while it runs
  struct thread *t;          // the calling thread
  struct proc *p;
  struct sysargs sa;         // owns the references sa holds
  cid_t cid;                 // async: the user coroutine to complete; 0: a sync call
  uint32_t prio;
  // without a stack of its own: how it waits
  struct waiter waiter;      // on `registered`
  struct waitq *registered;
  uint64_t timer_set;        // the deadline a timer has been armed for
  struct worker *next;       // on the poller's lists
};

// The polling kernel thread of a KMODE_POLLER process.
struct poller {
  struct async_worker link;  // exit wakes it through p->async_workers
  struct proc *p;
  cid_t cid;
  struct worker *incoming;   // new calls, guarded by p->lock
  struct worker *calls;      // the calls it polls; its own
};

// ---- worker records: a small per-hart cache in front of kmalloc ----
// Every call that waits takes a record and gives it back when it completes (a
// pipe ping-pong: twice per round trip); kmalloc, kfree and clearing cost
// about 470 instructions, the cache about 100. Each hart keeps a few freed
// records under its own lock (uncontended: only a drain takes another hart's).
// The memory counters drain every cache first (syswork_drain), so cached
// records never look like a leak and never hold a slab page.
#define WORKER_CACHE 4
struct worker_cache {
  struct spinlock lock;
  struct worker *free[WORKER_CACHE];
  uint32_t n;
};
static struct worker_cache worker_cache[BOARD_MAX_HARTS];

static struct worker *worker_new(void) {
  struct worker_cache *c = &worker_cache[this_hart()->index];
  spin_lock(&c->lock);             // (masks interrupts: we stay on this hart)
  struct worker *w = c->n ? c->free[--c->n] : 0;
  spin_unlock(&c->lock);
  if (!w)
    return kzalloc(sizeof *w);
  memset(w, 0, sizeof *w);
  return w;
}

static void worker_free(struct worker *w) {
  struct worker_cache *c = &worker_cache[this_hart()->index];
  spin_lock(&c->lock);
  int kept = c->n < WORKER_CACHE;
  if (kept)
    c->free[c->n++] = w;
  spin_unlock(&c->lock);
  if (!kept)
    kfree(w);
}

void syswork_drain(void) {
  for (uint32_t i = 0; i < BOARD_MAX_HARTS; i++) {
    struct worker_cache *c = &worker_cache[i];
    spin_lock(&c->lock);
    while (c->n)
      kfree(c->free[--c->n]);
    spin_unlock(&c->lock);
  }
}

static void unregister(struct worker *w) {
  if (w->registered)
    waitq_remove(w->registered, &w->waiter);
  w->registered = 0;
}

// Deliver the result and free the worker.
static void finish(struct worker *w, long r) {
  struct proc *p = w->p;
  struct thread *t = w->t;
  unregister(w);
  sysargs_release(&w->sa);
  if (w->cid) {
    // The process has been running all along: post {cid, result} to its
    // completion ring and raise a user interrupt in the calling thread.
    ring_complete(t, w->cid, r);
    worker_free(w);
    proc_async_done(p);        // last: exit may free the process after this
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
static int stackless_poll(void *arg) {
  struct worker *w = arg;
  if (w->cid && !w->link.kcid)
    proc_async_register(w->p, &w->link, kco_current());   // so that exit can wake it
  long r = attempt(w, kco_current());
  if (r == WOULD_BLOCK)
    return CO_PENDING;
  if (w->cid)
    proc_async_unregister(w->p, &w->link);
  finish(w, r);
  return CO_DONE;
}

// ---- KMODE_THREAD: a stackful kernel coroutine that blocks in the call ----
static void stackful_main(void *arg) {
  struct worker *w = arg;
  if (w->cid)
    proc_async_register(w->p, &w->link, kco_current());
  long r = w->sa.call(w->t, &w->sa, 1);
  if (w->cid)
    proc_async_unregister(w->p, &w->link);
  finish(w, r);
}

// ---- KMODE_POLLER: one polling kernel thread per process ----
static void poller_main(void *arg) {
  struct poller *pl = arg;
  struct proc *p = pl->p;
  proc_async_register(p, &pl->link, kco_current());
  for (;;) {
    spin_lock(&p->lock);
    while (pl->incoming) {       // adopt new calls
      struct worker *w = pl->incoming;
      pl->incoming = w->next;
      w->next = pl->calls;
      pl->calls = w;
    }
    int done = p->killed && !pl->calls;
    if (done)
      p->poller = 0;             // later calls get -EINTR (p->killed)
    spin_unlock(&p->lock);
    if (done)
      break;
    // Poll every waiting call once. A call's event that fires during the pass
    // wakes this thread, and the executor remembers that wake, so the block
    // below returns at once and the pass repeats.
    uint32_t best = NPRIO_DEFAULT - 1;
    for (struct worker **pp = &pl->calls; *pp;) {
      struct worker *w = *pp;
      long r = attempt(w, kco_current());
      if (r == WOULD_BLOCK) {
        best = w->prio < best ? w->prio : best;
        pp = &w->next;
      } else {
        *pp = w->next;
        finish(w, r);
      }
    }
    kco_reprio_self(best);   // as urgent as the most urgent call it holds
    if (!p->killed)
      kco_block();
  }
  proc_async_unregister(p, &pl->link);
  kfree(pl);
  proc_async_done(p);            // last: exit may free the process after this
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
  struct worker *w = worker_new();
  if (!w)
    return -ENOMEM;
  w->t = t;
  w->p = p;
  w->sa = *sa;
  w->cid = cid;
  w->prio = prio;
  int mode = __atomic_load_n(&p->kmode, __ATOMIC_RELAXED);
  int stackless_ok = sa->wq || sa->deadline;
  if (cid)
    proc_async_start(p);
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
  if (!cid && kcid > 0)
    t->worker = (cid_t)kcid;
  sa->sock = 0;                  // w holds the call's references now
  sa->file = 0;
  return 0;
}
