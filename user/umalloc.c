// The user heap (ulib.h): malloc, free, calloc and realloc, as a first-fit free
// list in address order, on memory obtained with brk.
//
// Every block, free or allocated, starts with a 16-byte header; sizes are
// counted in 16-byte units including the header, so every pointer handed out
// is 16-byte aligned, as the RISC-V psABI expects of malloc. Free blocks form
// a circular list sorted by address; free() merges a block with free
// neighbours on either side, so the heap does not crumble into small pieces.
// Memory is never returned to the kernel.
//
// In front of the list, blocks up to QUICK_UNITS (8 KiB) are kept on a LIFO
// list per exact size when freed, and handed out again from it, in O(1):
// without them a server with thousands of connections left a small hole
// beside each one's long-lived blocks (its handshake reply, freed), and every
// malloc walked past all of them, and every free walked to its place among
// them (matrixd with 10,000 idle connections spent most of its time there).
// Blocks on those lists are not merged with their neighbours, except when a
// request larger than QUICK_UNITS finds no room: then they all go back to
// the list and merge (consolidate) before the heap grows.
#include "ulib.h"

struct header {
  struct header *next;   // next free block (only meaningful while free)
  size_t units;          // size of this block in headers, including this one
} __attribute__((aligned(16)));

#define UNIT sizeof(struct header)
#define GROW_UNITS (4096 / UNIT)   // ask the kernel for at least a page at a time

static struct header base;     // a zero-size block that anchors the list
static struct header *freep;   // where the last search stopped

#define QUICK_UNITS (8192 / UNIT + 1)      // an 8 KiB request and its header
static struct header *quick[QUICK_UNITS + 1];   // quick[u]: free blocks of exactly u units

// Extends the heap by at least `units` and puts the new block on the free list.
static void list_insert(struct header *bp);

static struct header *morecore(size_t units) {
  if (units < GROW_UNITS)
    units = GROW_UNITS;
  long cur = brk(0);
  if (cur < 0)
    return NULL;
  // The break need not be aligned (the kernel starts it at the end of the
  // program image), and somebody else may have moved it since last time.
  uintptr_t start = ((uintptr_t)cur + UNIT - 1) & ~(uintptr_t)(UNIT - 1);
  uintptr_t end = start + units * UNIT;
  long r = brk((void *)end);
  if (r < 0 || (uintptr_t)r != end)
    return NULL;
  struct header *h = (struct header *)start;
  h->units = units;
  list_insert(h);                   // (not a quick list: malloc looks for it on the list)
  return freep;
}

// Give every block on the quick lists back to the list, merged with its free
// neighbours. Returns whether there were any.
static int consolidate(void) {
  int any = 0;
  for (size_t u = 1; u <= QUICK_UNITS; u++)
    while (quick[u]) {
      struct header *b = quick[u];
      quick[u] = b->next;
      list_insert(b);
      any = 1;
    }
  return any;
}

static void *malloc_unlocked(size_t n) {
  // Nothing larger than the whole heap area can succeed, and the check keeps
  // the unit computation below from overflowing.
  if (n > USER_HEAP_MAX)
    return NULL;
  if (n == 0)
    n = 1;   // still a distinct pointer with room behind it
  size_t units = (n + UNIT - 1) / UNIT + 1;
  struct header *q = units <= QUICK_UNITS ? quick[units] : NULL;
  if (q) {
    quick[units] = q->next;
    return q + 1;
  }
  if (freep == NULL) {
    base.next = &base;
    base.units = 0;
    freep = &base;
  }
  struct header *prev = freep;
  for (struct header *p = prev->next;; prev = p, p = p->next) {
    if (p->units >= units) {
      if (p->units == units) {
        prev->next = p->next;
      } else {
        // Hand out the head of the block: the free rest stays at the top,
        // where the next growth of the heap merges with it. (Handing out the
        // tail left each rest below the block just given out: a server
        // making 2 KiB coroutine stacks grew the heap a page per stack, the
        // rest of each page left to smaller requests; 12 KiB of heap per
        // matrixd connection that needs 7.6.)
        struct header *rest = p + units;
        rest->units = p->units - units;
        rest->next = p->next;
        prev->next = rest;
        p->units = units;
      }
      freep = prev;
      return p + 1;
    }
    if (p == freep) {   // went all the way round: nothing fits
      // A large request may fit once the quick lists' blocks are merged
      // back (a small one would only bring their holes back onto the list).
      if (units > QUICK_UNITS && consolidate()) {
        prev = freep;
        p = prev;
        continue;
      }
      p = morecore(units);
      if (p == NULL)
        return NULL;
    }
  }
}

static void free_unlocked(void *ptr) {
  if (ptr == NULL)
    return;
  struct header *bp = (struct header *)ptr - 1;
  if (bp->units <= QUICK_UNITS) {
    bp->next = quick[bp->units];
    quick[bp->units] = bp;
    return;
  }
  list_insert(bp);
}

// Put bp on the address-ordered list, merged with free neighbours.
static void list_insert(struct header *bp) {
  // Find the free block p after which bp belongs in address order.
  struct header *p = freep;
  while (!(bp > p && bp < p->next)) {
    // p is the highest free block: bp goes after it (above everything) or
    // before its successor, the lowest (below everything).
    if (p >= p->next && (bp > p || bp < p->next))
      break;
    p = p->next;
  }
  if (bp + bp->units == p->next) {   // merge with the block above
    bp->units += p->next->units;
    bp->next = p->next->next;
  } else {
    bp->next = p->next;
  }
  if (p + p->units == bp) {   // merge with the block below
    p->units += bp->units;
    p->next = bp->next;
  } else {
    p->next = bp;
  }
  freep = p;
}

void *calloc(size_t count, size_t size) {
  if (size != 0 && count > SIZE_MAX / size)
    return NULL;   // count * size would overflow
  void *p = malloc(count * size);
  if (p != NULL)
    memset(p, 0, count * size);
  return p;
}

void *realloc(void *ptr, size_t n) {
  if (ptr == NULL)
    return malloc(n);
  if (n == 0) {
    free(ptr);
    return NULL;
  }
  struct header *h = (struct header *)ptr - 1;
  size_t have = (h->units - 1) * UNIT;
  if (n <= have)
    return ptr;   // it already fits; shrinking in place is not worth it here
  void *q = malloc(n);
  if (q == NULL)
    return NULL;   // the old block stays valid, as C requires
  memcpy(q, ptr, have);
  free(ptr);
  return q;
}

// The allocator is shared by every thread of the process (alloc_cpu threads,
// the UT models' thousands, the executor growing its slot table on any of
// them): one lock around it, which yields rather than spin when its holder is
// not running (ulock_acquire; growing the heap is a system call).
static volatile int malloc_lock;

void *malloc(size_t n) {
  ulock_acquire(&malloc_lock);
  void *p = malloc_unlocked(n);
  ulock_release(&malloc_lock);
  return p;
}

void free(void *ptr) {
  ulock_acquire(&malloc_lock);
  free_unlocked(ptr);
  ulock_release(&malloc_lock);
}
