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

#endif
