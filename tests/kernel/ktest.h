// In-kernel tests. Each KTEST(name) body runs as its own stackful kernel
// coroutine, so it may block, sleep and spawn. The runner (ktest.c) runs them one
// at a time, gives each a time limit, and afterwards checks that the allocator and
// executor counters are back where they were before the test: a test that leaks
// a page, an object or a coroutine fails.
//
// Output, one line per test:  "KTEST PASS name"  /  "KTEST FAIL name: reason"
// and at the end:             "KTEST DONE passed=N failed=M"
// after which the machine shuts down through SBI with failure status if M > 0.
#ifndef KTEST_H
#define KTEST_H
#include <stdint.h>

struct ktest {
  const char *name;
  void (*fn)(void);
  int guest_time;   // 1: KTEST_GUEST_TIME below
};

#define KTEST_ENTRY(nm, guest_time)                                            \
  static void nm(void);                                                        \
  static const struct ktest ktest_entry_##nm                                   \
      __attribute__((section(".ktests"), used, aligned(8))) = { #nm, nm, guest_time }; \
  static void nm(void)
#define KTEST(nm) KTEST_ENTRY(nm, 0)
// A test whose verdict depends on how the host runs the vCPUs, unless QEMU
// counts time in guest instructions (-icount): left out of test=all, it runs
// only when named, and scripts/test.sh names it in boots under -icount.
#define KTEST_GUEST_TIME(nm) KTEST_ENTRY(nm, 1)

#define KTEST_PRIO 4          // priority the test bodies run at

void ktest_fail_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int ktest_failed(void);

#define KCHECK(cond) do { \
    if (!(cond)) { ktest_fail_at(__FILE__, __LINE__, "%s", #cond); } \
  } while (0)
#define KCHECK_EQ(a, b) do { \
    long long a_ = (long long)(a), b_ = (long long)(b); \
    if (a_ != b_) { ktest_fail_at(__FILE__, __LINE__, "%s == %lld, expected %lld", #a, a_, b_); } \
  } while (0)
#define KREQUIRE(cond) do { \
    if (!(cond)) { ktest_fail_at(__FILE__, __LINE__, "%s", #cond); return; } \
  } while (0)

// Keep every other hart busy in a spinning priority-0 coroutine so that the
// calling test observes strict single-hart dispatch order on any hart count.
void ktest_hold_other_harts(void);
void ktest_release_other_harts(void);
// Block the calling stackful coroutine until *counter >= target (polling with
// short sleeps), or until timeout_ms passes. Returns 1 on success.
// How long a test waits for an event before calling it lost: a safety net that
// no healthy run comes near, however slow or loaded the host (tests wait for
// events, never for an amount of time to pass).
#define KTEST_PATIENCE_MS 30000
int ktest_wait_count(volatile uint32_t *counter, uint32_t target, uint32_t timeout_ms);
// The same, holding the hart while it waits: for a wait in which this hart,
// once idle, would take the very work it waits for from another hart.
int ktest_spin_count(volatile uint32_t *counter, uint32_t target, uint32_t timeout_ms);

#endif
