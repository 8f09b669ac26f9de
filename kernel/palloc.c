// Physical page allocator.
//
// Design: one bit per page in a free bitmap (1 = allocated) plus a next-fit
// hint, all under one spinlock.
//
// Why a bitmap and not a buddy allocator: the kernel mostly asks for single
// pages (slabs, stacks, page tables) and only occasionally for short runs, so
// what matters is (1) a fast single-page path and (2) no rounding of runs up to
// powers of two. With the hint pointing at a 64-bit word that recently had a
// free page, a single-page allocation is usually one word load, one "lowest
// zero bit" and one store. Runs use a linear next-fit scan that skips full and
// empty words 64 pages at a time; that is O(pages) in the worst case, which is
// acceptable for rare multi-page requests on at most a few hundred thousand
// pages. The bitmap also makes the checks pfree needs cheap and exact: every
// page of the run must currently be allocated, or nothing is freed.
//
// Metadata lives at the start of the range it describes, so nothing here is
// sized by RAM at compile time: [start, end) is rounded to pages, then the
// first pages hold the bitmap (one bit per page) followed by the tag array
// (one uint32 per page, owner-defined; kmalloc keeps its slab state there).
// The metadata is sized for all pages of the range, which overestimates by the
// metadata pages themselves: at most one page wasted, and no iteration needed.
// Bits past the last page in the final bitmap word are kept set, so the
// scanners never need a bounds check inside a word.
#include "palloc.h"
#include "klib.h"
#include "spinlock.h"

#define ALL_ONES (~(uint64_t)0)

static struct {
  struct spinlock lock;
  uint64_t base;          // address of page 0
  uint64_t npages;        // pages managed
  uint64_t nwords;        // bitmap words
  uint64_t *bitmap;       // bit i set = page i allocated
  uint32_t *tags;         // one per page
  uint64_t hint;          // next-fit: bitmap word to start searching at
  struct palloc_stats st;
} pa = { .lock = SPINLOCK_INIT("palloc") };

// Index (0..63) of the only set bit of x.
static unsigned bit_index(uint64_t x) {
  unsigned i = 0;
  if (!(x & 0xffffffffULL)) { i += 32; x >>= 32; }
  if (!(x & 0xffffULL)) { i += 16; x >>= 16; }
  if (!(x & 0xffULL)) { i += 8; x >>= 8; }
  if (!(x & 0xfULL)) { i += 4; x >>= 4; }
  if (!(x & 0x3ULL)) { i += 2; x >>= 2; }
  if (!(x & 0x1ULL)) { i += 1; }
  return i;
}

static bool bit_test(uint64_t i) { return (pa.bitmap[i / 64] >> (i % 64)) & 1; }
static void bit_set(uint64_t i) { pa.bitmap[i / 64] |= (uint64_t)1 << (i % 64); }
static void bit_clear(uint64_t i) { pa.bitmap[i / 64] &= ~((uint64_t)1 << (i % 64)); }

static void *page_addr(uint64_t i) { return (void *)(uintptr_t)(pa.base + i * PAGE_SIZE); }

void palloc_init(uint64_t start, uint64_t end) {
  spin_init(&pa.lock, "palloc");
  memset(&pa.st, 0, sizeof pa.st);
  pa.base = 0;
  pa.npages = pa.nwords = pa.hint = 0;
  pa.bitmap = 0;
  pa.tags = 0;

  start = ALIGN_UP(start, PAGE_SIZE);
  end = ALIGN_DOWN(end, PAGE_SIZE);
  if (start == 0 || end <= start)   // empty, or start rounded past 2^64
    return;
  uint64_t range = (end - start) / PAGE_SIZE;
  if (range > UINT32_MAX)           // page indices are 32-bit
    range = UINT32_MAX;
  uint64_t words = (range + 63) / 64;
  uint64_t meta = ALIGN_UP(words * 8 + range * 4, PAGE_SIZE) / PAGE_SIZE;
  if (meta >= range)
    return;

  pa.bitmap = (uint64_t *)(uintptr_t)start;
  pa.tags = (uint32_t *)(uintptr_t)(start + words * 8);
  pa.base = start + meta * PAGE_SIZE;
  pa.npages = range - meta;
  pa.nwords = (pa.npages + 63) / 64;
  memset(pa.bitmap, 0, pa.nwords * 8);
  memset(pa.tags, 0, pa.npages * 4);
  if (pa.npages % 64)               // pages past the end look allocated
    pa.bitmap[pa.nwords - 1] = ALL_ONES << (pa.npages % 64);
  pa.st.total_pages = pa.st.free_pages = pa.npages;
}

// Mark pages [first, first+n) allocated and reset their tags. Lock held.
static void *take(uint64_t first, uint64_t n) {
  for (uint64_t i = first; i < first + n; i++) {
    bit_set(i);
    pa.tags[i] = 0;
  }
  pa.hint = (first + n) / 64;
  if (pa.hint >= pa.nwords)
    pa.hint = 0;
  pa.st.free_pages -= n;
  pa.st.allocs++;
  return page_addr(first);
}

// Single page: first word at or after the hint (wrapping) with a zero bit.
static void *alloc_one(void) {
  for (uint64_t k = 0; k < pa.nwords; k++) {
    uint64_t w = pa.hint + k;
    if (w >= pa.nwords)
      w -= pa.nwords;
    uint64_t bits = pa.bitmap[w];
    if (bits != ALL_ONES)
      return take(w * 64 + bit_index(~bits & (bits + 1)), 1);
  }
  return 0;
}

// First run of n free pages that starts in [from, to) and ends by to.
// Returns its first page, or -1. Whole words are skipped when full or empty.
static int64_t find_run(uint64_t from, uint64_t to, uint64_t n) {
  uint64_t run = 0, start = from, i = from;
  while (i < to) {
    uint64_t w = pa.bitmap[i / 64];
    if (i % 64 == 0 && i + 64 <= to && (w == 0 || w == ALL_ONES)) {
      if (w == ALL_ONES) {
        run = 0;
      } else {
        if (run == 0)
          start = i;
        run += 64;
      }
      i += 64;
    } else if ((w >> (i % 64)) & 1) {
      run = 0;
      i++;
    } else {
      if (run == 0)
        start = i;
      run++;
      i++;
    }
    if (run >= n)
      return (int64_t)start;
  }
  return -1;
}

// Run of n > 1 pages: next fit from the hint, then from the start of the
// range up to where a run crossing the hint could end.
static void *alloc_run(uint64_t n) {
  uint64_t h = pa.hint * 64;
  int64_t first = find_run(h, pa.npages, n);
  if (first < 0) {
    uint64_t to = h + n - 1;
    first = find_run(0, to < pa.npages ? to : pa.npages, n);
  }
  return first < 0 ? 0 : take((uint64_t)first, n);
}

void *palloc(size_t npages) {
  if (npages == 0)
    return 0;
  spin_lock(&pa.lock);
  void *p = 0;
  if (npages <= pa.st.free_pages)
    p = npages == 1 ? alloc_one() : alloc_run(npages);
  if (!p)
    pa.st.failed++;
  spin_unlock(&pa.lock);
  return p;
}

void *palloc_zero(size_t npages) {
  void *p = palloc(npages);
  if (p)
    memset(p, 0, npages * PAGE_SIZE);
  return p;
}

void pfree(void *p, size_t npages) {
  if (!p)
    return;
  uint64_t a = (uint64_t)(uintptr_t)p;
  if (a % PAGE_SIZE)
    kpanic("pfree: misaligned pointer %p", p);
  if (npages == 0)
    kpanic("pfree: zero pages at %p", p);

  spin_lock(&pa.lock);
  uint64_t end = pa.base + pa.npages * PAGE_SIZE;
  if (a < pa.base || a >= end || npages > (end - a) / PAGE_SIZE) {
    spin_unlock(&pa.lock);
    kpanic("pfree: %p + %lu pages outside the managed range", p, (unsigned long)npages);
  }
  uint64_t first = (a - pa.base) / PAGE_SIZE;
  for (uint64_t i = first; i < first + npages; i++) {
    if (!bit_test(i)) {
      spin_unlock(&pa.lock);
      kpanic("pfree: double free of page %p (run %p + %lu)",
             page_addr(i), p, (unsigned long)npages);
    }
  }
  for (uint64_t i = first; i < first + npages; i++) {
    bit_clear(i);
    pa.tags[i] = 0;
  }
  pa.st.free_pages += npages;
  pa.st.frees++;
  spin_unlock(&pa.lock);
}

void palloc_get_stats(struct palloc_stats *st) {
  spin_lock(&pa.lock);
  *st = pa.st;
  spin_unlock(&pa.lock);
}

bool palloc_owns(const void *addr) {
  uint64_t a = (uint64_t)(uintptr_t)addr;
  return a >= pa.base && a - pa.base < pa.npages * PAGE_SIZE;
}

uint32_t palloc_page_index(const void *addr) {
  if (!palloc_owns(addr))
    kpanic("palloc_page_index: %p outside the managed range", addr);
  return (uint32_t)(((uint64_t)(uintptr_t)addr - pa.base) / PAGE_SIZE);
}

void *palloc_page_addr(uint32_t index) {
  if (index >= pa.npages)
    kpanic("palloc_page_addr: page %u outside the managed range", (unsigned)index);
  return page_addr(index);
}

// (Relaxed atomics: kfree's per-hart cache reads a tag without the lock its
// writer holds; see kmalloc.c.)
void palloc_set_tag(void *page, uint32_t tag) {
  __atomic_store_n(&pa.tags[palloc_page_index(page)], tag, __ATOMIC_RELAXED);
}

uint32_t palloc_get_tag(const void *addr) {
  if (!palloc_owns(addr))
    return 0;
  return __atomic_load_n(&pa.tags[((uint64_t)(uintptr_t)addr - pa.base) / PAGE_SIZE], __ATOMIC_RELAXED);
}
