// cestest: the CES mutex (cops_ces_run, cops_mutex_lock/unlock, and the
// two-step cops_ces_submit/poll) from user coroutines on two threads
// (alloc_cpu; run with 2 harts or more). Eight stackful coroutines each make
// 2,000 requests on one mutex, every fourth in the lock form with the holder
// sometimes yielding inside (so requests queue behind it and are combined
// even when only one thread runs); two stackless ones make theirs in two
// steps. Checks: no two sections overlap, a counter updated without atomics
// inside them ends at the number of requests, every request ran exactly
// once, each coroutine's requests ran in its order and each thread's in the
// order that thread queued them, and coroutines ran on both threads. Waits
// for events only (a 30 s safety net).
#include "cops.h"
#include "ulib.h"
#include "utest.h"
#include "../tests/ces_check.h"

#define NCO 8                                 // stackful: run and lock forms
#define NSL 2                                 // stackless: submit and poll
#define NOPS 2000
#define NTHREADS 2

static cops_mutex_t m;
static cid_t main_cid;
static volatile int done;
static struct ces_check chk;
static unsigned char ran[NCO + NSL][NOPS];
static volatile int ran_on[NTHREADS];
static uint64_t ticket[NTHREADS];             // per thread: requests queued from it
static struct ces_check_stackless sl[NSL];

static uint32_t thread_slot(void) { return cops_thread_index() ? 1 : 0; }

static void section(void *arg) {
  struct ces_check_req *r = arg;
  ces_check_section(&chk, r);
  ran[r->co][r->seq]++;
}

static void finished(void) {
  if (__atomic_add_fetch(&done, 1, __ATOMIC_SEQ_CST) == NCO + NSL)
    cops_wake(main_cid);
}

static void worker(void *arg) {
  int co = (int)(long)arg;
  for (int i = 0; i < NOPS; i++) {
    // The ticket is taken on the thread that queues the request; no other
    // coroutine of that thread runs in between.
    struct ces_check_req r = { .co = co, .seq = i, .queue = thread_slot() };
    r.ticket = ++ticket[r.queue];
    __atomic_fetch_add(&ran_on[r.queue], 1, __ATOMIC_RELAXED);
    if (i % 4 == 3) {
      cops_mutex_node_t n;
      cops_mutex_lock(&m, &n);
      if (i % 16 == 15)
        cops_yield();                         // hold the lock across a switch
      section(&r);
      cops_mutex_unlock(&m, &n);
    } else {
      cops_ces_run(&m, section, &r);
    }
  }
  // End only once coroutines have run on both threads: when the added
  // thread's hart gets going depends on the host, so wait for that event.
  long until = uptime() + 30000;
  while ((ran_on[0] == 0 || ran_on[1] == 0) && uptime() < until) {
    __atomic_fetch_add(&ran_on[thread_slot()], 1, __ATOMIC_RELAXED);
    cops_yield();
  }
  finished();
}

static int stackless_worker(void *arg) {
  struct ces_check_stackless *w = arg;
  __atomic_fetch_add(&ran_on[thread_slot()], 1, __ATOMIC_RELAXED);
  int r = ces_check_stackless_poll(w);
  if (r == CO_DONE)
    finished();
  return r;
}

int main(void) {
  utest_prog = "cestest";
  main_cid = cops_current();
  check("mutex-init", cops_mutex_init(&m), 0);
  check("alloc-cpu-1", cops_alloc_cpu(1), 1);
  ces_check_reset(&chk);
  for (long i = 0; i < NCO; i++)
    cops_spawn_stackful(worker, (void *)i, 3);
  for (int i = 0; i < NSL; i++) {
    sl[i] = (struct ces_check_stackless){ .m = &m, .submit = cops_ces_submit, .poll = cops_ces_poll,
      .section = section, .queue = thread_slot, .tickets = ticket, .co = NCO + i, .ops = NOPS };
    cops_spawn(stackless_worker, &sl[i], 3);
  }
  while (done < NCO + NSL)
    cops_block();
  check("counter-equals-requests", (long)chk.counter, (long)(NCO + NSL) * NOPS);
  check("no-overlapping-sections", chk.overlaps, 0);
  int bad = 0;
  for (int c = 0; c < NCO + NSL; c++)
    for (int i = 0; i < NOPS; i++)
      bad += ran[c][i] != 1;
  check("every-request-ran-exactly-once", bad, 0);
  check("coroutine-order-kept", chk.order_errors, 0);
  check("thread-queue-order-kept", chk.queue_order_errors, 0);
  check("mutex-free-at-end", m.tail == 0, 1);
  check("sections-counted", (long)m.sections, (long)(NCO + NSL) * NOPS);
  check("some-requests-combined", m.combined > 0, 1);
  check("main-thread-ran-coroutines", ran_on[0] > 0, 1);
  check("added-thread-ran-coroutines", ran_on[1] > 0, 1);
  printf("cestest: %lu sections, %lu combined, %lu hand-offs\n", (unsigned long)m.sections,
         (unsigned long)m.combined, (unsigned long)m.handoffs);
  char why[120];
  check("executor-invariants", cops_check(why, sizeof why), 0);
  return utest_summary();
}
