// Helpers shared by the host unit tests that build images byte by byte and
// run outside tools (test_elf, test_fdt, test_initrd). Each test is its own
// binary built from one .c file, so everything here is static; the helpers a
// test does not use are marked unused to keep -Werror quiet.
//
// Include after defining _POSIX_C_SOURCE (for mkdtemp and friends).
#ifndef TESTUTIL_H
#define TESTUTIL_H
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TESTUTIL_UNUSED __attribute__((unused))

//
// Byte order.
//

// The nbytes-byte little-endian field at p.
static TESTUTIL_UNUSED uint64_t get_le(const uint8_t *p, int nbytes) {
  uint64_t v = 0;
  for (int i = nbytes - 1; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static TESTUTIL_UNUSED void put_le(uint8_t *p, int nbytes, uint64_t v) {
  for (int i = 0; i < nbytes; i++, v >>= 8)
    p[i] = (uint8_t)v;
}

// The big-endian 32-bit word at p.
static TESTUTIL_UNUSED uint32_t get_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static TESTUTIL_UNUSED void put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

//
// Buffers.
//

// A copy of src[0..len) in a calloc'd buffer of exactly newlen bytes (at
// least 1 allocated), the tail zero-filled if newlen is larger; so ASan
// reports any read past newlen. Aborts when out of memory.
static TESTUTIL_UNUSED uint8_t *dup_exact(const uint8_t *src, size_t len, size_t newlen) {
  uint8_t *p = calloc(1, newlen ? newlen : 1);
  if (p == NULL)
    abort();
  memcpy(p, src, len < newlen ? len : newlen);
  return p;
}

// Fixed-seed xorshift64: the next number of the sequence in *state.
static TESTUTIL_UNUSED uint64_t xorshift64(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

//
// Files and commands.
//

// Create a fresh directory $TMPDIR/PROG.XXXXXX (TMPDIR defaults to /tmp)
// into dir[0..size), and arm a 600 s alarm: a hang kills the binary, and the
// runner counts that. Returns 0, or -1 after reporting the error on stderr.
static TESTUTIL_UNUSED int setup_tmpdir(char *dir, size_t size, const char *prog) {
  const char *base = getenv("TMPDIR");
  snprintf(dir, size, "%s/%s.XXXXXX", base && *base ? base : "/tmp", prog);
  if (mkdtemp(dir) == NULL) {
    fprintf(stderr, "%s: mkdtemp: %s\n", prog, strerror(errno));
    return -1;
  }
  alarm(600);
  return 0;
}

// Run argv (looked up in PATH) with stdin and stderr on /dev/null and stdout
// into the file `out` (created or truncated), or on /dev/null if out is NULL.
// Returns the exit status, or -1.
static TESTUTIL_UNUSED int run_cmd(char *const argv[], const char *out) {
  int st;
  pid_t pid = fork();

  if (pid < 0)
    return -1;
  if (pid == 0) {
    int fd = open("/dev/null", O_RDWR);
    int ofd = out ? open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644) : fd;
    if (fd >= 0 && ofd >= 0) {
      dup2(fd, 0); dup2(ofd, 1); dup2(fd, 2);
    }
    execvp(argv[0], argv);
    _exit(127);
  }
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// The whole file in a malloc'd buffer of exactly its size, which goes to
// *len. NULL (and *len = 0) if the file is missing, unreadable or empty.
static TESTUTIL_UNUSED uint8_t *slurp(const char *path, size_t *len) {
  FILE *fp = fopen(path, "rb");
  uint8_t *raw = NULL;
  long n;

  *len = 0;
  if (fp == NULL)
    return NULL;
  if (fseek(fp, 0, SEEK_END) == 0 && (n = ftell(fp)) > 0) {
    rewind(fp);
    raw = malloc((size_t)n);
    if (raw != NULL && fread(raw, 1, (size_t)n, fp) == (size_t)n) {
      *len = (size_t)n;
    } else {
      free(raw);
      raw = NULL;
    }
  }
  fclose(fp);
  return raw;
}

#endif
