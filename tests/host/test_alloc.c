// Host unit tests for kernel/palloc.c and kernel/kmalloc.c.
// "RAM" is an aligned_alloc'd 64 MiB arena (plus an unaligned, odd-sized range
// inside a malloc'd buffer). kpanic is defined here: it records the message and
// longjmps back into the test, so misuse can be checked without dying.
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include "check.h"
#include "palloc.h"
#include "kmalloc.h"

#define ARENA_SIZE (64u << 20)

static char *arena;

static jmp_buf panic_jmp;
static volatile int panic_armed;
static char panic_msg[256];

void kpanic(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(panic_msg, sizeof panic_msg, fmt, ap);
  va_end(ap);
  if (panic_armed) {
    panic_armed = 0;
    longjmp(panic_jmp, 1);
  }
  fprintf(stderr, "unexpected kpanic: %s\n", panic_msg);
  abort();
}

// Run stmt, which must call kpanic with a message containing sub.
#define EXPECT_PANIC(stmt, sub) do { \
  panic_msg[0] = 0; panic_armed = 1; \
  if (setjmp(panic_jmp) == 0) { stmt; panic_armed = 0; CHECK(0 && "no kpanic from: " #stmt); } \
  else CHECK(strstr(panic_msg, (sub)) != NULL); \
} while (0)

// Deterministic PRNG (xorshift64*).
static uint64_t rng_next(uint64_t *s) {
  *s ^= *s >> 12; *s ^= *s << 25; *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1DULL;
}

// What palloc_init should leave for a range of r whole pages.
static uint64_t expected_total(uint64_t r) {
  uint64_t meta = ((r + 63) / 64 * 8 + r * 4 + PAGE_SIZE - 1) / PAGE_SIZE;
  return meta >= r ? 0 : r - meta;
}

static void setup(void) {
  palloc_init((uint64_t)(uintptr_t)arena, (uint64_t)(uintptr_t)arena + ARENA_SIZE);
  kmalloc_init();
}

static struct palloc_stats pstats(void) { struct palloc_stats s; palloc_get_stats(&s); return s; }
static struct kmalloc_stats kstats(void) { struct kmalloc_stats s; kmalloc_get_stats(&s); return s; }

static void fill(void *p, size_t n, uint64_t seed) {
  unsigned char *b = p;
  for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(seed + i * 7 + (i >> 8));
}
static int verify(const void *p, size_t n, uint64_t seed) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i] != (unsigned char)(seed + i * 7 + (i >> 8))) return 0;
  return 1;
}

// The size the allocator should charge for a request of n bytes.
static uint64_t charged(size_t n) {
  static const uint64_t cls[] = { 16, 32, 48, 64, 96, 128, 192, 256, 512, 1024, 2048 };
  for (unsigned i = 0; i < sizeof cls / sizeof cls[0]; i++)
    if (n <= cls[i]) return cls[i];
  return (n + PAGE_SIZE - 1) / PAGE_SIZE * PAGE_SIZE;
}

// ---------------------------------------------------------------- palloc

static void test_init_counts(void) {
  setup();
  struct palloc_stats s = pstats();
  uint64_t total = expected_total(ARENA_SIZE / PAGE_SIZE);
  CHECK_EQ(total, 16367);                 // 16384 pages, 17 of metadata
  CHECK_EQ(s.total_pages, total);
  CHECK_EQ(s.free_pages, total);
  CHECK_EQ(s.allocs, 0);
  CHECK_EQ(s.frees, 0);
  CHECK_EQ(s.failed, 0);
  // Metadata is carved from the start: the first page handed out follows it.
  char *p = palloc(1);
  CHECK(p == arena + (ARENA_SIZE / PAGE_SIZE - total) * PAGE_SIZE);
  pfree(p, 1);

  // Degenerate ranges manage nothing and fail cleanly.
  uint64_t a = (uint64_t)(uintptr_t)arena;
  palloc_init(a, a + PAGE_SIZE - 1);
  CHECK_EQ(pstats().total_pages, 0);
  CHECK(palloc(1) == NULL);
  CHECK_EQ(pstats().failed, 1);
  palloc_init(a + 100, a + 50);
  CHECK_EQ(pstats().total_pages, 0);
  palloc_init(a, a + PAGE_SIZE);          // one page: all metadata
  CHECK_EQ(pstats().total_pages, 0);
  palloc_init(a, a + 2 * PAGE_SIZE);
  CHECK_EQ(pstats().total_pages, 1);
  p = palloc(1);
  CHECK(p == arena + PAGE_SIZE);
  CHECK(palloc(1) == NULL);
  pfree(p, 1);
  CHECK_EQ(pstats().free_pages, 1);
}

static void test_single_pages(void) {
  setup();
  struct palloc_stats base = pstats();
  uint64_t n = base.total_pages;
  char **pages = calloc(n, sizeof *pages);
  unsigned char *seen = calloc(n, 1);
  char *lo = arena, *hi = arena + ARENA_SIZE;
  for (uint64_t i = 0; i < n; i++) {
    char *p = palloc(1);
    CHECK(p != NULL);
    if (!p) break;
    CHECK((uintptr_t)p % PAGE_SIZE == 0);
    CHECK(p >= lo && p + PAGE_SIZE <= hi);
    uint32_t idx = palloc_page_index(p);
    CHECK(idx < n && !seen[idx]);
    if (idx < n) seen[idx] = 1;
    CHECK(palloc_page_addr(idx) == p);
    CHECK_EQ(palloc_get_tag(p), 0);
    *(uint64_t *)p = i;
    pages[i] = p;
  }
  CHECK_EQ(pstats().free_pages, 0);
  CHECK(palloc(1) == NULL);               // exhausted
  CHECK(palloc(2) == NULL);
  CHECK_EQ(pstats().failed, 2);
  for (uint64_t i = 0; i < n; i++)
    CHECK_EQ(*(uint64_t *)pages[i], i);
  for (uint64_t i = 0; i < n; i += 2) pfree(pages[i], 1);   // evens, then odds
  for (uint64_t i = 1; i < n; i += 2) pfree(pages[i], 1);
  struct palloc_stats s = pstats();
  CHECK_EQ(s.free_pages, base.total_pages);
  CHECK_EQ(s.total_pages, base.total_pages);
  CHECK_EQ(s.allocs, n);
  CHECK_EQ(s.frees, n);
  CHECK_EQ(s.failed, 2);
  CHECK(palloc(0) == NULL);
  CHECK_EQ(pstats().failed, 2);           // npages == 0 is not a failure
  free(pages);
  free(seen);
}

struct run { char *p; size_t n; uint64_t seed; };

static void test_page_runs_disjoint_and_coalesce(void) {
  setup();
  struct palloc_stats base = pstats();
  enum { NR = 400 };
  struct run r[NR];
  uint64_t rng = 12345, used = 0;
  for (int i = 0; i < NR; i++) {
    r[i].n = 1 + rng_next(&rng) % 40;
    r[i].seed = rng_next(&rng);
    r[i].p = palloc(r[i].n);
    CHECK(r[i].p != NULL);
    if (!r[i].p) return;
    CHECK((uintptr_t)r[i].p % PAGE_SIZE == 0);
    CHECK(r[i].p >= arena && r[i].p + r[i].n * PAGE_SIZE <= arena + ARENA_SIZE);
    fill(r[i].p, r[i].n * PAGE_SIZE, r[i].seed);
    used += r[i].n;
    // Free a third of them as we go, to make holes for next fit to reuse.
    if (i % 3 == 2) {
      int j = i - 1;
      CHECK(verify(r[j].p, r[j].n * PAGE_SIZE, r[j].seed));
      pfree(r[j].p, r[j].n);
      used -= r[j].n;
      r[j].p = NULL;
    }
  }
  CHECK_EQ(pstats().free_pages, base.total_pages - used);
  for (int i = 0; i < NR; i++)             // every run intact: no overlap
    if (r[i].p) CHECK(verify(r[i].p, r[i].n * PAGE_SIZE, r[i].seed));
  for (int i = NR - 1; i >= 0; i--)
    if (r[i].p) pfree(r[i].p, r[i].n);
  CHECK_EQ(pstats().free_pages, base.total_pages);

  // Fragmentation: with every other page taken no 2-page run exists.
  uint64_t n = base.total_pages;
  char **pages = calloc(n, sizeof *pages);
  for (uint64_t i = 0; i < n; i++) {       // indexed by address, whatever the hint
    char *pg = palloc(1);
    pages[palloc_page_index(pg)] = pg;
  }
  for (uint64_t i = 0; i < n; i += 2) pfree(pages[i], 1);
  uint64_t failed = pstats().failed;
  CHECK(palloc(2) == NULL);
  CHECK_EQ(pstats().failed, failed + 1);
  char *one = palloc(1);
  CHECK(one != NULL);
  pfree(one, 1);
  for (uint64_t i = 1; i < n; i += 2) pfree(pages[i], 1);
  // Everything free again: the whole range is one run.
  char *all = palloc(n);
  CHECK(all != NULL);
  CHECK_EQ(pstats().free_pages, 0);
  pfree(all, n);
  CHECK(palloc(n + 1) == NULL);
  CHECK_EQ(pstats().free_pages, base.total_pages);
  free(pages);
}

static void test_palloc_zero_and_tags(void) {
  setup();
  char *p = palloc(3);
  memset(p, 0xa5, 3 * PAGE_SIZE);
  palloc_set_tag(p, 0x1234);
  palloc_set_tag(p + 2 * PAGE_SIZE, 77);
  CHECK_EQ(palloc_get_tag(p), 0x1234);
  CHECK_EQ(palloc_get_tag(p + 100), 0x1234);   // any address in the page
  CHECK_EQ(palloc_get_tag(p + PAGE_SIZE), 0);
  CHECK_EQ(palloc_get_tag(p + 2 * PAGE_SIZE + 5), 77);
  pfree(p, 3);
  CHECK_EQ(palloc_get_tag(p), 0);              // reset on free
  char *z = palloc_zero(3);
  CHECK(z == p);                               // next fit wrapped to the same run
  int zero = 1;
  for (size_t i = 0; i < 3 * PAGE_SIZE; i++) zero &= z[i] == 0;
  CHECK(zero);
  CHECK_EQ(palloc_get_tag(z + 2 * PAGE_SIZE), 0);
  pfree(z, 3);
  int local;
  CHECK_EQ(palloc_get_tag(&local), 0);         // outside: 0, no crash
  CHECK(!palloc_owns(&local));
  CHECK(!palloc_owns(arena));                  // metadata is not managed
  CHECK(palloc_owns(arena + ARENA_SIZE - 1));
  CHECK(!palloc_owns(arena + ARENA_SIZE));
  EXPECT_PANIC(palloc_set_tag(&local, 1), "outside");
  EXPECT_PANIC(palloc_page_addr((uint32_t)pstats().total_pages), "outside");
}

static void test_odd_range(void) {
  size_t bufsize = (5u << 20) + 3 * PAGE_SIZE;
  char *buf = malloc(bufsize);
  char *start = buf + 123;                      // neither end page aligned
  char *end = start + (5u << 20) + 777;
  palloc_init((uint64_t)(uintptr_t)start, (uint64_t)(uintptr_t)end);
  kmalloc_init();
  uint64_t first = ((uintptr_t)start + PAGE_SIZE - 1) & ~(uintptr_t)(PAGE_SIZE - 1);
  uint64_t last = (uintptr_t)end & ~(uintptr_t)(PAGE_SIZE - 1);
  uint64_t total = expected_total((last - first) / PAGE_SIZE);
  struct palloc_stats base = pstats();
  CHECK(total > 1200);
  CHECK_EQ(base.total_pages, total);
  CHECK_EQ(base.free_pages, total);
  uint64_t got = 0;
  for (;;) {
    char *p = palloc(1);
    if (!p) break;
    CHECK((uintptr_t)p % PAGE_SIZE == 0);
    CHECK((uintptr_t)p >= first + (last - first) / PAGE_SIZE * PAGE_SIZE - total * PAGE_SIZE);
    CHECK((uintptr_t)p + PAGE_SIZE <= last);
    memset(p, (int)got, PAGE_SIZE);
    got++;
  }
  CHECK_EQ(got, total);
  CHECK_EQ(pstats().failed, 1);
  for (uint64_t i = 0; i < total; i++) pfree(palloc_page_addr((uint32_t)i), 1);
  CHECK_EQ(pstats().free_pages, total);

  // kmalloc works on it too, and exhausts cleanly.
  void **objs = malloc(sizeof(void *) * 100000);
  size_t n = 0;
  while (n < 100000 && (objs[n] = kmalloc(1000 + n % 3000)) != NULL) n++;
  CHECK(n < 100000);
  CHECK(n > 1000);
  struct kmalloc_stats ks = kstats();
  CHECK_EQ(ks.failed, 1);
  CHECK_EQ(ks.live_objects, n);
  for (size_t i = 0; i < n; i++) kfree(objs[i]);
  kmalloc_reclaim();
  ks = kstats();
  CHECK_EQ(ks.live_objects, 0);
  CHECK_EQ(ks.live_bytes, 0);
  CHECK_EQ(ks.slab_pages, 0);
  CHECK_EQ(ks.large_pages, 0);
  CHECK_EQ(pstats().free_pages, total);
  free(objs);
  free(buf);
}

static void test_pfree_misuse(void) {
  setup();
  char *p = palloc(4);
  char *q = palloc(1);
  struct palloc_stats before = pstats();
  EXPECT_PANIC(pfree(p + 8, 1), "misaligned");
  EXPECT_PANIC(pfree(arena, 1), "outside");                  // metadata page
  EXPECT_PANIC(pfree(arena + ARENA_SIZE, 1), "outside");
  EXPECT_PANIC(pfree(arena + ARENA_SIZE - PAGE_SIZE, 2), "outside");
  EXPECT_PANIC(pfree(p, 0), "zero");
  pfree(p + PAGE_SIZE, 1);                                  // punch a hole
  before = pstats();
  EXPECT_PANIC(pfree(p + PAGE_SIZE, 1), "double free");
  EXPECT_PANIC(pfree(p, 4), "double free");                 // run with a free page
  EXPECT_PANIC(pfree(q + PAGE_SIZE, 1), "double free");     // never allocated
  struct palloc_stats after = pstats();                     // nothing changed
  CHECK_EQ(after.free_pages, before.free_pages);
  CHECK_EQ(after.frees, before.frees);
  pfree(p, 1);                                               // lock was released
  pfree(p + 2 * PAGE_SIZE, 2);
  pfree(q, 1);
  pfree(NULL, 3);
  CHECK_EQ(pstats().free_pages, pstats().total_pages);
}

// ---------------------------------------------------------------- kmalloc

struct obj { char *p; size_t n; };

static int cmp_obj(const void *a, const void *b) {
  const struct obj *x = a, *y = b;
  return x->p < y->p ? -1 : x->p > y->p;
}

static void test_kmalloc_every_size(void) {
  setup();
  struct palloc_stats pbase = pstats();
  enum { MAXN = 4200, NX = 5 };
  static const size_t extra[NX] = { 8192, 8193, 12289, 65536, 100000 };
  struct obj *o = calloc(MAXN + NX, sizeof *o);
  uint64_t bytes = 0;
  size_t cnt = 0;
  for (size_t i = 0; i < MAXN + NX; i++) {
    size_t n = i < MAXN ? i + 1 : extra[i - MAXN];
    char *p = kmalloc(n);
    CHECK(p != NULL);
    if (!p) return;
    CHECK((uintptr_t)p % 16 == 0);
    if (n > KMALLOC_MAX_SMALL) CHECK((uintptr_t)p % PAGE_SIZE == 0);
    fill(p, n, n);
    o[cnt].p = p;
    o[cnt].n = n;
    cnt++;
    bytes += charged(n);
  }
  struct kmalloc_stats ks = kstats();
  CHECK_EQ(ks.live_objects, cnt);
  CHECK_EQ(ks.live_bytes, bytes);
  CHECK_EQ(ks.allocs, cnt);
  CHECK_EQ(pbase.free_pages - pstats().free_pages, ks.slab_pages + ks.large_pages);
  qsort(o, cnt, sizeof *o, cmp_obj);
  for (size_t i = 0; i + 1 < cnt; i++)
    CHECK(o[i].p + o[i].n <= o[i + 1].p);    // disjoint
  for (size_t i = 0; i < cnt; i++)
    CHECK(verify(o[i].p, o[i].n, o[i].n));
  // Free in a scrambled order.
  uint64_t rng = 99;
  for (size_t i = cnt; i > 1; i--) {
    size_t j = rng_next(&rng) % i;
    struct obj t = o[i - 1]; o[i - 1] = o[j]; o[j] = t;
  }
  for (size_t i = 0; i < cnt; i++) kfree(o[i].p);
  kfree(NULL);
  ks = kstats();
  CHECK_EQ(ks.live_objects, 0);
  CHECK_EQ(ks.live_bytes, 0);
  CHECK_EQ(ks.large_pages, 0);
  CHECK(ks.slab_pages <= 11);                // at most one cached per class
  CHECK_EQ(ks.frees, cnt);
  CHECK_EQ(ks.failed, 0);
  kmalloc_reclaim();
  CHECK_EQ(kstats().slab_pages, 0);
  CHECK_EQ(pstats().free_pages, pbase.total_pages);
  free(o);
}

static void test_kzalloc_and_slab_return(void) {
  setup();
  struct palloc_stats pbase = pstats();
  enum { N = 1000 };
  char *p[N];
  for (int i = 0; i < N; i++) { p[i] = kmalloc(16); memset(p[i], 0xff, 16); }
  CHECK_EQ(kstats().slab_pages, (N + 255) / 256);
  for (int i = 0; i < N; i++) kfree(p[i]);
  CHECK_EQ(kstats().slab_pages, 1);          // empty slabs went back, one cached
  CHECK_EQ(pbase.free_pages - pstats().free_pages, 1);
  for (int i = 0; i < N; i++) {
    p[i] = kzalloc(16);
    int zero = 1;
    for (int k = 0; k < 16; k++) zero &= p[i][k] == 0;
    CHECK(zero);
  }
  for (int i = 0; i < N; i++) kfree(p[i]);
  char *big = kzalloc(3 * PAGE_SIZE + 1);
  CHECK(big != NULL);
  CHECK_EQ(kstats().large_pages, 4);
  CHECK_EQ(kstats().live_bytes, 4 * PAGE_SIZE);
  int zero = 1;
  for (size_t k = 0; k < 3 * PAGE_SIZE + 1; k++) zero &= big[k] == 0;
  CHECK(zero);
  kfree(big);
  char *z = kmalloc(0);                      // a real, freeable object
  CHECK(z != NULL);
  CHECK_EQ(kstats().live_bytes, 16);
  kfree(z);
  uint64_t failed = kstats().failed;
  CHECK(kmalloc(SIZE_MAX) == NULL);
  CHECK(kmalloc(SIZE_MAX - PAGE_SIZE) == NULL);
  CHECK(kmalloc(ARENA_SIZE) == NULL);        // more than RAM
  CHECK_EQ(kstats().failed, failed + 3);
  kmalloc_reclaim();
  CHECK_EQ(pstats().free_pages, pbase.total_pages);
  CHECK_EQ(kstats().live_objects, 0);
}

static void test_kmalloc_random(void) {
  setup();
  struct palloc_stats pbase = pstats();
  enum { SLOTS = 2000, OPS = 100000 };
  struct { char *p; size_t n; uint64_t seed; } *s = calloc(SLOTS, sizeof *s);
  uint64_t rng = 0xC0FFEE, live = 0, bytes = 0, allocs = 0;
  int bad = 0;
  for (int op = 0; op < OPS; op++) {
    size_t i = rng_next(&rng) % SLOTS;
    if (s[i].p) {
      if (!verify(s[i].p, s[i].n, s[i].seed)) bad++;
      kfree(s[i].p);
      s[i].p = NULL;
      live--;
      bytes -= charged(s[i].n);
    } else {
      uint64_t r = rng_next(&rng);
      size_t n;
      switch (r % 20) {
      case 0: n = 2049 + (r >> 8) % 20000; break;     // large
      case 1: case 2: case 3: case 4: n = 257 + (r >> 8) % 1792; break;
      default: n = 1 + (r >> 8) % 256; break;
      }
      s[i].p = kmalloc(n);
      CHECK(s[i].p != NULL);
      if (!s[i].p) break;
      s[i].n = n;
      s[i].seed = rng_next(&rng);
      fill(s[i].p, n, s[i].seed);
      live++;
      allocs++;
      bytes += charged(n);
    }
    if (op % 997 == 0) {
      struct kmalloc_stats ks = kstats();
      CHECK_EQ(ks.live_objects, live);
      CHECK_EQ(ks.live_bytes, bytes);
    }
  }
  CHECK_EQ(bad, 0);
  for (size_t i = 0; i < SLOTS; i++) {
    if (s[i].p) {
      CHECK(verify(s[i].p, s[i].n, s[i].seed));
      kfree(s[i].p);
    }
  }
  struct kmalloc_stats ks = kstats();
  CHECK_EQ(ks.live_objects, 0);
  CHECK_EQ(ks.live_bytes, 0);
  CHECK_EQ(ks.large_pages, 0);
  CHECK_EQ(ks.allocs, allocs);
  CHECK_EQ(ks.frees, allocs);
  CHECK_EQ(ks.failed, 0);
  kmalloc_reclaim();
  CHECK_EQ(kstats().slab_pages, 0);
  struct palloc_stats ps = pstats();
  CHECK_EQ(ps.free_pages, pbase.total_pages);
  CHECK_EQ(ps.allocs, ps.frees);
  free(s);
}

static void test_48_byte_objects_pack_85_per_page(void) {
  setup();
  enum { N = 100000 };
  void **p = malloc(N * sizeof *p);
  struct palloc_stats p0 = pstats();
  struct kmalloc_stats k0 = kstats();
  for (int i = 0; i < N; i++) p[i] = kmalloc(48);
  struct palloc_stats p1 = pstats();
  struct kmalloc_stats k1 = kstats();
  uint64_t pages = p0.free_pages - p1.free_pages;
  CHECK_EQ(k1.live_bytes - k0.live_bytes, (uint64_t)N * 48);
  CHECK_EQ(k1.slab_pages - k0.slab_pages, pages);
  // Charge each page its share of palloc's metadata too (tag + bitmap bit).
  double per_obj = pages * (PAGE_SIZE + 4 + 1.0 / 8) / N;
  printf("# bytes per 48-byte object: %.2f (%llu pages for %d objects)\n",
         per_obj, (unsigned long long)pages, N);
  CHECK(per_obj <= 64.0);
  CHECK(per_obj <= 48.5);                    // 85 objects per page
  for (int i = 0; i < N; i++) kfree(p[i]);
  kmalloc_reclaim();
  CHECK_EQ(pstats().free_pages, p0.free_pages);
  free(p);
}

static void test_kfree_misuse(void) {
  setup();
  char *a = kmalloc(48), *b = kmalloc(48), *c = kmalloc(48);
  char *big = kmalloc(3 * PAGE_SIZE);
  char *raw = palloc(1);
  int local;
  struct kmalloc_stats before = kstats();
  struct palloc_stats pbefore = pstats();

  EXPECT_PANIC(kfree(a + 1), "not the start");
  EXPECT_PANIC(kfree(a + 16), "not the start");             // 16-aligned, mid-object
  EXPECT_PANIC(kfree(a + 85 * 48), "not the start");        // slack at the page end
  EXPECT_PANIC(kfree(c + 48), "double free");               // never handed out
  EXPECT_PANIC(kfree(big + 8), "not the start");
  EXPECT_PANIC(kfree(big + PAGE_SIZE), "not a kmalloc");    // inside a large run
  EXPECT_PANIC(kfree(raw), "not a kmalloc");                // palloc page
  EXPECT_PANIC(kfree(&local), "not a kmalloc");             // not RAM at all
  EXPECT_PANIC(kfree(arena), "not a kmalloc");              // palloc metadata
  struct kmalloc_stats mid = kstats();
  CHECK_EQ(mid.live_objects, before.live_objects);
  CHECK_EQ(mid.frees, before.frees);
  CHECK_EQ(pstats().free_pages, pbefore.free_pages);

  kfree(b);
  EXPECT_PANIC(kfree(b), "double free");                    // first free object
  kfree(a);
  EXPECT_PANIC(kfree(b), "double free");                    // deeper in the chain
  EXPECT_PANIC(kfree(a), "double free");
  kfree(big);
  EXPECT_PANIC(kfree(big), "not a kmalloc");                // large double free

  // A live object whose contents happen to look free is not a false positive.
  char *d = kmalloc(16), *e = kmalloc(16);
  kfree(d);
  memcpy(e, d, 16);                                         // copy the free marker
  kfree(e);
  EXPECT_PANIC(kfree(e), "double free");
  EXPECT_PANIC(kfree(d), "double free");

  kfree(c);                                                 // slab empty: cached
  EXPECT_PANIC(kfree(c), "double free");
  kmalloc_reclaim();
  EXPECT_PANIC(kfree(c), "not a kmalloc");                  // page gone back to palloc

  pfree(raw, 1);
  struct kmalloc_stats ks = kstats();                       // usable, nothing leaked
  CHECK_EQ(ks.live_objects, 0);
  CHECK_EQ(ks.live_bytes, 0);
  CHECK_EQ(ks.allocs, ks.frees);
  char *f = kmalloc(48);
  CHECK(f != NULL);
  kfree(f);
  kmalloc_reclaim();
  CHECK_EQ(pstats().free_pages, pstats().total_pages);
}

// ---------------------------------------------------------------- threads

#define NTHREADS 4
#define THREAD_OPS 40000

static void *stress(void *arg) {
  uint64_t rng = 1000 + (uintptr_t)arg;
  enum { SLOTS = 300 };
  struct { char *p; size_t n; int page; uint64_t seed; } s[SLOTS];
  memset(s, 0, sizeof s);
  long bad = 0;
  for (int op = 0; op < THREAD_OPS; op++) {
    int i = rng_next(&rng) % SLOTS;
    if (s[i].p) {
      if (!verify(s[i].p, s[i].n, s[i].seed)) bad++;
      if (s[i].page) pfree(s[i].p, s[i].n / PAGE_SIZE);
      else kfree(s[i].p);
      s[i].p = NULL;
      continue;
    }
    uint64_t r = rng_next(&rng);
    s[i].seed = r;
    s[i].page = r % 10 == 0;
    if (s[i].page) {
      s[i].n = (1 + (r >> 8) % 3) * PAGE_SIZE;
      s[i].p = palloc(s[i].n / PAGE_SIZE);
    } else {
      s[i].n = r % 10 == 1 ? 2049 + (r >> 8) % 9000 : 1 + (r >> 8) % 600;
      s[i].p = kmalloc(s[i].n);
    }
    if (!s[i].p) { bad++; continue; }
    fill(s[i].p, s[i].n, s[i].seed);
  }
  for (int i = 0; i < SLOTS; i++) {
    if (!s[i].p) continue;
    if (!verify(s[i].p, s[i].n, s[i].seed)) bad++;
    if (s[i].page) pfree(s[i].p, s[i].n / PAGE_SIZE);
    else kfree(s[i].p);
  }
  return (void *)bad;
}

// NTHREADS threads of stress (seeds from seed0): how many bad blocks they saw.
static long run_stress_threads(long seed0) {
  pthread_t t[NTHREADS];
  for (long i = 0; i < NTHREADS; i++)
    CHECK(pthread_create(&t[i], NULL, stress, (void *)(seed0 + i)) == 0);
  long bad = 0;
  for (int i = 0; i < NTHREADS; i++) {
    void *r;
    pthread_join(t[i], &r);
    bad += (long)r;
  }
  return bad;
}

static void test_threads_neither_corrupt_nor_leak(void) {
  setup();
  struct palloc_stats pbase = pstats();
  CHECK_EQ(run_stress_threads(0), 0);
  struct kmalloc_stats ks = kstats();
  CHECK_EQ(ks.live_objects, 0);
  CHECK_EQ(ks.live_bytes, 0);
  CHECK_EQ(ks.large_pages, 0);
  CHECK_EQ(ks.allocs, ks.frees);
  CHECK_EQ(ks.failed, 0);
  CHECK(ks.allocs > NTHREADS * THREAD_OPS / 4);
  kmalloc_reclaim();
  struct palloc_stats ps = pstats();
  CHECK_EQ(ps.free_pages, pbase.total_pages);
  CHECK_EQ(ps.allocs, ps.frees);
  CHECK_EQ(ps.failed, 0);
}

// ---------------------------------------------------------------- per-hart caches

// With the caches on: objects come and go through this thread's cache, the
// counters leave cached objects out, every kind of double free is still
// found (in a cache, back on a slab after a cache overflowed, and a live
// object that merely carries the cached marker is freed, not refused), and
// reclaim gives every page back.
static void test_caches_count_and_catch_double_frees(void) {
  setup();
  kmalloc_use_caches(1);
  struct palloc_stats pbase = pstats();
  enum { N = 20 };
  char *p[N];
  for (int i = 0; i < N; i++) { p[i] = kmalloc(48); CHECK(p[i] != NULL); fill(p[i], 48, i); }
  CHECK_EQ(kstats().live_objects, N);
  CHECK_EQ(kstats().live_bytes, N * 48);
  for (int i = 0; i < N; i++) { CHECK(verify(p[i], 48, i)); kfree(p[i]); }
  struct kmalloc_stats ks = kstats();
  CHECK_EQ(ks.live_objects, 0);
  CHECK_EQ(ks.live_bytes, 0);
  CHECK_EQ(ks.allocs, N);
  CHECK_EQ(ks.frees, N);
  for (int i = 0; i < N; i++)           // some in the cache, the rest on their slab
    EXPECT_PANIC(kfree(p[i]), "double free");
  CHECK_EQ(kstats().frees, N);

  char *e = kmalloc(16), *d = kmalloc(16);
  kfree(d);                             // cached, with the marker
  memcpy(e, d, 16);                     // a live object that looks cached
  kfree(e);                             // freed, not refused
  EXPECT_PANIC(kfree(e), "double free");
  EXPECT_PANIC(kfree(d), "double free");
  EXPECT_PANIC(kfree(d + 1), "not the start");
  CHECK_EQ(kstats().live_objects, 0);

  for (int i = 0; i < N; i++) p[i] = kmalloc(48);   // again, from the cache first
  for (int i = 0; i < N; i++) CHECK(p[i] != NULL);
  CHECK_EQ(kstats().live_objects, N);
  for (int i = 0; i < N; i++) kfree(p[i]);
  kmalloc_reclaim();                    // caches emptied, pages back
  CHECK_EQ(pstats().free_pages, pbase.total_pages);
  ks = kstats();
  CHECK_EQ(ks.live_objects, 0);
  CHECK_EQ(ks.allocs, ks.frees);
  CHECK_EQ(ks.slab_pages, 0);
}

static void test_threads_with_caches(void) {
  setup();
  kmalloc_use_caches(1);
  struct palloc_stats pbase = pstats();
  CHECK_EQ(run_stress_threads(100), 0);
  struct kmalloc_stats ks = kstats();
  CHECK_EQ(ks.live_objects, 0);
  CHECK_EQ(ks.live_bytes, 0);
  CHECK_EQ(ks.allocs, ks.frees);
  CHECK_EQ(ks.failed, 0);
  kmalloc_reclaim();
  CHECK_EQ(pstats().free_pages, pbase.total_pages);
  kmalloc_use_caches(0);
}

CHECK_MAIN_BEGIN("test_alloc")
  arena = aligned_alloc(PAGE_SIZE, ARENA_SIZE);
  if (!arena) { printf("FAIL test_alloc/setup: no arena\n"); return 1; }
  RUN_TEST(test_init_counts);
  RUN_TEST(test_single_pages);
  RUN_TEST(test_page_runs_disjoint_and_coalesce);
  RUN_TEST(test_palloc_zero_and_tags);
  RUN_TEST(test_odd_range);
  RUN_TEST(test_pfree_misuse);
  RUN_TEST(test_kmalloc_every_size);
  RUN_TEST(test_kzalloc_and_slab_return);
  RUN_TEST(test_kmalloc_random);
  RUN_TEST(test_48_byte_objects_pack_85_per_page);
  RUN_TEST(test_kfree_misuse);
  RUN_TEST(test_threads_neither_corrupt_nor_leak);
  RUN_TEST(test_caches_count_and_catch_double_frees);
  RUN_TEST(test_threads_with_caches);
  free(arena);
CHECK_MAIN_END
