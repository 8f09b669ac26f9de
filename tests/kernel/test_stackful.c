// Stackful kernel coroutines: blocking deep in a call chain, both switch kinds.
#include "ktest.h"
#include "kco.h"
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
