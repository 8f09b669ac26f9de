// Stress across harts: stackless and stackful coroutines wake, reprioritise,
// yield and block each other at random while a checker walks the executor's
// invariants over and over (bit p set <=> queue p non-empty; every cid in exactly
// one place; counters consistent).
#include "ktest.h"
#include "hart.h"
#include "kco.h"
#include "klib.h"

#define STRESS_COS 64
#define STRESS_STEPS 1500

static volatile cid_t s_cid[STRESS_COS];
static volatile uint32_t s_done, s_spawned, s_stop_checker, s_checks, s_bad;
static uint32_t s_steps[STRESS_COS];
static uint64_t s_seed[STRESS_COS];
static char s_why[120];

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

// One random step; returns what the coroutine does next.
static int step(int i) {
  uint64_t r = rnd(&s_seed[i]);
  int other = (int)(r % STRESS_COS);
  kco_wake(s_cid[other]);
  if (r & 0x100)
    kco_reprio(s_cid[other], (uint32_t)(3 + (r >> 12) % 5));
  if (r & 0x200)
    kco_wake(s_cid[i]);                 // wake before block
  return (r & 0x400) ? CO_YIELD : CO_PENDING;
}

static int stress_poll(void *arg) {
  int i = (int)(uintptr_t)arg;
  if (++s_steps[i] >= STRESS_STEPS) {
    __atomic_fetch_add(&s_done, 1, __ATOMIC_SEQ_CST);
    return CO_DONE;
  }
  return step(i);
}

static void stress_stackful(void *arg) {
  int i = (int)(uintptr_t)arg;
  while (++s_steps[i] < STRESS_STEPS) {
    if (step(i) == CO_YIELD)
      kco_yield();
    else
      kco_block();
  }
  __atomic_fetch_add(&s_done, 1, __ATOMIC_SEQ_CST);
}

static void checker(void *arg) {
  (void)arg;
  while (!__atomic_load_n(&s_stop_checker, __ATOMIC_SEQ_CST)) {
    // After a failure, keep waking (the stress must still end, so that the
    // test reports the broken invariant instead of timing out).
    if (!s_bad && exec_check(&kexec, s_why, sizeof s_why) != 0)
      s_bad = 1;
    s_checks++;
    // Everybody blocked with nobody left to wake them: wake them all.
    for (int i = 0; i < STRESS_COS; i++)
      kco_wake(s_cid[i]);
    kco_yield();
  }
  __atomic_fetch_add(&s_done, 1, __ATOMIC_SEQ_CST);
}

KTEST(smp_stress_invariants) {
  s_done = s_stop_checker = s_checks = s_bad = 0;
  for (int i = 0; i < STRESS_COS; i++) {
    s_steps[i] = 0;
    s_seed[i] = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
    s_cid[i] = 0;
  }
  // The checker only yields, so it must sit at the lowest priority: anywhere
  // higher it would (correctly) starve the coroutines below it on one hart.
  int64_t chk = kco_spawn_stackful(checker, 0, NPRIO_DEFAULT - 1, 0);
  KREQUIRE(chk > 0);
  for (int i = 0; i < STRESS_COS; i++) {
    int64_t c = (i & 1) ? kco_spawn_stackful(stress_stackful, (void *)(uintptr_t)i, 3 + i % 5, i & 2)
                        : kco_spawn(stress_poll, (void *)(uintptr_t)i, 3 + i % 5);
    KREQUIRE(c > 0);
    s_cid[i] = (cid_t)c;
  }
  KCHECK(ktest_wait_count(&s_done, STRESS_COS, 60000));
  __atomic_store_n(&s_stop_checker, 1, __ATOMIC_SEQ_CST);
  KCHECK(ktest_wait_count(&s_done, STRESS_COS + 1, KTEST_PATIENCE_MS));
  if (s_bad)
    ktest_fail_at(__FILE__, __LINE__, "invariant broken: %s", s_why);
  KCHECK(s_checks > 0);
  for (int i = 0; i < STRESS_COS; i++)
    KCHECK_EQ(s_steps[i], STRESS_STEPS);
  KCHECK(exec_check(&kexec, s_why, sizeof s_why) == 0);
}
