// A tiny check harness for user test programs: one line per check,
// "<prog>: PASS name" or "<prog>: FAIL name: got X, expected Y", and
// utest_summary() prints "<prog>: N passed, M failed" and returns M.
// scripts/test.sh counts those lines.
#ifndef UTEST_H
#define UTEST_H
#include "ulib.h"

static const char *utest_prog = "test";
static int utest_passed, utest_failed;

static void check(const char *name, long got, long want) {
  if (got == want) {
    utest_passed++;
    printf("%s: PASS %s\n", utest_prog, name);
  } else {
    utest_failed++;
    printf("%s: FAIL %s: got %ld, expected %ld\n", utest_prog, name, got, want);
  }
}

static int utest_summary(void) {
  printf("%s: %d passed, %d failed\n", utest_prog, utest_passed, utest_failed);
  return utest_failed;
}

// Leak checks: the kernel's kmalloc objects and bytes, without its grow-once
// caches (a timer heap may have grown), taken as a baseline with the machine
// at rest (KSTAT_QUIET: init may not have blocked in its wait yet).
static inline void utest_kmalloc(long *objs, long *bytes) {
  *objs = kstat(KSTAT_KMALLOC_OBJECTS | KSTAT_QUIET) - kstat(KSTAT_CACHE_OBJECTS);
  *bytes = kstat(KSTAT_KMALLOC_BYTES | KSTAT_QUIET) - kstat(KSTAT_CACHE_BYTES);
}

// Wait until they are back at the baseline (30 s at most: a safety net, as
// closed connections linger in TIME_WAIT), check, and say what is left if not.
static inline void utest_check_kmalloc_baseline(long objs0, long bytes0) {
  long objs = 0, bytes = 0;
  int same = 0;
  for (int i = 0; i < 3000 && !same; i++) {
    utest_kmalloc(&objs, &bytes);
    same = objs == objs0 && bytes == bytes0;
    if (!same)
      sleep(10);
  }
  check("kmalloc-back-to-baseline", same, 1);
  if (!same)
    printf("%s: kmalloc objects %ld (was %ld), bytes %ld (was %ld); tcp pcbs %ld, "
           "sockets %ld, kernel coroutines %ld, free pages %ld\n",
           utest_prog, objs, objs0, bytes, bytes0, kstat(KSTAT_TCP_PCBS),
           kstat(KSTAT_SOCKETS), kstat(KSTAT_LIVE_COROUTINES), kstat(KSTAT_FREE_PAGES));
}

#endif
