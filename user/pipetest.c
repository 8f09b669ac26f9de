// pipetest: moves data through a pipe inside one process.
//
// Processes are started with spawn(), not fork(), and do not inherit
// descriptors, so there is no second process to hold the other end. Writes
// therefore stay within what the pipe can hold (PIPE_SIZE bytes), which never
// blocks, and each is read back before the next. Rounds of different sizes
// move about 12 KiB in total, so the pipe's ring buffer wraps around several
// times at different offsets.
#include "ulib.h"

static int passed, failed;

static void check(const char *name, long got, long expected) {
  if (got == expected) {
    printf("pipetest: PASS %s\n", name);
    passed++;
  } else {
    printf("pipetest: FAIL %s: got %ld%s%s, expected %ld\n", name, got, got < 0 ? " " : "",
           errname(got), expected);
    failed++;
  }
}

static char out[PIPE_SIZE], in[PIPE_SIZE];

// A byte pattern that differs for every position in the whole stream, so a
// lost, repeated or reordered chunk shows up in the comparison.
static char pattern(long pos) {
  return (char)(pos * 7 + pos / 251);
}

// Reads exactly n bytes (a read returns what is there, possibly less).
static long read_full(int fd, char *buf, long n) {
  long got = 0;
  while (got < n) {
    long r = read(fd, buf + got, n - got);
    if (r <= 0)
      return r < 0 ? r : got;
    got += r;
  }
  return got;
}

int main(void) {
  int fds[2];
  int r = pipe(fds);
  check("pipe", r, 0);
  if (r < 0)
    return 1;
  printf("pipetest: pipe has read end %d, write end %d\n", fds[0], fds[1]);

  static const long rounds[] = {3000, 3000, 1000, PIPE_SIZE, 1, 2999, 1};
  long pos = 0;
  for (size_t i = 0; i < sizeof rounds / sizeof rounds[0]; i++) {
    long n = rounds[i];
    char name[48];
    for (long j = 0; j < n; j++)
      out[j] = pattern(pos + j);
    snprintf(name, sizeof name, "round%d-write-%ld", (int)i, n);
    check(name, write(fds[1], out, n), n);
    memset(in, 0, sizeof in);
    snprintf(name, sizeof name, "round%d-read-%ld", (int)i, n);
    check(name, read_full(fds[0], in, n), n);
    snprintf(name, sizeof name, "round%d-data", (int)i);
    check(name, memcmp(in, out, (size_t)n) == 0, 1);
    pos += n;
  }
  printf("pipetest: moved %ld bytes\n", pos);

  // A read asks for more than is there: it returns what is there.
  check("short-read-write", write(fds[1], "hello", 5), 5);
  check("short-read", read(fds[0], in, sizeof in), 5);
  check("short-read-data", memcmp(in, "hello", 5) == 0, 1);

  // Close the write end with data still inside: the reader drains it first,
  // then sees end of file (0), and keeps seeing it.
  check("drain-write", write(fds[1], "tail", 4), 4);
  check("close-write-end", close(fds[1]), 0);
  check("drain-read", read(fds[0], in, sizeof in), 4);
  check("drain-data", memcmp(in, "tail", 4) == 0, 1);
  check("eof", read(fds[0], in, sizeof in), 0);
  check("eof-again", read(fds[0], in, sizeof in), 0);
  check("close-read-end", close(fds[0]), 0);

  printf("pipetest: %d passed, %d failed\n", passed, failed);
  return failed;
}
