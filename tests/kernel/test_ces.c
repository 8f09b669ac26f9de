// CES mutexes (vdso/ces.c, kernel/kces.c) with kernel stackful coroutines on
// every hart the test runs with: mutual exclusion, exactly-once execution and
// FIFO order under a stress load, and the exact order and combiner of a known
// queue. Both wait for events (counts, the queue's tail), never for time.
#include "ktest.h"
#include "hart.h"
#include "kces.h"
#include "kco.h"
#include "klib.h"
#include "printf.h"
#include "riscv.h"
#include "timer.h"
#include "../ces_check.h"

// ---- a known queue: order and batch rule across harts ----
#define Q_N 10
#define Q_BATCH 4
static struct ces_mutex q_m;
static volatile uint32_t q_done, q_log_len;
static int q_order[Q_N];
static cid_t q_ran_by[Q_N], q_cid[Q_N];
static uint32_t q_hart[Q_N];

static void q_section(void *arg) {
  uint32_t i = q_log_len;
  q_order[i] = (int)(uintptr_t)arg;
  q_ran_by[i] = kco_current();
  q_hart[i] = this_hart()->index;
  q_log_len = i + 1;
}

static void q_requester(void *arg) {
  ces_run(&q_m, q_section, arg);
  __atomic_fetch_add(&q_done, 1, __ATOMIC_SEQ_CST);
}

// Wait (yielding, so that on one hart the others run) until m's tail moves
// away from `before`: a requester has queued itself. Safety net only.
static int wait_queued(struct ces_mutex *m, struct ces_node *before) {
  uint64_t deadline = rdtime() + (uint64_t)KTEST_PATIENCE_MS * board.timebase_hz / 1000;
  while (__atomic_load_n(&m->tail, __ATOMIC_SEQ_CST) == before) {
    if (rdtime() >= deadline)
      return 0;
    kco_yield();
  }
  return 1;
}

// The test holds the lock while ten requesters (spawned on any hart) queue one
// after another. Its unlock makes it the combiner: it runs requests 0-2 (its
// own section counts towards the batch of 4), hands the lock to request 3's
// coroutine, which runs 3-6 and hands on to 7, which runs 7-9. Each turn's
// sections run on one hart, and every section runs once, in queue order.
KTEST(ces_fifo_order_and_batch_rule) {
  ces_init(&q_m, &kces_env, Q_BATCH);
  q_done = q_log_len = 0;
  struct ces_node own;
  ces_lock(&q_m, &own);
  for (int i = 0; i < Q_N; i++) {
    struct ces_node *before = __atomic_load_n(&q_m.tail, __ATOMIC_SEQ_CST);
    int64_t cid = kco_spawn_stackful(q_requester, (void *)(uintptr_t)i, KTEST_PRIO, 0);
    KREQUIRE(cid > 0);
    q_cid[i] = (cid_t)cid;
    KREQUIRE(wait_queued(&q_m, before));
  }
  cid_t me = kco_current();
  ces_unlock(&q_m, &own);
  KREQUIRE(ktest_wait_count(&q_done, Q_N, KTEST_PATIENCE_MS));
  KCHECK_EQ(q_log_len, Q_N);
  for (int i = 0; i < Q_N; i++) {
    KCHECK_EQ(q_order[i], i);
    cid_t want = i < 3 ? me : i < 7 ? q_cid[3] : q_cid[7];
    KCHECK(q_ran_by[i] == want);
  }
  for (int i = 1; i < Q_N; i++)
    if (i != 3 && i != 7)
      KCHECK_EQ(q_hart[i], q_hart[i - 1]);
  KCHECK(q_m.tail == 0);
  KCHECK_EQ(q_m.sections, Q_N + 1);
  KCHECK_EQ(q_m.combined, 8);
  KCHECK_EQ(q_m.handoffs, 2);
}

// ---- stress: many coroutines, both forms, every hart ----
#define S_COS 32                             // stackful: ces_run and the lock form
#define S_SL 8                               // stackless: ces_submit / ces_poll
#define S_OPS 400
#define S_BATCH 4
static struct ces_mutex s_m;
static struct ces_check s_chk;
static volatile uint32_t s_done;
static uint8_t s_ran[S_COS + S_SL][S_OPS];
static uint64_t s_ticket[BOARD_MAX_HARTS];   // per hart: requests queued from it

_Static_assert(S_COS + S_SL <= CES_CHECK_COS && BOARD_MAX_HARTS <= CES_CHECK_QUEUES,
               "ces_check.h sizes");

static void s_section(void *arg) {
  struct ces_check_req *r = arg;
  ces_check_section(&s_chk, r);
  s_ran[r->co][r->seq]++;
}

static void s_worker(void *arg) {
  int co = (int)(uintptr_t)arg;
  uint64_t x = (uint64_t)co * 0x9e3779b97f4a7c15ULL + 1;
  for (int i = 0; i < S_OPS; i++) {
    struct ces_check_req r = { .co = co, .seq = i };
    // The ticket is taken on the hart that queues the request: nothing else
    // runs on it in between (coroutines switch only when they yield or block,
    // and interrupt handlers take no CES mutex).
    r.queue = this_hart()->index;
    r.ticket = ++s_ticket[r.queue];
    if (i % 4 == 3) {
      struct ces_node n;
      ces_lock(&s_m, &n);
      if (i % 8 == 7)
        kco_yield();                        // a holder may wait: others queue up
      s_section(&r);
      ces_unlock(&s_m, &n);
    } else {
      ces_run(&s_m, s_section, &r);
    }
    for (int k = 0; k < 50; k++)            // some independent work between
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    if ((x & 7) == 0)
      kco_yield();
  }
  __atomic_fetch_add(&s_done, 1, __ATOMIC_SEQ_CST);
}

// Stackless workers: the same requests through ces_submit/ces_poll.
static struct ces_check_stackless s_sl[S_SL];
static uint32_t s_hart(void) { return this_hart()->index; }

static int s_stackless_poll(void *arg) {
  int r = ces_check_stackless_poll(arg);
  if (r == CO_DONE)
    __atomic_fetch_add(&s_done, 1, __ATOMIC_SEQ_CST);
  return r;
}

// 32 stackful coroutines x 400 requests, a quarter in the lock form (whose
// holders sometimes yield, so requests queue and are combined even on one
// hart), and 8 stackless ones; a batch of 4 so the combiner role moves often,
// and waiters that poll their node 16 times before they sleep. Checks: no two
// sections overlap, the counter equals the number of requests, each request
// ran exactly once, each coroutine's requests ran in its order, and each
// hart's requests in the order that hart queued them (FIFO).
KTEST(ces_stress_exclusion_fifo_exactly_once) {
  kces_init(&s_m);
  s_m.batch = S_BATCH;
  s_m.spin = 16;                           // waiters poll a little before sleeping
  s_done = 0;
  ces_check_reset(&s_chk);
  memset(s_ran, 0, sizeof s_ran);
  memset(s_ticket, 0, sizeof s_ticket);
  for (int i = 0; i < S_COS; i++)
    KREQUIRE(kco_spawn_stackful(s_worker, (void *)(uintptr_t)i, KTEST_PRIO, 0) > 0);
  for (int i = 0; i < S_SL; i++) {
    s_sl[i] = (struct ces_check_stackless){ .m = &s_m, .submit = ces_submit, .poll = ces_poll,
      .section = s_section, .queue = s_hart, .tickets = s_ticket, .co = S_COS + i, .ops = S_OPS };
    KREQUIRE(kco_spawn(s_stackless_poll, &s_sl[i], KTEST_PRIO) > 0);
  }
  KREQUIRE(ktest_wait_count(&s_done, S_COS + S_SL, KTEST_PATIENCE_MS));
  KCHECK_EQ(s_chk.counter, (S_COS + S_SL) * S_OPS);
  KCHECK_EQ(s_chk.overlaps, 0);
  KCHECK_EQ(s_chk.order_errors, 0);
  KCHECK_EQ(s_chk.queue_order_errors, 0);
  int bad = 0;
  for (int i = 0; i < S_COS + S_SL; i++)
    for (int k = 0; k < S_OPS; k++)
      bad += s_ran[i][k] != 1;
  KCHECK_EQ(bad, 0);
  KCHECK(s_m.tail == 0);
  KCHECK_EQ(s_m.sections, (S_COS + S_SL) * S_OPS);
  KCHECK(s_m.combined > 0);
  KCHECK(s_m.handoffs > 0);
  kprintf("ces stress: %u harts, %lu sections, %lu combined, %lu hand-offs\n", nharts_online,
          s_m.sections, s_m.combined, s_m.handoffs);
}
