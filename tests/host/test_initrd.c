// Host unit tests for kernel/initrd.c and scripts/mkinitrd.py.
//
// Archives are packed at run time by the real packer (python3
// scripts/mkinitrd.py) from files written into a mkdtemp() directory, so the
// tests check the packer and the reader against each other and against the
// format in initrd.h, which this file decodes on its own (ref_*). Every blob
// handed to initrd_open sits in a malloc'd buffer of exactly its length, so
// ASan reports any read past the end. Malformed archives are derived from a
// good one one field at a time; then truncation at every length and a
// fixed-seed fuzz whose verdicts must match the reference.
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "testutil.h"
#include "abi.h"
#include "initrd.h"

typedef unsigned __int128 u128;

static char tmpdir[256];

// Field positions from initrd.h.
#define COUNT(b) get_le((b) + 8, 4)
#define ENT(b, i) ((b) + 16 + 48 * (uint64_t)(i))
#define E_OFF(e) get_le((e) + 32, 8)
#define E_SIZE(e) get_le((e) + 40, 8)

//
// Running the packer.
//

// python3 scripts/mkinitrd.py OUT FILES... (NULL-terminated list).
static int mkinitrd(const char *out, const char *const *files) {
  char *argv[32];
  int a = 0;

  argv[a++] = "python3";
  argv[a++] = "scripts/mkinitrd.py";
  argv[a++] = (char *)out;
  for (; *files != NULL && a < 31; files++)
    argv[a++] = (char *)*files;
  argv[a] = NULL;
  return run_cmd(argv, NULL);
}

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static void write_file(const char *path, const void *data, size_t n) {
  FILE *fp = fopen(path, "wb");
  if (fp == NULL || fwrite(data, 1, n, fp) != n) {
    fprintf(stderr, "test_initrd: cannot write %s\n", path);
    abort();
  }
  fclose(fp);
}

// Forget the open archive before its buffer goes away.
static void close_rd(void) {
  CHECK_EQ(initrd_open(NULL, 0), -EINVAL);
  CHECK_EQ(initrd_count(), 0);
}

//
// The test files.
//

#define NFILES 5
static const char *const names[NFILES] = {
  "hello", "empty", "abcdefghijklmnopqrstuvwxyz01234", "odd", "bin",
};
static uint8_t *contents[NFILES];
static size_t sizes[NFILES];
static char paths[NFILES][400];

static void make_files(void) {
  static const size_t want[NFILES] = { 13, 0, 4097, 13, 64 };
  uint32_t x = 12345;

  char sub[300];
  snprintf(sub, sizeof sub, "%s/sub", tmpdir);
  mkdir(sub, 0755);
  for (int i = 0; i < NFILES; i++) {
    sizes[i] = want[i];
    contents[i] = malloc(sizes[i] + 1);
    if (contents[i] == NULL)
      abort();
    for (size_t k = 0; k < sizes[i]; k++) {
      x = x * 1103515245 + 12345;
      contents[i][k] = (uint8_t)(x >> 16);
    }
    if (i == 0)
      memcpy(contents[i], "hello, coral\n", 13);
    // One file lives in a subdirectory: stored under its basename.
    snprintf(paths[i], sizeof paths[i], "%s/%s", i == 2 ? sub : tmpdir, names[i]);
    write_file(paths[i], contents[i], sizes[i]);
  }
}

static void remove_files(void) {
  char sub[300];
  for (int i = 0; i < NFILES; i++) {
    unlink(paths[i]);
    free(contents[i]);
  }
  snprintf(sub, sizeof sub, "%s/sub", tmpdir);
  rmdir(sub);
}

struct blob {
  uint8_t *p;
  size_t len;
};

// The archive of all the test files, packed once.
static struct blob good;
static char good_why[300];

static struct blob *good_archive(void) {
  char out[300];
  const char *files[NFILES + 1];

  if (good.p != NULL || good_why[0] != '\0')
    return &good;
  snprintf(out, sizeof out, "%s/good.img", tmpdir);
  for (int i = 0; i < NFILES; i++)
    files[i] = paths[i];
  files[NFILES] = NULL;
  int rc = mkinitrd(out, files);
  if (rc != 0 || (good.p = slurp(out, &good.len)) == NULL)
    snprintf(good_why, sizeof good_why, "python3 scripts/mkinitrd.py failed (exit %d)", rc);
  unlink(out);
  return &good;
}

#define NEED_GOOD(var) struct blob *var = good_archive(); \
  if (var->p == NULL) { check_failed_ = 1; \
    snprintf(check_why_, sizeof check_why_, "%s", good_why); return; }

//
// The reference reader.
//

// The verdict initrd_open must give, decided from the rules in initrd.h.
static int ref_verdict(const uint8_t *b, size_t len) {
  if (len < 16 || memcmp(b, "CORALRD1", 8) != 0 || get_le(b + 12, 4) != 0)
    return -EINVAL;
  uint64_t n = COUNT(b);
  u128 table_end = 16 + (u128)48 * n;
  if (n > INITRD_MAX_FILES || table_end > len)
    return -EINVAL;
  for (uint64_t i = 0; i < n; i++) {
    const uint8_t *e = ENT(b, i);
    size_t nl = 0;
    while (nl < 32 && e[nl] != 0)
      nl++;
    if (nl == 0 || nl == 32)
      return -EINVAL;
    if (E_OFF(e) % 8 != 0 || E_OFF(e) < table_end || (u128)E_OFF(e) + E_SIZE(e) > len)
      return -EINVAL;
    for (uint64_t j = 0; j < i; j++)
      if (strcmp((const char *)ENT(b, j), (const char *)e) == 0)
        return -EINVAL;
  }
  return 0;
}

// After a successful open of b[0..len): everything initrd.h promises, and
// agreement with the reference decoding.
static void check_open_archive(const uint8_t *b, size_t len) {
  uint64_t n = COUNT(b);

  CHECK_EQ(initrd_count(), n);
  CHECK(initrd_name(-1) == NULL);
  CHECK(initrd_name((int)n) == NULL);
  for (uint64_t i = 0; i < n && !check_failed_; i++) {
    const char *name = initrd_name((int)i);
    const uint8_t *e = ENT(b, i);
    CHECK(name == (const char *)e);
    if (name == NULL)
      continue;
    CHECK(strnlen(name, 32) < 32 && strnlen(name, 32) > 0);
    const void *data = NULL;
    size_t size = 12345;
    CHECK_EQ(initrd_find(name, &data, &size), 0);
    CHECK(data == b + E_OFF(e));
    CHECK_EQ(size, E_SIZE(e));
    CHECK((const uint8_t *)data >= b && (u128)((const uint8_t *)data - b) + size <= len);
  }
}

//
// Tests.
//

// The packer's output, decoded by hand, is exactly the documented format.
static void test_packer_output_is_the_documented_format(void) {
  NEED_GOOD(g);
  const uint8_t *b = g->p;

  CHECK(g->len >= 16);
  CHECK(memcmp(b, INITRD_MAGIC, 8) == 0);
  CHECK_EQ(COUNT(b), NFILES);
  CHECK_EQ(get_le(b + 12, 4), 0);
  uint64_t expect_off = (16 + 48 * NFILES + 7) / 8 * 8;
  for (int i = 0; i < NFILES; i++) {
    const uint8_t *e = ENT(b, i);
    CHECK(strcmp((const char *)e, names[i]) == 0);
    for (size_t k = strlen(names[i]); k < 32; k++)
      CHECK_EQ(e[k], 0);                       // NUL-padded
    CHECK_EQ(E_OFF(e), expect_off);            // in order, 8-aligned, packed
    CHECK_EQ(E_SIZE(e), sizes[i]);
    CHECK(memcmp(b + E_OFF(e), contents[i], sizes[i]) == 0);
    for (uint64_t k = E_OFF(e) + sizes[i]; k < (E_OFF(e) + sizes[i] + 7) / 8 * 8; k++)
      CHECK_EQ(b[k], 0);                       // zero padding
    expect_off = (E_OFF(e) + sizes[i] + 7) / 8 * 8;
  }
  CHECK_EQ(g->len, expect_off);
  for (uint64_t k = 16 + 48 * NFILES; k < E_OFF(ENT(b, 0)); k++)
    CHECK_EQ(b[k], 0);
}

static void test_find_every_file_and_no_near_miss(void) {
  NEED_GOOD(g);
  uint8_t *b = dup_exact(g->p, g->len, g->len);
  const void *data;
  size_t size;

  CHECK_EQ(initrd_open(b, g->len), 0);
  CHECK_EQ(initrd_count(), NFILES);
  for (int i = 0; i < NFILES; i++) {
    CHECK(initrd_name(i) != NULL && strcmp(initrd_name(i), names[i]) == 0);
    data = NULL;
    size = 999;
    CHECK_EQ(initrd_find(names[i], &data, &size), 0);
    CHECK_EQ(size, sizes[i]);
    CHECK(data != NULL && memcmp(data, contents[i], sizes[i]) == 0);
    CHECK(((const uint8_t *)data - b) % 8 == 0);
    CHECK_EQ(initrd_find(names[i], NULL, NULL), 0);
  }
  check_open_archive(b, g->len);
  static const char *const missing[] = {
    "", "hell", "hello2", "HELLO", "sub/abcdefghijklmnopqrstuvwxyz01234",
    "abcdefghijklmnopqrstuvwxyz0123", "abcdefghijklmnopqrstuvwxyz012345", "emptyy", " odd",
  };
  for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
    data = (const void *)1;
    size = 7;
    CHECK_EQ(initrd_find(missing[i], &data, &size), -ENOENT);
    CHECK(data == (const void *)1 && size == 7);          // untouched
  }
  CHECK_EQ(initrd_find(NULL, &data, &size), -ENOENT);
  CHECK(initrd_name(NFILES) == NULL);
  CHECK(initrd_name(-1) == NULL);
  close_rd();
  free(b);
}

// Before any open, and after a failed one, the initrd is empty.
static void test_empty_state(void) {
  NEED_GOOD(g);
  uint8_t *b = dup_exact(g->p, g->len, g->len);
  const void *data = NULL;
  size_t size = 0;

  close_rd();
  CHECK_EQ(initrd_find("hello", &data, &size), -ENOENT);
  CHECK(initrd_name(0) == NULL);
  CHECK_EQ(initrd_open(b, g->len), 0);
  CHECK_EQ(initrd_count(), NFILES);
  b[0] ^= 1;
  CHECK_EQ(initrd_open(b, g->len), -EINVAL);       // a failed open forgets the old one
  CHECK_EQ(initrd_count(), 0);
  CHECK_EQ(initrd_find("hello", &data, &size), -ENOENT);
  CHECK(initrd_name(0) == NULL);
  b[0] ^= 1;
  CHECK_EQ(initrd_open(b, g->len), 0);             // and a good one works again
  CHECK_EQ(initrd_find("hello", &data, &size), 0);
  close_rd();
  free(b);
}

// The packer: an empty archive, determinism, and its refusals.
static void test_mkinitrd(void) {
  char out[300], out2[300], tmp[320], dup1[400], dup2[400], d1[300], d2[300], longname[300];
  const char *none[] = { NULL };
  size_t len, len2;
  uint8_t *b, *b2;

  snprintf(out, sizeof out, "%s/t.img", tmpdir);
  snprintf(out2, sizeof out2, "%s/t2.img", tmpdir);
  snprintf(tmp, sizeof tmp, "%s.tmp", out);

  // No files: a valid, empty archive.
  CHECK_EQ(mkinitrd(out, none), 0);
  b = slurp(out, &len);
  CHECK(b != NULL && len == 16);
  if (b != NULL) {
    CHECK_EQ(initrd_open(b, len), 0);
    CHECK_EQ(initrd_count(), 0);
    CHECK(initrd_name(0) == NULL);
    CHECK_EQ(initrd_find("hello", NULL, NULL), -ENOENT);
    close_rd();
  }
  free(b);
  unlink(out);

  // The same inputs give the same bytes.
  const char *two[] = { paths[0], paths[3], NULL };
  CHECK_EQ(mkinitrd(out, two), 0);
  CHECK_EQ(mkinitrd(out2, two), 0);
  b = slurp(out, &len);
  b2 = slurp(out2, &len2);
  CHECK(b != NULL && b2 != NULL && len == len2 && memcmp(b, b2, len) == 0);
  free(b);
  free(b2);
  unlink(out2);

  // Refusals leave no output (and the previous archive stays intact).
  snprintf(longname, sizeof longname, "%s/abcdefghijklmnopqrstuvwxyz012345", tmpdir); // 32 bytes
  write_file(longname, "x", 1);
  const char *toolong[] = { paths[0], longname, NULL };
  CHECK_EQ(mkinitrd(out2, toolong), 1);
  CHECK(!exists(out2));
  CHECK_EQ(mkinitrd(out, toolong), 1);
  b = slurp(out, &len);
  CHECK(b != NULL && len == len2);             // still the two-file archive
  free(b);
  unlink(out);
  unlink(longname);

  snprintf(d1, sizeof d1, "%s/d1", tmpdir);
  snprintf(d2, sizeof d2, "%s/d2", tmpdir);
  mkdir(d1, 0755);
  mkdir(d2, 0755);
  snprintf(dup1, sizeof dup1, "%s/same", d1);
  snprintf(dup2, sizeof dup2, "%s/same", d2);
  write_file(dup1, "1", 1);
  write_file(dup2, "2", 1);
  const char *dups[] = { dup1, dup2, NULL };
  CHECK_EQ(mkinitrd(out2, dups), 1);
  CHECK(!exists(out2));
  const char *dupsame[] = { paths[0], paths[0], NULL };
  CHECK_EQ(mkinitrd(out2, dupsame), 1);
  CHECK(!exists(out2));
  unlink(dup1);
  unlink(dup2);
  rmdir(d1);
  rmdir(d2);

  char nofile[300];
  snprintf(nofile, sizeof nofile, "%s/does-not-exist", tmpdir);
  const char *missing[] = { nofile, NULL };
  CHECK_EQ(mkinitrd(out2, missing), 1);
  CHECK(!exists(out2));
  const char *dirarg[] = { tmpdir, NULL };         // a directory is not a file
  CHECK_EQ(mkinitrd(out2, dirarg), 1);
  CHECK(!exists(out2));

  char *usage[] = { "python3", "scripts/mkinitrd.py", NULL };
  CHECK_EQ(run_cmd(usage, NULL), 2);
  CHECK(!exists(tmp));
}

// Apply `stmt` to a copy `m` (length `mlen`) of the good archive; it must be
// refused, and leave the initrd empty.
#define REJECTS(stmt) do { \
    uint8_t *m = dup_exact(g->p, g->len, g->len); \
    size_t mlen = g->len; (void)mlen; \
    stmt; \
    int r_ = initrd_open(m, mlen), ref_ = ref_verdict(m, mlen); \
    if ((r_ != -EINVAL || ref_ != -EINVAL || initrd_count() != 0) && !check_failed_) { \
      check_failed_ = 1; \
      snprintf(check_why_, sizeof check_why_, "%s:%d: %s: initrd_open %d, reference %d, " \
               "count %d, expected -EINVAL", __FILE__, __LINE__, #stmt, r_, ref_, initrd_count()); \
    } \
    close_rd(); \
    free(m); \
  } while (0)
#define ACCEPTS(stmt) do { \
    uint8_t *m = dup_exact(g->p, g->len, g->len); \
    size_t mlen = g->len; (void)mlen; \
    stmt; \
    int r_ = initrd_open(m, mlen), ref_ = ref_verdict(m, mlen); \
    if ((r_ != 0 || ref_ != 0) && !check_failed_) { \
      check_failed_ = 1; \
      snprintf(check_why_, sizeof check_why_, "%s:%d: %s: initrd_open %d, reference %d, " \
               "expected 0", __FILE__, __LINE__, #stmt, r_, ref_); \
    } \
    if (r_ == 0) \
      check_open_archive(m, mlen); \
    close_rd(); \
    free(m); \
  } while (0)

static void test_bad_header(void) {
  NEED_GOOD(g);

  ACCEPTS((void)0);
  for (int k = 0; k < 8; k++)
    REJECTS(m[k] ^= 0x20);
  REJECTS(m[7] = '2');                            // another version
  for (int k = 12; k < 16; k++)
    REJECTS(m[k] = 1);                            // reserved must be 0
  REJECTS(put_le(m + 8, 4, 0xffffffff));
  REJECTS(put_le(m + 8, 4, 0x80000000));
  REJECTS(put_le(m + 8, 4, INITRD_MAX_FILES + 1));
  REJECTS(put_le(m + 8, 4, (mlen - 16) / 48 + 1));     // the table runs past the end
  REJECTS(put_le(m + 8, 4, NFILES + 1));               // file bytes read as an entry: offset 0
  ACCEPTS(put_le(m + 8, 4, NFILES - 1));               // fewer entries: still consistent
  ACCEPTS(put_le(m + 8, 4, 0));
  REJECTS(mlen = 15);
  REJECTS(mlen = 0);
  CHECK_EQ(initrd_open(NULL, 16), -EINVAL);
}

// Every entry rule, on every entry.
static void test_bad_entries(void) {
  NEED_GOOD(g);
  const uint64_t table_end = 16 + 48 * NFILES;

  for (int i = 0; i < NFILES; i++) {
    const uint64_t off = E_OFF(ENT(g->p, i)), size = E_SIZE(ENT(g->p, i));
    // names: unterminated, empty, duplicated
    REJECTS(memset(ENT(m, i), 'a', 32));
    REJECTS(ENT(m, i)[0] = 0);
    REJECTS(strcpy((char *)ENT(m, i), names[(i + 1) % NFILES]));
    ACCEPTS(memset(ENT(m, i), 'z', 31));          // 31 bytes and the NUL: fine
    // data outside the blob, or wrapping around
    REJECTS(put_le(ENT(m, i) + 32, 8, mlen + 8));
    REJECTS(put_le(ENT(m, i) + 32, 8, (mlen - size + 8) / 8 * 8));
    REJECTS(put_le(ENT(m, i) + 40, 8, mlen - off + 1));
    ACCEPTS(put_le(ENT(m, i) + 40, 8, mlen - off));   // up to the last byte
    REJECTS(put_le(ENT(m, i) + 40, 8, UINT64_MAX));
    REJECTS(put_le(ENT(m, i) + 40, 8, UINT64_MAX - off + 1));    // off + size wraps to 0
    REJECTS(put_le(ENT(m, i) + 32, 8, UINT64_MAX - 7));          // 8-aligned, wraps
    REJECTS({ put_le(ENT(m, i) + 32, 8, UINT64_MAX - 7); put_le(ENT(m, i) + 40, 8, 16); });
    REJECTS(put_le(ENT(m, i) + 32, 8, 1ULL << 63));
    // data misaligned, or inside the header and entry table
    REJECTS(put_le(ENT(m, i) + 32, 8, off + 1));
    REJECTS(put_le(ENT(m, i) + 32, 8, off + 4));
    REJECTS(put_le(ENT(m, i) + 32, 8, 0));
    REJECTS(put_le(ENT(m, i) + 32, 8, 16));
    REJECTS(put_le(ENT(m, i) + 32, 8, table_end / 8 * 8 - 8));
    ACCEPTS(put_le(ENT(m, i) + 32, 8, (table_end + 7) / 8 * 8));  // another file's bytes: allowed
    ACCEPTS({ put_le(ENT(m, i) + 32, 8, mlen); put_le(ENT(m, i) + 40, 8, 0); });  // empty, at the end
  }
}

// A hand-built archive of n empty files named f0, f1, ...: the count limit.
static struct blob build_many(uint32_t n) {
  struct blob b;
  uint64_t table_end = 16 + 48 * (uint64_t)n;

  b.len = (table_end + 7) / 8 * 8;
  b.p = calloc(1, b.len);
  if (b.p == NULL)
    abort();
  memcpy(b.p, "CORALRD1", 8);
  put_le(b.p + 8, 4, n);
  for (uint32_t i = 0; i < n; i++) {
    snprintf((char *)ENT(b.p, i), 32, "f%u", i);
    put_le(ENT(b.p, i) + 32, 8, b.len);
  }
  return b;
}

static void test_many_files(void) {
  struct blob b = build_many(INITRD_MAX_FILES);

  CHECK_EQ(initrd_open(b.p, b.len), 0);
  CHECK_EQ(ref_verdict(b.p, b.len), 0);
  check_open_archive(b.p, b.len);
  CHECK(strcmp(initrd_name(INITRD_MAX_FILES - 1), "f1023") == 0);
  close_rd();
  free(b.p);
  b = build_many(INITRD_MAX_FILES + 1);           // fits in the blob, but too many
  CHECK_EQ(initrd_open(b.p, b.len), -EINVAL);
  CHECK_EQ(ref_verdict(b.p, b.len), -EINVAL);
  CHECK_EQ(initrd_count(), 0);
  close_rd();
  free(b.p);
}

// Truncation at every length: accepted exactly when the table and every
// file's bytes are still there.
static void test_truncated(void) {
  NEED_GOOD(g);
  uint64_t need = 16 + 48 * COUNT(g->p);

  for (uint64_t i = 0; i < COUNT(g->p); i++)
    if (E_OFF(ENT(g->p, i)) + E_SIZE(ENT(g->p, i)) > need)
      need = E_OFF(ENT(g->p, i)) + E_SIZE(ENT(g->p, i));
  for (size_t len = 0; len <= g->len && !check_failed_; len++) {
    uint8_t *m = dup_exact(g->p, g->len, len);
    int r = initrd_open(m, len);
    CHECK_EQ(r, len >= need ? 0 : -EINVAL);
    if (r == 0)
      check_open_archive(m, len);
    else
      CHECK_EQ(initrd_count(), 0);
    check_context(" [length %zu of %zu]", len, g->len);
    close_rd();
    free(m);
  }
}

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint64_t rnd(void) { return xorshift64(&rng); }

static void fuzz(const struct blob *g, int iters, int maxflips) {
  const uint64_t hot = 16 + 48 * COUNT(g->p);
  int accepted = 0, rejected = 0;

  for (int it = 0; it < iters && !check_failed_; it++) {
    uint8_t *m = dup_exact(g->p, g->len, g->len);
    int flips = 1 + (int)(rnd() % (uint64_t)maxflips);
    for (int k = 0; k < flips; k++) {
      uint64_t where = rnd() % 8 == 0 ? rnd() % g->len : rnd() % hot;
      switch (rnd() % 5) {
      case 0: m[where] = (uint8_t)rnd(); break;
      case 1: m[where] = 0; break;
      case 2:                           // an 8-byte field gets a small or edge value
        if (where >= 16 && (where & ~7ULL) + 8 <= g->len) {
          static const uint64_t v[] = { 0, 8, 16, UINT64_MAX, UINT64_MAX - 7, 1ULL << 63 };
          uint64_t k2 = rnd() % 8;
          put_le(m + (where & ~7ULL), 8, k2 < 6 ? v[k2] : g->len - 8 * (rnd() % 4));
        }
        break;
      default: m[where] ^= (uint8_t)(1u << (rnd() % 8)); break;
      }
    }
    int r = initrd_open(m, g->len);
    CHECK_EQ(r, ref_verdict(m, g->len));
    if (r == 0) {
      accepted++;
      check_open_archive(m, g->len);
    } else {
      rejected++;
      CHECK_EQ(initrd_count(), 0);
    }
    check_context(" [iteration %d]", it);
    close_rd();
    free(m);
  }
  CHECK(accepted > iters / 50);
  CHECK(rejected > iters / 50);
}

static void test_fuzz(void) {
  NEED_GOOD(g);
  fuzz(g, 5000, 1);
  fuzz(g, 5000, 4);
}

CHECK_MAIN_BEGIN("test_initrd")
  if (setup_tmpdir(tmpdir, sizeof tmpdir, check_binary_) != 0)
    return 1;
  make_files();

  RUN_TEST(test_packer_output_is_the_documented_format);
  RUN_TEST(test_find_every_file_and_no_near_miss);
  RUN_TEST(test_empty_state);
  RUN_TEST(test_mkinitrd);
  RUN_TEST(test_bad_header);
  RUN_TEST(test_bad_entries);
  RUN_TEST(test_many_files);
  RUN_TEST(test_truncated);
  RUN_TEST(test_fuzz);

  remove_files();
  free(good.p);
  rmdir(tmpdir);
CHECK_MAIN_END
