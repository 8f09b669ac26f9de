// Small-object allocator on top of palloc. See kmalloc.c for the design.
#ifndef KMALLOC_H
#define KMALLOC_H
#include <stdint.h>
#include <stddef.h>

// Largest request served from a size class; anything bigger takes whole pages.
#define KMALLOC_MAX_SMALL 2048

// Reset the allocator's state. Call after palloc_init (and again after any
// later palloc_init, as the unit tests do). The boot-time state of the static
// data is already valid, so the kernel may also skip it.
void kmalloc_init(void);

// n bytes (kmalloc(0) is treated as kmalloc(1)), aligned to 16 bytes (so also
// naturally aligned for any smaller size); requests above KMALLOC_MAX_SMALL
// are page aligned. NULL when memory is exhausted.
void *kmalloc(size_t n);
// Bytes a request of n costs (its class size, or whole pages): what live_bytes
// counts for it.
size_t kmalloc_size_class(size_t n);
// Like kmalloc, with the first n bytes zeroed.
void *kzalloc(size_t n);
// Free an object from kmalloc/kzalloc. kfree(NULL) is a no-op. Panics (through
// kpanic) if p is not the start of a live object: inside an object, already
// free, never handed out, or not a kmalloc pointer at all.
void kfree(void *p);

// Per-hart caches in front of the slabs (kmalloc.c): off after kmalloc_init;
// the kernel turns them on at boot, the host tests where they test them.
void kmalloc_use_caches(int on);

// Give every object the per-hart caches hold back to its slab, then cached
// empty slab pages (at most one per size class) back to palloc, so palloc's
// free_pages returns to its pre-workload value.
void kmalloc_reclaim(void);

struct kmalloc_stats {
  uint64_t live_objects;  // allocated and not yet freed
  uint64_t live_bytes;    // sum over live objects of class size, or pages*PAGE_SIZE for large ones
  uint64_t slab_pages;    // pages currently held as slabs (including cached empty ones)
  uint64_t large_pages;   // pages currently held by large allocations
  uint64_t allocs;        // successful kmalloc/kzalloc calls
  uint64_t frees;         // successful kfree calls (kfree(NULL) not counted)
  uint64_t failed;        // kmalloc/kzalloc calls that returned NULL
};
void kmalloc_get_stats(struct kmalloc_stats *st);

#endif
