// Stackful kernel coroutines: blocking deep in a call chain, both switch kinds,
// and timers.
#include "ktest.h"
#include "hart.h"
#include "kco.h"
#include "riscv.h"
#include "timer.h"
#include "waitq.h"

#define DEPTH 48
static struct waitq deep_q;
static volatile uint32_t deep_parked, deep_go, deep_done, deep_ok;

// Each level keeps values on its own frame and checks them after the block,
// so a switch that loses a register or a stack byte is caught.
static uint64_t descend(int level, uint64_t seed) {
  volatile uint64_t local[4] = { seed, seed * 3, seed ^ 0x5a5a, (uint64_t)level };
  uint64_t below;
  if (level == DEPTH) {
    __atomic_fetch_add(&deep_parked, 1, __ATOMIC_SEQ_CST);
    KCO_WAIT_UNTIL(&deep_q, __atomic_load_n(&deep_go, __ATOMIC_SEQ_CST));
    below = 1;
  } else {
    below = descend(level + 1, seed * 6364136223846793005ULL + 1442695040888963407ULL);
  }
  int intact = local[0] == seed && local[1] == seed * 3 && local[2] == (seed ^ 0x5a5a) &&
               local[3] == (uint64_t)level;
  return intact ? below + 1 : 0;
}

static void deep_body(void *arg) {
  uint64_t r = descend(0, (uint64_t)(uintptr_t)arg);
  if (r == DEPTH + 2)   // the bottom returns 2, each level above adds 1
    __atomic_fetch_add(&deep_ok, 1, __ATOMIC_SEQ_CST);
  __atomic_fetch_add(&deep_done, 1, __ATOMIC_SEQ_CST);
}

static void deep_block(int flags) {
  enum { N = 8 };
  waitq_init(&deep_q, "deep");
  deep_parked = deep_go = deep_done = deep_ok = 0;
  for (int i = 0; i < N; i++)
    KREQUIRE(kco_spawn_stackful(deep_body, (void *)(uintptr_t)(i + 1), 3, flags) > 0);
  KCHECK(ktest_wait_count(&deep_parked, N, KTEST_PATIENCE_MS));
  kco_sleep_ms(5);
  __atomic_store_n(&deep_go, 1, __ATOMIC_SEQ_CST);
  waitq_wake_all(&deep_q);      // they may resume on any hart
  KCHECK(ktest_wait_count(&deep_done, N, KTEST_PATIENCE_MS));
  KCHECK_EQ(deep_ok, N);
}

KTEST(stackful_block_deep_cacs) { deep_block(0); }
KTEST(stackful_block_deep_fullsave) { deep_block(KCO_FULLSAVE); }

// ---- timers ----
#define SLEEPERS 3
static volatile uint32_t wake_seq, sleepers_done;
static int wake_rank[SLEEPERS];
static uint64_t slept_ticks[SLEEPERS];
static const int sleep_ms_of[SLEEPERS] = { 30, 10, 20 };

static void sleeper(void *arg) {
  int i = (int)(uintptr_t)arg;
  uint64_t t0 = rdtime();
  kco_sleep_ms((uint64_t)sleep_ms_of[i]);
  slept_ticks[i] = rdtime() - t0;
  wake_rank[i] = (int)__atomic_fetch_add(&wake_seq, 1, __ATOMIC_SEQ_CST);
  __atomic_fetch_add(&sleepers_done, 1, __ATOMIC_SEQ_CST);
}

KTEST(timer_sleep_order) {
  wake_seq = sleepers_done = 0;
  for (int i = 0; i < SLEEPERS; i++)
    KREQUIRE(kco_spawn_stackful(sleeper, (void *)(uintptr_t)i, 3, 0) > 0);
  KCHECK(ktest_wait_count(&sleepers_done, SLEEPERS, KTEST_PATIENCE_MS));
  // 10 ms before 20 ms before 30 ms, and nobody woke early.
  KCHECK_EQ(wake_rank[1], 0);
  KCHECK_EQ(wake_rank[2], 1);
  KCHECK_EQ(wake_rank[0], 2);
  for (int i = 0; i < SLEEPERS; i++)
    KCHECK(slept_ticks[i] >= (uint64_t)sleep_ms_of[i] * board.timebase_hz / 1000);
}

// A stackless coroutine waits on a timer: arm, return PENDING, re-check on wake.
struct tick_state { uint64_t deadline; int polls; volatile uint32_t done; };
static int timer_poll(void *arg) {
  struct tick_state *s = arg;
  s->polls++;
  if (rdtime() < s->deadline) {
    timer_add(s->deadline, kco_current());
    return CO_PENDING;
  }
  __atomic_store_n(&s->done, 1, __ATOMIC_SEQ_CST);
  return CO_DONE;
}

KTEST(timer_stackless) {
  static struct tick_state s;
  s.deadline = rdtime() + 15 * board.timebase_hz / 1000;
  s.polls = 0;
  s.done = 0;
  KREQUIRE(kco_spawn(timer_poll, &s, 3) > 0);
  KCHECK(ktest_wait_count(&s.done, 1, KTEST_PATIENCE_MS));
  KCHECK(s.polls >= 2);       // it really blocked and was woken by the timer
  KCHECK(s.polls < 100);      // and was not busy-polled
}

KTEST(ticks_advance_on_every_hart) {
  uint64_t before[BOARD_MAX_HARTS];
  for (uint32_t i = 0; i < nharts_online; i++)
    before[i] = harts[i].ticks;
  kco_sleep_ms(50);
  for (uint32_t i = 0; i < nharts_online; i++)
    KCHECK(harts[i].ticks > before[i]);
}
