// Physical page allocator: hands out runs of physically contiguous 4 KiB pages
// from one RAM range given at boot. See palloc.c for the design.
#ifndef PALLOC_H
#define PALLOC_H
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

#define PAGE_SHIFT 12
#define PAGE_SIZE 4096

// Reports a fatal kernel bug (a bad free, corrupted allocator state) and does
// not return. Defined by the kernel (kernel/printf.c); the host unit tests
// define their own that records the message and longjmps back into the test.
// The allocators always release their locks before calling it.
void kpanic(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

// Manage the pages in [start, end): start is rounded up and end down to a page
// boundary, and the allocator's metadata (free bitmap and per-page tags) is
// carved from the beginning of the range. May be called again to start over on
// a new range (the unit tests do); everything handed out before is forgotten.
void palloc_init(uint64_t start, uint64_t end);

// npages physically contiguous, page-aligned pages, or NULL if no such run is
// free (or npages == 0). Each page's tag is 0 on return.
void *palloc(size_t npages);
// Like palloc, but the pages are zeroed.
void *palloc_zero(size_t npages);
// Return npages pages starting at p. pfree(NULL, n) is a no-op. Panics (through
// kpanic) on a misaligned pointer, a run not wholly inside the managed range,
// npages == 0, or a run containing a page that is already free; in that case
// nothing is freed.
void pfree(void *p, size_t npages);

struct palloc_stats {
  uint64_t total_pages;   // pages available for allocation (metadata excluded)
  uint64_t free_pages;    // pages currently free
  uint64_t allocs;        // successful palloc calls
  uint64_t frees;         // successful pfree calls
  uint64_t failed;        // palloc calls that returned NULL (npages > 0)
};
void palloc_get_stats(struct palloc_stats *st);

// One uint32 of owner-defined data per page (kmalloc keeps its slab state
// here). palloc resets a page's tag to 0 whenever the page is allocated or
// freed. The tag of an allocated page belongs to whoever allocated it, who must
// serialise its own accesses; palloc takes no lock for these.
//   palloc_set_tag: page must be inside the managed range (panics otherwise);
//                   any address within the page selects it.
//   palloc_get_tag: tag of the page containing addr, 0 if addr is outside the
//                   managed range (so it is safe on arbitrary pointers).
void palloc_set_tag(void *page, uint32_t tag);
uint32_t palloc_get_tag(const void *addr);

// True if addr lies in a page managed by palloc (allocated or not).
bool palloc_owns(const void *addr);
// Dense page numbering of the managed range, 0 .. total_pages-1, for owners
// that want compact 32-bit page references. Both panic when out of range.
uint32_t palloc_page_index(const void *addr);
void *palloc_page_addr(uint32_t index);

#endif
