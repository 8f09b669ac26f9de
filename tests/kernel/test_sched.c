// Kernel executor tests: dispatch order, wakeups, cids, scale.
#include "ktest.h"
#include "hart.h"
#include "kco.h"
#include "timer.h"
#include "kmalloc.h"
#include "riscv.h"
#include "waitq.h"

// ---- dispatch order on the real kernel executor ----
// Each coroutine appends its id to the log when it runs, then exits.
#define LOG_MAX 40
static volatile uint32_t log_len;
static int run_log[LOG_MAX];

struct order_arg { int id; };
static struct order_arg order_args[LOG_MAX];

static int record_poll(void *arg) {
  uint32_t i = __atomic_fetch_add(&log_len, 1, __ATOMIC_SEQ_CST);
  if (i < LOG_MAX)
    run_log[i] = ((struct order_arg *)arg)->id;
  return CO_DONE;
}

#define ORDER_N 24
// Spawn 3 coroutines per priority, lowest priority first, while this test holds
// the hart: when it blocks they must run best priority first, FIFO within one.
KTEST(priority_order) {
  ktest_hold_other_harts();
  log_len = 0;
  for (int i = 0; i < ORDER_N; i++) {
    int prio = 7 - i / 3;
    order_args[i].id = prio * 10 + i % 3;
    KCHECK(kco_spawn(record_poll, &order_args[i], (uint32_t)prio) > 0);
  }
  KCHECK(ktest_wait_count(&log_len, ORDER_N, KTEST_PATIENCE_MS));
  ktest_release_other_harts();
  for (int i = 0; i < ORDER_N; i++)
    KCHECK_EQ(run_log[i], (i / 3) * 10 + i % 3);
}

// kco_run_stackless: a stackful coroutine (as a switcher before a return to
// user mode) runs the ready stackless coroutines of its priority or better on
// its own stack, best first, and leaves worse ones and stackful ones to the
// loop. A coroutine that blocks there is settled as blocked and runs again
// when woken. On several lanes it runs those at the head of its own hart's lane.
static int pend_once_runs;
static int pend_once_poll(void *arg) {
  (void)arg;
  return ++pend_once_runs == 1 ? CO_PENDING : record_poll(&order_args[3]);
}

KTEST(run_stackless_here) {
  ktest_hold_other_harts();
  log_len = 0;
  pend_once_runs = 0;
  int ids[3] = { 50, 40, 30 };       // spawned worst first
  for (int i = 0; i < 3; i++) {
    order_args[i].id = ids[i];
    KCHECK(kco_spawn(record_poll, &order_args[i], (uint32_t)ids[i] / 10) > 0);
  }
  order_args[3].id = 41;
  int64_t pend = kco_spawn(pend_once_poll, 0, 4);
  KCHECK(pend > 0);
  int one_lane = !__atomic_load_n(&kexec.multi, __ATOMIC_RELAXED);
  int nothing_left = kco_run_stackless(4);
  if (one_lane) {
    KCHECK_EQ(nothing_left, 1);      // (only the priority-5 one is still ready)
    KCHECK_EQ(log_len, 2);
    KCHECK_EQ(run_log[0], 30);
    KCHECK_EQ(run_log[1], 40);
    KCHECK_EQ(pend_once_runs, 1);    // ran, and now blocks
    KCHECK(kco_wake((cid_t)pend) >= 0);
    KCHECK(ktest_wait_count(&log_len, 4, KTEST_PATIENCE_MS));
    KCHECK_EQ(run_log[2], 41);       // woken: before the worse one
    KCHECK_EQ(run_log[3], 50);
  } else {
    // Several lanes: it runs those at the head of this hart's lane, unless
    // something stackful (the other harts' holders, queued here to be
    // stolen) is ahead of them; the loops run the rest. Either way pend
    // blocks at its first run, before the worst one runs.
    (void)nothing_left;
    KCHECK(ktest_wait_count(&log_len, 3, KTEST_PATIENCE_MS));
    KCHECK(kco_wake((cid_t)pend) >= 0);
    KCHECK(ktest_wait_count(&log_len, 4, KTEST_PATIENCE_MS));
    KCHECK_EQ(run_log[3], 41);
  }
  ktest_release_other_harts();
}

#define FIFO_N LOG_MAX

KTEST(fifo_within_priority) {
  ktest_hold_other_harts();
  log_len = 0;
  for (int i = 0; i < FIFO_N; i++) {
    order_args[i].id = i;
    KCHECK(kco_spawn(record_poll, &order_args[i], 5) > 0);
  }
  KCHECK(ktest_wait_count(&log_len, FIFO_N, KTEST_PATIENCE_MS));
  ktest_release_other_harts();
  for (int i = 0; i < FIFO_N; i++)
    KCHECK_EQ(run_log[i], i);
}

// ---- no lost wakeup ----
KTEST(wake_before_block_stackful) {
  // Waking ourselves while running is remembered: the block returns at once.
  KCHECK_EQ(kco_wake(kco_current()), 0);
  uint64_t t0 = rdtime();
  kco_block();
  // Nothing else wakes us: a lost self-wake would block forever. The bound is
  // a generous safety net, not a speed claim (a loaded host may stall a hart).
  KCHECK(rdtime() - t0 < 10 * board.timebase_hz);
}

struct selfwake { int runs; volatile uint32_t done; };
static int selfwake_poll(void *arg) {
  struct selfwake *s = arg;
  if (++s->runs == 1) {
    kco_wake(kco_current());     // wake before returning PENDING
    return CO_PENDING;
  }
  __atomic_store_n(&s->done, 1, __ATOMIC_SEQ_CST);
  return CO_DONE;
}

KTEST(wake_before_block_stackless) {
  static struct selfwake s;
  s.runs = 0;
  s.done = 0;
  KCHECK(kco_spawn(selfwake_poll, &s, 3) > 0);
  KCHECK(ktest_wait_count(&s.done, 1, KTEST_PATIENCE_MS));
  KCHECK_EQ(s.runs, 2);
}

// Two stackful coroutines hand a token back and forth with bare wake/block, no
// wait queue: every handoff races the receiver's decision to block, and on
// several harts they run truly in parallel. A lost wakeup hangs (test timeout).
#define PINGPONG_ROUNDS 3000
static volatile uint32_t pp_turn, pp_finished;
static volatile cid_t pp_cid[2];

static void pingpong(void *arg) {
  int me = (int)(uintptr_t)arg;
  while (!pp_cid[0] || !pp_cid[1])
    kco_yield();
  for (uint32_t round = 0; round < PINGPONG_ROUNDS; round++) {
    while (__atomic_load_n(&pp_turn, __ATOMIC_SEQ_CST) % 2 != (uint32_t)me)
      kco_block();
    __atomic_fetch_add(&pp_turn, 1, __ATOMIC_SEQ_CST);
    kco_wake(pp_cid[1 - me]);
  }
  __atomic_fetch_add(&pp_finished, 1, __ATOMIC_SEQ_CST);
}

KTEST(pingpong_no_lost_wakeup) {
  pp_turn = 0;
  pp_finished = 0;
  pp_cid[0] = pp_cid[1] = 0;
  int64_t a = kco_spawn_stackful(pingpong, (void *)0, 3, 0);
  int64_t b = kco_spawn_stackful(pingpong, (void *)1, 3, 0);
  KREQUIRE(a > 0 && b > 0);
  pp_cid[1] = (cid_t)b;
  pp_cid[0] = (cid_t)a;
  KCHECK(ktest_wait_count(&pp_finished, 2, 30000));
  KCHECK_EQ(pp_turn, 2 * PINGPONG_ROUNDS);
}

// ---- a resident changing its own priority ----
// On one lane, a coroutine that a rotation among equals took stays linked in
// its priority's ring (the lane's resident: executor.h, struct co_queue).
// kco_reprio_self must take it out of that ring, or the ring it was in and
// the one of its new priority disagree with the bitmap (exec_check), and its
// block unlinks it from a ring it is not in.
static volatile uint32_t moved_steps;
static volatile int moved_was_resident;

static void reprio_mover(void *arg) {
  (void)arg;
  moved_was_resident = (this_hart()->cur->flags & CO_RESIDENT) != 0;
  kco_reprio_self(KTEST_PRIO + 2);
  __atomic_fetch_add(&moved_steps, 1, __ATOMIC_SEQ_CST);
  kco_yield();                       // the test body, at KTEST_PRIO, is better now
  __atomic_fetch_add(&moved_steps, 1, __ATOMIC_SEQ_CST);
}

KTEST(reprio_self_of_resident) {
  ktest_hold_other_harts();
  moved_steps = 0;
  moved_was_resident = 0;
  KREQUIRE(kco_spawn_stackful(reprio_mover, 0, KTEST_PRIO, 0) > 0);
  kco_yield();                       // an equal waits: it runs, taken by the rotation
  char why[96];
  KCHECK(exec_check(&kexec, why, sizeof why) == 0);
  KCHECK(ktest_wait_count(&moved_steps, 2, KTEST_PATIENCE_MS));
  KCHECK(exec_check(&kexec, why, sizeof why) == 0);
  if (!__atomic_load_n(&kexec.multi, __ATOMIC_RELAXED))
    KCHECK_EQ(moved_was_resident, 1);   // (residents are a one-lane thing)
  ktest_release_other_harts();
}

// ---- cids ----
static volatile uint32_t quick_done;
static int quick_poll(void *arg) {
  (void)arg;
  __atomic_fetch_add(&quick_done, 1, __ATOMIC_SEQ_CST);
  return CO_DONE;
}

// Wait until the kernel executor has exactly `live` live coroutines.
static int wait_live_coroutines(uint32_t live, uint32_t timeout_ms) {
  uint64_t deadline = rdtime() + (uint64_t)timeout_ms * board.timebase_hz / 1000;
  struct exec_stats es;
  for (;;) {
    exec_get_stats(&kexec, &es);
    if (es.live == live)
      return 1;
    if (rdtime() >= deadline)
      return 0;
    kco_sleep_ms(1);
  }
}

KTEST(stale_cid_rejected) {
  quick_done = 0;
  struct exec_stats es0;
  exec_get_stats(&kexec, &es0);
  uint32_t live0 = es0.live;
  int64_t old = kco_spawn(quick_poll, 0, 3);
  KREQUIRE(old > 0);
  KCHECK(ktest_wait_count(&quick_done, 1, KTEST_PATIENCE_MS));
  // Its slot is freed after it returns, on whichever hart polled it: wait for
  // that (live count back to what it was before the spawn), not for a time.
  KCHECK(wait_live_coroutines(live0, KTEST_PATIENCE_MS));
  KCHECK_EQ(kco_wake((cid_t)old), EXEC_ESTALE);
  KCHECK_EQ(kco_reprio((cid_t)old, 2), EXEC_ESTALE);
  KCHECK_EQ(kco_wake(CID_NONE), EXEC_ESTALE);
  KCHECK_EQ(kco_wake(~(cid_t)0), EXEC_ESTALE);
  KCHECK_EQ(kco_wake(((cid_t)1 << 32) | 0x7fffffff), EXEC_ESTALE);
  KCHECK_EQ(kco_reprio(kco_current(), NPRIO_DEFAULT), EXEC_EINVAL);
  // The slot is reused under a new generation; the old cid still misses it.
  int64_t fresh = kco_spawn(quick_poll, 0, 3);
  KREQUIRE(fresh > 0);
  KCHECK(ktest_wait_count(&quick_done, 2, KTEST_PATIENCE_MS));
  KCHECK_EQ(kco_wake((cid_t)old), EXEC_ESTALE);
}

// ---- 10,000 coroutines alive at once ----
#define MANY 10000
struct many_state { struct waiter w; };
static struct waitq many_q;
static volatile uint32_t many_started, many_done, many_go;

static int many_poll(void *arg) {
  struct many_state *s = arg;
  if (!s->w.cid)
    __atomic_fetch_add(&many_started, 1, __ATOMIC_SEQ_CST);
  waitq_add(&many_q, &s->w, kco_current());
  if (!__atomic_load_n(&many_go, __ATOMIC_SEQ_CST))
    return CO_PENDING;
  waitq_remove(&many_q, &s->w);
  kfree(s);
  __atomic_fetch_add(&many_done, 1, __ATOMIC_SEQ_CST);
  return CO_DONE;
}

KTEST(ten_thousand_coroutines) {
  waitq_init(&many_q, "many");
  many_started = many_done = many_go = 0;
  for (int i = 0; i < MANY; i++) {
    struct many_state *s = kzalloc(sizeof *s);
    KREQUIRE(s);
    int64_t cid = kco_spawn(many_poll, s, (uint32_t)(3 + i % 5));
    if (cid < 0) {
      kfree(s);
      KREQUIRE(cid > 0);
    }
  }
  KCHECK(ktest_wait_count(&many_started, MANY, 30000));
  struct exec_stats st;
  exec_get_stats(&kexec, &st);
  KCHECK(st.live >= MANY);
  char why[120];
  KCHECK(exec_check(&kexec, why, sizeof why) == 0);
  __atomic_store_n(&many_go, 1, __ATOMIC_SEQ_CST);
  waitq_wake_all(&many_q);
  KCHECK(ktest_wait_count(&many_done, MANY, 30000));
}
