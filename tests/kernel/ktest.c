// The in-kernel test runner (see ktest.h).
#include "ktest.h"
#include "hart.h"
#include "kco.h"
#include "klib.h"
#include "main.h"
#include "kmalloc.h"
#include "monitor.h"
#include "palloc.h"
#include "printf.h"
#include "riscv.h"
#include "poweroff.h"
#include "timer.h"

#define RUNNER_PRIO 1
#define TEST_TIMEOUT_MS 60000

extern const struct ktest __ktests_start[], __ktests_end[];

static struct spinlock fail_lock = SPINLOCK_INIT("ktest");
static volatile int cur_failed;
static char cur_why[200];
static char filter_buf[256];

// Does the filter pick test `name`? The filter is a comma-separated list of
// pieces of names (the simulated Rocket, where one boot costs minutes, runs
// several small tests in one boot: test=timer_sleep,wake_before,...).
static int picked(const struct ktest *t) {
  const char *name = t->name;
  if (!filter_buf[0])
    return !t->guest_time;       // test=all: not the -icount ones (ktest.h)
  char piece[sizeof filter_buf];
  const char *p = filter_buf;
  while (*p) {
    size_t n = 0;
    while (p[n] && p[n] != ',')
      n++;
    memcpy(piece, p, n);
    piece[n] = 0;
    if (n && strstr(name, piece))
      return 1;
    p += n + (p[n] == ',');
  }
  return 0;
}

void ktest_fail_at(const char *file, int line, const char *fmt, ...) {
  char msg[150];
  va_list ap;
  va_start(ap, fmt);
  kvsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  spin_lock(&fail_lock);
  if (!cur_failed)
    ksnprintf(cur_why, sizeof cur_why, "%s:%d: %s", file, line, msg);
  cur_failed = 1;
  spin_unlock(&fail_lock);
}

int ktest_failed(void) { return cur_failed; }

int ktest_wait_count(volatile uint32_t *counter, uint32_t target, uint32_t timeout_ms) {
  uint64_t deadline = rdtime() + (uint64_t)timeout_ms * board.timebase_hz / 1000;
  while (__atomic_load_n(counter, __ATOMIC_SEQ_CST) < target) {
    if (rdtime() >= deadline)
      return 0;
    kco_sleep_ms(1);
  }
  return 1;
}

int ktest_spin_count(volatile uint32_t *counter, uint32_t target, uint32_t timeout_ms) {
  uint64_t deadline = rdtime() + (uint64_t)timeout_ms * board.timebase_hz / 1000;
  while (__atomic_load_n(counter, __ATOMIC_SEQ_CST) < target)
    if (rdtime() >= deadline)
      return 0;
  return 1;
}

// ---- holding the other harts ----
static volatile uint32_t hogs_running, hogs_release;

static void hog(void *arg) {
  (void)arg;
  __atomic_fetch_add(&hogs_running, 1, __ATOMIC_SEQ_CST);
  while (!__atomic_load_n(&hogs_release, __ATOMIC_SEQ_CST))
    ;
  __atomic_fetch_sub(&hogs_running, 1, __ATOMIC_SEQ_CST);
}

void ktest_hold_other_harts(void) {
  hogs_release = 0;
  uint32_t n = nharts_online - 1;
  for (uint32_t i = 0; i < n; i++)
    kco_spawn_stackful(hog, 0, 0, 0);
  // The hogs cannot run on this hart until we block, and the others are idle,
  // so they arrive promptly; wait with a spin rather than a sleep (a sleep
  // would let this hart pick up a hog).
  if (!ktest_spin_count(&hogs_running, n, 10000))
    ktest_fail_at(__FILE__, __LINE__, "only %u of %u hogs started", hogs_running, n);
}

void ktest_release_other_harts(void) {
  __atomic_store_n(&hogs_release, 1, __ATOMIC_SEQ_CST);
  uint64_t deadline = rdtime() + 10 * board.timebase_hz;
  while (__atomic_load_n(&hogs_running, __ATOMIC_SEQ_CST) > 0 && rdtime() < deadline)
    kco_sleep_ms(1);
}

// ---- resource accounting around each test ----
struct snapshot {
  uint64_t kmalloc_objects, kmalloc_bytes, direct_pages;
  uint32_t live_coroutines;
};

struct cache_use { uint64_t bytes, objects; };

static struct cache_use cache_usage(void) {
  struct cache_use u;
  kernel_caches(&u.bytes, &u.objects);
  return u;
}

static void snap(struct snapshot *s) {
  struct palloc_stats ps;
  struct kmalloc_stats ks;
  struct exec_stats es;
  kco_drain_stacks();           // (kept for reuse, not in use)
  kmalloc_reclaim();
  palloc_get_stats(&ps);
  kmalloc_get_stats(&ks);
  exec_get_stats(&kexec, &es);
  s->kmalloc_objects = ks.live_objects;
  s->kmalloc_bytes = ks.live_bytes;
  s->direct_pages = (ps.total_pages - ps.free_pages) - ks.slab_pages - ks.large_pages;
  s->live_coroutines = es.live;
}

static volatile uint32_t test_done;
static volatile cid_t runner_cid;

static void test_body(void *arg) {
  const struct ktest *t = arg;
  t->fn();
  __atomic_store_n(&test_done, 1, __ATOMIC_SEQ_CST);
  kco_wake(runner_cid);
}

// The runner waits for the test's end without polling: the test body wakes
// it, and one timer entry bounds the wait. (A poll every millisecond would
// keep waking whichever hart the runner sleeps on, which then never looks
// idle: the parking tests, test_park.c, need every other hart idle.)
static int wait_test_done(uint32_t timeout_ms) {
  uint64_t deadline = rdtime() + (uint64_t)timeout_ms * board.timebase_hz / 1000;
  int armed = 0;
  while (!__atomic_load_n(&test_done, __ATOMIC_SEQ_CST) && rdtime() < deadline) {
    if (!armed && timer_add(deadline, kco_current()) == 0)
      armed = 1;                 // (entries are never lost: once is enough)
    if (armed)
      kco_block();
    else
      kco_sleep_ms(1);           // no memory for the entry: poll
  }
  return __atomic_load_n(&test_done, __ATOMIC_SEQ_CST);
}

static int run_one(const struct ktest *t) {
  struct snapshot before, after;
  cur_failed = 0;
  cur_why[0] = 0;
  test_done = 0;
  runner_cid = kco_current();
  snap(&before);
  struct cache_use cache_before = cache_usage();
  uint64_t instret0 = rdinstret(), cycle0 = rdcycle();
  if (kco_spawn_stackful(test_body, (void *)t, KTEST_PRIO, 0) < 0) {
    kprintf("KTEST FAIL %s: cannot spawn the test coroutine\n", t->name);
    return 0;
  }
  if (!wait_test_done(TEST_TIMEOUT_MS)) {
    kprintf("KTEST FAIL %s: timed out after %d ms\n", t->name, TEST_TIMEOUT_MS);
    monitor_stats();
    return -1;   // a stuck coroutine may hold anything: stop here
  }
  // Let the finished coroutines settle (their slots are freed after they return).
  uint64_t deadline = rdtime() + 10 * board.timebase_hz;   // a safety net, not a speed claim
  do {
    kco_sleep_ms(1);
    snap(&after);
  } while (after.live_coroutines != before.live_coroutines && rdtime() < deadline);
  struct cache_use cache_after = cache_usage();
  uint64_t grown_bytes = cache_after.bytes - cache_before.bytes;
  uint64_t grown_objects = cache_after.objects - cache_before.objects;
  if (!cur_failed) {
    if (after.live_coroutines != before.live_coroutines)
      ksnprintf(cur_why, sizeof cur_why, "coroutines leaked: %u live, %u before",
                after.live_coroutines, before.live_coroutines), cur_failed = 1;
    else if (after.kmalloc_objects - grown_objects != before.kmalloc_objects ||
             after.kmalloc_bytes - grown_bytes != before.kmalloc_bytes)
      ksnprintf(cur_why, sizeof cur_why, "kmalloc leak: %lu bytes in %lu objects, was %lu in %lu",
                after.kmalloc_bytes - grown_bytes, after.kmalloc_objects - grown_objects,
                before.kmalloc_bytes, before.kmalloc_objects), cur_failed = 1;
    else if (after.direct_pages != before.direct_pages)
      ksnprintf(cur_why, sizeof cur_why, "page leak: %lu pages in use outside kmalloc, was %lu",
                after.direct_pages, before.direct_pages), cur_failed = 1;
  }
  // This hart's counters across the test (and the settling after it): what
  // a test costs, for choosing the ones a slow target can run (the
  // simulated Rocket, docs/results/rtl.md). Other harts' work is not in them.
  uint64_t instret = rdinstret() - instret0, cycles = rdcycle() - cycle0;
  if (cur_failed)
    kprintf("KTEST FAIL %s: %s\n", t->name, cur_why);
  else
    kprintf("KTEST PASS %s\n", t->name);
  kprintf("KTEST COST %s instret=%lu cycles=%lu\n", t->name, instret, cycles);
  return !cur_failed;
}

static void runner(void *arg) {
  (void)arg;
  int passed = 0, failed = 0;
  kprintf("KTEST START harts=%u\n", nharts_online);
  // A filter that names no test is a mistake, not a vacuous pass: say so and
  // list the names.
  int matching = 0;
  for (const struct ktest *t = __ktests_start; t < __ktests_end; t++)
    matching += picked(t);
  if (matching == 0) {
    kprintf("KTEST FAIL no-such-test: no test name contains \"%s\"; the tests are:\n", filter_buf);
    for (const struct ktest *t = __ktests_start; t < __ktests_end; t++)
      kprintf("  %s\n", t->name);
    kprintf("KTEST DONE passed=0 failed=1\n");
    poweroff(1);
  }
  for (const struct ktest *t = __ktests_start; t < __ktests_end; t++) {
    if (!picked(t))
      continue;
    int r = run_one(t);
    if (r > 0)
      passed++;
    else
      failed++;
    if (r < 0)
      break;
  }
  kprintf("KTEST DONE passed=%d failed=%d\n", passed, failed);
  poweroff(failed != 0 || passed == 0);
}

static void ktest_start(const char *filter) {
  size_t n = strnlen(filter, sizeof filter_buf - 1);
  memcpy(filter_buf, filter, n);
  filter_buf[n] = 0;
  if (strcmp(filter_buf, "all") == 0)
    filter_buf[0] = 0;
  if (kco_spawn_stackful(runner, 0, RUNNER_PRIO, 0) < 0)
    kpanic("ktest: cannot spawn the runner");
}
BOOT_JOB(10, "test", ktest_start);       // bootargs test[=NAME]
