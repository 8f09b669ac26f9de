// Host unit tests of the CES mutex's request queue (vdso/ces.c), under ASan +
// UBSan. Host threads stand in for coroutines: "block" is sched_yield (a
// waiter re-checks its node after every return, as after a spurious wake), and
// the wakes are counted. Ordering tests queue requests one at a time, each
// only after the previous one is visibly in the queue, so the expected order
// is known without any timing assumption.
#include "check.h"
#include "ces.h"
#include "../ces_check.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <time.h>
#include <stdint.h>

static _Thread_local cid_t my_cid;
static uint64_t wakes, wakes_elsewhere;

static cid_t host_current(void) { return my_cid; }
static void host_block(void) { sched_yield(); }
static int host_wake(cid_t c) { (void)c; __atomic_fetch_add(&wakes, 1, __ATOMIC_SEQ_CST); return 1; }
static int host_wake_elsewhere(cid_t c) {
  (void)c;
  __atomic_fetch_add(&wakes_elsewhere, 1, __ATOMIC_SEQ_CST);
  return 1;
}
static void host_relax(uint32_t spins) { (void)spins; sched_yield(); }

static const struct ces_env host_env = {
  .current = host_current, .block = host_block, .wake = host_wake,
  .wake_elsewhere = host_wake_elsewhere, .relax = host_relax,
};

static void reset_counts(void) { wakes = wakes_elsewhere = 0; }

// ---- a section that logs which request ran, and on which "coroutine" ----
#define MAXREQ 16
static int order[MAXREQ], ran_by[MAXREQ], nlog;
struct req { int id; };
static void log_section(void *arg) {
  struct req *r = arg;
  order[nlog] = r->id;
  ran_by[nlog] = (int)my_cid;
  nlog++;
}

static void test_uncontended_runs_inline(void) {
  struct ces_mutex m;
  ces_init(&m, &host_env, 0);
  CHECK_EQ(m.batch, CES_BATCH_DEFAULT);
  reset_counts();
  nlog = 0;
  my_cid = 7;
  struct req r = { 1 };
  ces_run(&m, log_section, &r);
  CHECK_EQ(nlog, 1);
  CHECK_EQ(ran_by[0], 7);
  CHECK(m.tail == 0);
  CHECK_EQ(m.sections, 1);
  CHECK_EQ(m.combined, 0);
  CHECK_EQ(wakes + wakes_elsewhere, 0);
  struct ces_node n;
  ces_lock(&m, &n);
  CHECK(m.tail == &n);
  ces_unlock(&m, &n);
  CHECK(m.tail == 0);
  CHECK_EQ(m.sections, 2);
}

// Each requester thread: cid = its index + 100, then one request or a lock.
struct requester { struct ces_mutex *m; struct req r; int lock_form; pthread_t t; };
static void *requester_main(void *arg) {
  struct requester *q = arg;
  my_cid = (cid_t)(q->r.id + 100);
  if (q->lock_form) {
    struct ces_node n;
    ces_lock(q->m, &n);
    log_section(&q->r);
    ces_unlock(q->m, &n);
  } else {
    ces_run(q->m, log_section, &q->r);
  }
  return 0;
}

// Start requesters first..first+n-1 in order, each once the previous one is
// queued and asleep (its node is the tail, in state SLEEPING: it stays alive
// while the caller holds the lock, so reading it is safe).
static void queue_in_order(struct ces_mutex *m, struct requester *q, int first, int n, int lock_form) {
  for (int i = first; i < first + n; i++) {
    struct ces_node *before = __atomic_load_n(&m->tail, __ATOMIC_SEQ_CST), *t;
    q[i] = (struct requester){ .m = m, .r = { i }, .lock_form = lock_form };
    pthread_create(&q[i].t, 0, requester_main, &q[i]);
    while ((t = __atomic_load_n(&m->tail, __ATOMIC_SEQ_CST)) == before ||
           __atomic_load_n(&t->state, __ATOMIC_SEQ_CST) != CES_SLEEPING)
      sched_yield();
  }
}

// The main thread (cid 1) takes the lock; then nrun run-form requests and
// after them nlock lock-form requesters queue in that order (ids 0, 1, ...);
// then it unlocks, which makes it the combiner, and waits for them all.
static void queue_behind_holder(struct ces_mutex *m, uint32_t batch, int nrun, int nlock) {
  static struct requester q[MAXREQ];
  ces_init(m, &host_env, batch);
  reset_counts();
  nlog = 0;
  my_cid = 1;
  struct ces_node own;
  ces_lock(m, &own);
  queue_in_order(m, q, 0, nrun, 0);
  queue_in_order(m, q, nrun, nlock, 1);
  ces_unlock(m, &own);
  for (int i = 0; i < nrun + nlock; i++)
    pthread_join(q[i].t, 0);
}

// Ten requests queue behind the holder. With a batch of 4 it runs its own
// section and three requests, then hands the lock to request 3, which runs
// its own and three more and hands on to request 7, which finishes the queue.
// Every section runs exactly once, in queue order.
// ces_try_run: runs at once when free; when held, nothing is run or queued
// (the tail stays the holder's) and the caller is not blocked.
static void test_try_run_never_queues(void) {
  struct ces_mutex m;
  ces_init(&m, &host_env, 0);
  reset_counts();
  nlog = 0;
  my_cid = 3;
  struct req r = { 1 };
  CHECK_EQ(ces_try_run(&m, log_section, &r), 1);
  CHECK_EQ(nlog, 1);
  CHECK(m.tail == 0);
  struct ces_node held;
  ces_lock(&m, &held);
  CHECK_EQ(ces_try_run(&m, log_section, &r), 0);
  CHECK_EQ(nlog, 1);
  CHECK(m.tail == &held);
  CHECK(held.next == 0);
  CHECK_EQ(m.queued, 0);
  ces_unlock(&m, &held);
  CHECK(m.tail == 0);
  CHECK_EQ(ces_try_run(&m, log_section, &r), 1);
  CHECK_EQ(nlog, 2);
  CHECK_EQ(m.sections, 3);
  CHECK_EQ(wakes + wakes_elsewhere, 0);
}

static void test_fifo_order_and_batch_rule(void) {
  struct ces_mutex m;
  queue_behind_holder(&m, 4, 10, 0);
  CHECK_EQ(nlog, 10);
  static const int want_by[10] = { 1, 1, 1, 103, 103, 103, 103, 107, 107, 107 };
  for (int i = 0; i < 10 && nlog == 10; i++) {
    CHECK_EQ(order[i], i);
    CHECK_EQ(ran_by[i], want_by[i]);
    check_context(" [position %d]", i);
  }
  CHECK(m.tail == 0);
  CHECK_EQ(m.sections, 11);
  CHECK_EQ(m.combined, 8);
  CHECK_EQ(m.handoffs, 2);
  CHECK_EQ(wakes, 2);              // the two new combiners
  CHECK_EQ(wakes_elsewhere, 8);    // the requests others ran
}

// Only the lock form: every unlock passes the lock straight to the next
// waiter, in queue order (a FIFO hand-off mutex); nothing is combined.
static void test_lock_form_is_fifo_handoff(void) {
  struct ces_mutex m;
  queue_behind_holder(&m, 4, 0, 8);
  CHECK_EQ(nlog, 8);
  for (int i = 0; i < 8 && nlog == 8; i++) {
    CHECK_EQ(order[i], i);
    CHECK_EQ(ran_by[i], 100 + i);
  }
  CHECK_EQ(m.handoffs, 8);
  CHECK_EQ(m.combined, 0);
  CHECK_EQ(wakes, 8);
  CHECK_EQ(wakes_elsewhere, 0);
  CHECK(m.tail == 0);
}

// A lock-form waiter behind run-form requests: the combiner runs the requests
// before it, then hands it the lock even though the batch is not used up.
static void test_lock_form_node_stops_combining(void) {
  struct ces_mutex m;
  queue_behind_holder(&m, 16, 2, 1);
  CHECK_EQ(nlog, 3);
  CHECK_EQ(ran_by[0], 1);
  CHECK_EQ(ran_by[1], 1);
  CHECK_EQ(order[2], 2);
  CHECK_EQ(ran_by[2], 102);          // the lock-form requester ran its own section
  CHECK_EQ(m.handoffs, 1);
  CHECK_EQ(m.combined, 2);
}

// The two-step form for coroutines that cannot block, on one thread: while
// the lock is held a submit queues (0) and polls say 0; the holder's unlock
// runs the section and then a poll says 1. With a batch of 1 the unlock hands
// the lock over instead, and the poll runs the section itself. A second poll
// never runs it again.
static void test_submit_poll_stackless_form(void) {
  struct ces_mutex m;
  for (uint32_t batch = 1; batch <= 2; batch++) {
    ces_init(&m, &host_env, batch);
    reset_counts();
    nlog = 0;
    my_cid = 1;
    struct ces_node own, n;
    ces_lock(&m, &own);
    my_cid = 2;
    struct req r = { 5 };
    CHECK_EQ(ces_submit(&m, &n, log_section, &r), 0);
    CHECK_EQ(ces_poll(&m, &n), 0);
    CHECK_EQ(nlog, 0);
    my_cid = 1;
    ces_unlock(&m, &own);
    CHECK_EQ(nlog, batch == 2 ? 1 : 0);   // combined by the holder, or not yet
    my_cid = 2;
    CHECK_EQ(ces_poll(&m, &n), 1);
    CHECK_EQ(ces_poll(&m, &n), 1);
    CHECK_EQ(nlog, 1);
    CHECK_EQ(ran_by[0], batch == 2 ? 1 : 2);
    CHECK_EQ(wakes, batch == 2 ? 0 : 1);
    CHECK_EQ(wakes_elsewhere, batch == 2 ? 1 : 0);
    CHECK(m.tail == 0);
    CHECK_EQ(m.sections, 2);
    check_context(" [batch %u]", batch);
  }
}

// ---- stress: threads hammer one mutex in both forms ----
#define STRESS_THREADS 4
#define STRESS_OPS 20000
static struct ces_mutex stress_m;
static struct ces_check chk;
static uint8_t ran_count[STRESS_THREADS][STRESS_OPS];

static int stress_spinners;                  // the mix with spinning callers

static void stress_section(void *arg) {
  struct ces_check_req *r = arg;
  ces_check_section(&chk, r);
  ran_count[r->co][r->seq]++;
  // With spinners, every 64th section holds on until another request has
  // queued behind it (or a bounded number of polls has passed), so that the
  // hand-over rule is exercised even when the host runs the threads in turns.
  if (stress_spinners && r->seq % 64 == 0)
    for (uint64_t q = __atomic_load_n(&stress_m.queued, __ATOMIC_RELAXED), k = 0;
         k < 200 && __atomic_load_n(&stress_m.queued, __ATOMIC_RELAXED) == q; k++)
      sched_yield();
}

static pthread_barrier_t stress_start;

static void *stress_main(void *arg) {
  int t = (int)(intptr_t)arg;
  my_cid = (cid_t)(t + 1);
  pthread_barrier_wait(&stress_start);       // all threads at once: contention
  for (int i = 0; i < STRESS_OPS; i++) {
    for (volatile int k = 0; k < 50; k++)    // some work outside the lock
      ;
    // each thread is one coroutine and one queue; its requests in order
    struct ces_check_req r = { .co = t, .seq = i, .queue = (uint32_t)t, .ticket = (uint64_t)i + 1 };
    if (stress_spinners && i % 3 == 1) {
      ces_run_spin(&stress_m, stress_section, &r);
    } else if (stress_spinners && i % 3 == 2) {
      struct ces_node n;
      ces_lock_spin(&stress_m, &n);
      stress_section(&r);
      ces_unlock(&stress_m, &n);
    } else if (i % 3 == 2) {
      struct ces_node n;
      ces_lock(&stress_m, &n);
      stress_section(&r);
      ces_unlock(&stress_m, &n);
    } else {
      ces_run(&stress_m, stress_section, &r);
    }
  }
  return 0;
}

// Waiters that really sleep: block waits on the thread's semaphore until a
// wake posts it, so a lost wake shows as a wait that times out (the safety
// net; a healthy run never comes near it), and a wake sent to a thread that
// never slept stays behind as a count on its semaphore.
static sem_t sleep_sem[STRESS_THREADS + 1];
static uint32_t lost_wakes;
static void sem_block(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += 30;
  while (sem_timedwait(&sleep_sem[my_cid], &ts) != 0)
    if (errno != EINTR) {
      __atomic_fetch_add(&lost_wakes, 1, __ATOMIC_SEQ_CST);
      return;
    }
}
static int sem_wake(cid_t c) { sem_post(&sleep_sem[c]); return 1; }
static const struct ces_env sleeping_env = {
  .current = host_current, .block = sem_block, .wake = sem_wake,
  .wake_elsewhere = sem_wake, .relax = host_relax,
};
// env->wake is only ever a hand-over of the lock to a sleeping waiter.
static uint32_t owner_wakes;
static int sem_wake_owner(cid_t c) {
  __atomic_fetch_add(&owner_wakes, 1, __ATOMIC_SEQ_CST);
  return sem_wake(c);
}
static const struct ces_env spinning_env = {
  .current = host_current, .block = sem_block, .wake = sem_wake_owner,
  .wake_elsewhere = sem_wake, .relax = host_relax,
};

static void stress(const struct ces_env *env) {
  if (stress_spinners)                       // batch 1: every turn ends at a hand-over
    ces_init_spinning(&stress_m, env, 1);
  else
    ces_init(&stress_m, env, 8);
  ces_check_reset(&chk);
  memset(ran_count, 0, sizeof ran_count);
  pthread_t th[STRESS_THREADS];
  pthread_barrier_init(&stress_start, 0, STRESS_THREADS);
  for (int t = 0; t < STRESS_THREADS; t++)
    pthread_create(&th[t], 0, stress_main, (void *)(intptr_t)t);
  for (int t = 0; t < STRESS_THREADS; t++)
    pthread_join(th[t], 0);
  pthread_barrier_destroy(&stress_start);
  CHECK_EQ(chk.counter, (uint64_t)STRESS_THREADS * STRESS_OPS);
  CHECK_EQ(chk.overlaps, 0);
  CHECK_EQ(chk.order_errors, 0);
  CHECK_EQ(chk.queue_order_errors, 0);
  int bad = 0;
  for (int t = 0; t < STRESS_THREADS; t++)
    for (int i = 0; i < STRESS_OPS; i++)
      bad += ran_count[t][i] != 1;
  CHECK_EQ(bad, 0);
  CHECK(stress_m.tail == 0);
  CHECK_EQ(stress_m.sections, (uint64_t)STRESS_THREADS * STRESS_OPS);
  printf("info test_ces/stress%s: %lu sections, %lu queued, %lu combined, %lu hand-offs\n",
         stress_spinners ? " (spinners)" : "", (unsigned long)stress_m.sections,
         (unsigned long)stress_m.queued, (unsigned long)stress_m.combined,
         (unsigned long)stress_m.handoffs);
}

static void test_stress_exclusion_and_exactly_once(void) { stress(&host_env); }

// The same with sleeping waiters: no wake is lost (no wait times out), and
// every wake was taken by a sleep (no semaphore keeps a count).
static void sems_init(void) {
  for (int t = 0; t <= STRESS_THREADS; t++)
    sem_init(&sleep_sem[t], 0, 0);
  lost_wakes = 0;
}

// Wakes no sleep took (left as counts on the semaphores), then done with them.
static int sems_stray(void) {
  int stray = 0;
  for (int t = 0; t <= STRESS_THREADS; t++) {
    int v;
    sem_getvalue(&sleep_sem[t], &v);
    stray += v;
    sem_destroy(&sleep_sem[t]);
  }
  return stray;
}

static void test_stress_no_lost_or_stray_wake(void) {
  sems_init();
  stress(&sleeping_env);
  CHECK_EQ(lost_wakes, 0);
  CHECK_EQ(sems_stray(), 0);
}

// Sleeping waiters (ces_run) beside spinning ones (ces_run_spin and
// ces_lock_spin) on a mutex set up for spinners (the network lock's mix):
// exclusion, order, exactly once, no lost or stray wake, and the rule that
// makes spinning safe: the lock is never handed to a sleeping waiter.
static void test_stress_spinners_never_wait_for_a_sleeper(void) {
  sems_init();
  owner_wakes = 0;
  stress_spinners = 1;
  stress(&spinning_env);
  stress_spinners = 0;
  CHECK_EQ(lost_wakes, 0);
  CHECK_EQ(owner_wakes, 0);
  CHECK_EQ(sems_stray(), 0);
}

CHECK_MAIN_BEGIN("test_ces")
  RUN_TEST(test_uncontended_runs_inline);
  RUN_TEST(test_try_run_never_queues);
  RUN_TEST(test_fifo_order_and_batch_rule);
  RUN_TEST(test_lock_form_is_fifo_handoff);
  RUN_TEST(test_lock_form_node_stops_combining);
  RUN_TEST(test_submit_poll_stackless_form);
  RUN_TEST(test_stress_exclusion_and_exactly_once);
  RUN_TEST(test_stress_no_lost_or_stray_wake);
  RUN_TEST(test_stress_spinners_never_wait_for_a_sleeper);
CHECK_MAIN_END
