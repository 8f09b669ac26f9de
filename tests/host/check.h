// Minimal harness for the host unit tests. Each test binary runs its TEST()s and
// prints one line per test:  "PASS <binary>/<test>"  or  "FAIL <binary>/<test>: why".
// The runner (scripts/test.sh) counts those lines; a binary that dies (ASan/UBSan
// report, crash) without printing its lines is counted as a failure by the runner.
#ifndef CHECK_H
#define CHECK_H
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failed_;          // set by CHECK in the current test
static int check_total_failures_;
static char check_why_[512];

static void check_note_(const char *file, int line, const char *what) {
  if (!check_failed_)
    snprintf(check_why_, sizeof check_why_, "%s:%d: %s", file, line, what);
  check_failed_ = 1;
}
static void check_note_eq_(const char *file, int line, const char *a, long long av,
                           const char *b, long long bv) {
  if (!check_failed_)
    snprintf(check_why_, sizeof check_why_, "%s:%d: %s == %lld, expected %s == %lld",
             file, line, a, av, b, bv);
  check_failed_ = 1;
}

// Inside a loop of checks: append where the current test failed (say
// " [iteration 7]") to its reason. Does nothing while the test has not failed.
static __attribute__((unused, format(printf, 1, 2))) void check_context(const char *fmt, ...) {
  size_t n = strlen(check_why_);
  va_list ap;

  if (!check_failed_)
    return;
  va_start(ap, fmt);
  vsnprintf(check_why_ + n, sizeof check_why_ - n, fmt, ap);
  va_end(ap);
}

#define CHECK(cond) do { \
    if (!(cond)) { check_note_(__FILE__, __LINE__, #cond); } \
  } while (0)
#define CHECK_EQ(a, b) do { \
    long long a_ = (long long)(a), b_ = (long long)(b); \
    if (a_ != b_) { check_note_eq_(__FILE__, __LINE__, #a, a_, #b, b_); } \
  } while (0)

#define RUN_TEST(name) do { \
    check_failed_ = 0; \
    check_why_[0] = 0; \
    name(); \
    if (check_failed_) { \
      check_total_failures_++; \
      printf("FAIL %s/%s: %s\n", check_binary_, #name, check_why_); \
    } else { \
      printf("PASS %s/%s\n", check_binary_, #name); \
    } \
    fflush(stdout); \
  } while (0)

#define CHECK_MAIN_BEGIN(bin) static const char *check_binary_ = bin; \
  int main(int argc, char **argv) { (void)argc; (void)argv;
#define CHECK_MAIN_END return check_total_failures_ ? 1 : 0; }

#endif
