// Small-object allocator (kmalloc/kfree) on top of palloc.
//
// Requests up to KMALLOC_MAX_SMALL bytes are rounded up to one of eleven size
// classes (16 .. 2048 bytes). A slab is one page cut into objects of a single
// class, starting at offset 0, so objects are 16-byte aligned and a 48-byte
// object costs 4096/85 ~ 48.2 bytes. Larger requests take whole pages.
//
// Where the metadata lives, and why. Any header inside the page would cost the
// power-of-two classes a whole object (a 2048-byte slab would hold one object
// instead of two), so slabs carry no header at all. Instead:
//   * The page's 32-bit palloc tag holds the slab state: kind, class, number
//     of objects in use, and the index of the first free object.
//   * The free objects of a slab form a chain through their own first bytes
//     (a 16-bit index of the next free object) plus a 48-bit "free" marker.
//   * Slabs with free objects are on a doubly linked per-class "partial" list.
//     The links (32-bit palloc page indices) are stored in the slab's first
//     free object, which every partial slab has by definition; when that
//     object is handed out the links move to the next free one.
// So a class's free list is "partial slabs, each with its chain", and taking
// or returning an object is O(1). A slab whose last object is freed leaves the
// list and goes back to palloc, except that one empty slab per class is
// cached to avoid thrashing when a single object is allocated and freed in a
// loop (kmalloc_reclaim() drops the caches).
//
// kfree checks its argument against that state before touching anything: the
// page's tag must say slab or large; a slab pointer must be at an object
// boundary below the last whole object; a large pointer must be the first page
// of the run. Double frees: a pointer whose object carries the free marker is
// looked up on its slab's chain (at most 256 steps, and only then), so the
// check is exact even if live data happens to contain the marker. Errors go to
// kpanic after the lock is released.
//
// Allocated objects have their marker cleared, so a live object only looks
// free if its owner wrote the marker pattern into it. One spinlock covers the
// slabs; palloc is called with it held (lock order kmalloc, palloc).
//
// Per-hart caches (kmalloc_use_caches; the kernel turns them on at boot). On
// two harts the one lock was the most contended in the kernel (KTUT's closed
// loop: about 20,000 waits in 5 s, more than one a request). So each hart
// keeps, per size class, up to CACHE_OBJS freed objects of its own behind its
// own lock, which only that hart takes but for a drain. kmalloc takes from
// the hart's cache and kfree gives to it; an empty cache is refilled, and a
// full one half emptied, CACHE_OBJS / 2 objects at a time under one hold of
// the slab lock. The two locks are never held together. To the slabs a
// cached object is in use; it carries a third marker (CACHED_MAGIC*), and a
// kfree of an object with that marker looks for it in every cache before it
// goes on, so a double free is found as exactly as on the slabs. The
// counters leave cached objects out of live_objects and live_bytes, and
// kmalloc_reclaim empties every cache first.
#include "kmalloc.h"
#include "palloc.h"
#include "klib.h"
#include "spinlock.h"
#include "stats.h"
#include "param.h"   // BOARD_MAX_HARTS

static const uint16_t class_size[] = { 16, 32, 48, 64, 96, 128, 192, 256, 512, 1024, 2048 };
#define NCLASS ((unsigned)ARRAY_SIZE(class_size))
#define NOBJ(c) (PAGE_SIZE / class_size[c])

// Page tag layout (0 = not a kmalloc page):
//   [31:30] kind  [29:26] class  [25:17] objects in use  [16:8] first free index+1 (0 none)
//   large run head: [31:30] kind  [29:0] pages in the run
#define KIND_SLAB 1u
#define KIND_LARGE 2u
#define TAG_KIND(t) ((t) >> 30)
#define TAG_CLASS(t) (((t) >> 26) & 0xf)
#define TAG_INUSE(t) (((t) >> 17) & 0x1ff)
#define TAG_HEAD(t) (((t) >> 8) & 0x1ff)
#define TAG_NPAGES(t) ((t) & 0x3fffffff)
#define LARGE_MAX_PAGES 0x3fffffffu

static uint32_t slab_tag(unsigned cls, unsigned inuse, unsigned head) {
  return KIND_SLAB << 30 | cls << 26 | inuse << 17 | head << 8;
}

// A free object. Objects are numbered from 1 in the chain fields so 0 can mean
// "none"; index i+1 is the object at offset i * size.
struct freeobj {
  uint16_t next;        // next free object in this slab, 0 = end of chain
  uint16_t magic16;     // FREE_MAGIC16 and FREE_MAGIC32: the "free" marker
  uint32_t magic32;
  uint32_t prev_slab;   // first free object only: partial-list neighbours,
  uint32_t next_slab;   //   as palloc page index + 1, 0 = none
};
_Static_assert(sizeof(struct freeobj) == 16, "struct freeobj must fit the smallest class");

#define FREE_MAGIC16 0xc0a1u
#define FREE_MAGIC32 0xf4eeb10cu

static struct {
  struct spinlock lock;
  uint32_t partial[NCLASS];  // first slab with free objects: page index + 1, 0 none
  void *cached[NCLASS];      // one empty slab per class, kept off the list
  struct kmalloc_stats st;
} km = { .lock = SPINLOCK_INIT("kmalloc") };

// Per hart and size class. 32, not 8: objects made on one hart are often
// freed on the other (a socket's send chunk, lwIP's buffers and segments), so
// one cache runs dry while the other overflows. In matrixd KCUC's closed loop
// on two harts (8 s, about 70,000 requests, 2026-11-30) the slab lock was
// found held 2,900-5,400 times with 8 and about 400 with 32, at 2.8 KB more a hart.
#define CACHE_OBJS 32
#define CACHED_MAGIC16 0xcac4u
#define CACHED_MAGIC32 0x0b1ec7edu

static struct hart_cache {
  struct spinlock lock;
  uint8_t n[NCLASS];                 // objects held of each class
  void *obj[NCLASS][CACHE_OBJS];
  uint64_t allocs, frees;            // kmalloc and kfree calls it served
} __attribute__((aligned(64))) caches[BOARD_MAX_HARTS];
static int caches_on;

static const char cache_lock_name[] = "kmalloc-hart";

void kmalloc_init(void) {
  spin_init(&km.lock, "kmalloc");
  memset(km.partial, 0, sizeof km.partial);
  memset(km.cached, 0, sizeof km.cached);
  memset(&km.st, 0, sizeof km.st);
  memset(caches, 0, sizeof caches);
  for (unsigned i = 0; i < BOARD_MAX_HARTS; i++)
    spin_init(&caches[i].lock, cache_lock_name);
  caches_on = 0;
}

void kmalloc_use_caches(int on) { caches_on = on; }

static struct freeobj *obj_at(void *page, unsigned cls, unsigned idx1) {
  return (struct freeobj *)((char *)page + (idx1 - 1) * class_size[cls]);
}

static void mark_free(struct freeobj *o, unsigned next) {
  o->next = (uint16_t)next;
  o->magic16 = FREE_MAGIC16;
  o->magic32 = FREE_MAGIC32;
}

static bool marked_free(const struct freeobj *o) {
  return o->magic16 == FREE_MAGIC16 && o->magic32 == FREE_MAGIC32;
}

static bool marked_cached(const struct freeobj *o) {
  return o->magic16 == CACHED_MAGIC16 && o->magic32 == CACHED_MAGIC32;
}

// The first free object of a partial slab, which holds its list links.
static struct freeobj *link_obj(void *page) {
  uint32_t t = palloc_get_tag(page);
  return obj_at(page, TAG_CLASS(t), TAG_HEAD(t));
}

static struct freeobj *link_obj_at(uint32_t pidx1) {
  return link_obj(palloc_page_addr(pidx1 - 1));
}

static void list_push(unsigned cls, void *page) {
  uint32_t pidx1 = palloc_page_index(page) + 1;
  struct freeobj *h = link_obj(page);
  h->prev_slab = 0;
  h->next_slab = km.partial[cls];
  if (km.partial[cls])
    link_obj_at(km.partial[cls])->prev_slab = pidx1;
  km.partial[cls] = pidx1;
}

static void list_unlink(unsigned cls, void *page) {
  struct freeobj *h = link_obj(page);
  if (h->prev_slab)
    link_obj_at(h->prev_slab)->next_slab = h->next_slab;
  else
    km.partial[cls] = h->next_slab;
  if (h->next_slab)
    link_obj_at(h->next_slab)->prev_slab = h->prev_slab;
}

// A fresh slab: every object free, chained in address order.
static void *new_slab(unsigned cls) {
  void *page = palloc(1);
  if (!page)
    return 0;
  unsigned n = NOBJ(cls);
  for (unsigned i = 1; i <= n; i++)
    mark_free(obj_at(page, cls, i), i < n ? i + 1 : 0);
  palloc_set_tag(page, slab_tag(cls, 0, 1));
  km.st.slab_pages++;
  return page;
}

static void *alloc_small(unsigned cls) {
  if (!km.partial[cls]) {
    void *page = km.cached[cls];
    km.cached[cls] = 0;
    if (!page && !(page = new_slab(cls)))
      return 0;
    list_push(cls, page);
  }
  void *page = palloc_page_addr(km.partial[cls] - 1);
  uint32_t t = palloc_get_tag(page);
  struct freeobj *o = obj_at(page, cls, TAG_HEAD(t));
  if (o->next) {                 // links move to the new first free object
    struct freeobj *n = obj_at(page, cls, o->next);
    n->prev_slab = o->prev_slab;
    n->next_slab = o->next_slab;
  } else {                       // slab now full: off the list
    list_unlink(cls, page);
  }
  palloc_set_tag(page, slab_tag(cls, TAG_INUSE(t) + 1, o->next));
  o->magic16 = 0;
  o->magic32 = 0;
  km.st.live_bytes += class_size[cls];
  return o;
}

static void *alloc_large(size_t n) {
  if (n > SIZE_MAX - PAGE_SIZE)
    return 0;
  size_t npages = (n + PAGE_SIZE - 1) / PAGE_SIZE;
  if (npages > LARGE_MAX_PAGES)
    return 0;
  void *p = palloc(npages);
  if (!p)
    return 0;
  palloc_set_tag(p, KIND_LARGE << 30 | (uint32_t)npages);
  km.st.large_pages += npages;
  km.st.live_bytes += (uint64_t)npages * PAGE_SIZE;
  return p;
}

static unsigned class_of(size_t n) {
  unsigned cls = 0;
  while (class_size[cls] < n)
    cls++;
  return cls;
}

// The caches (see the top). The caller's hart's own; a coroutine that moves
// on meanwhile only takes another hart's cache lock, which is as correct.
static struct hart_cache *my_cache(void) { return &caches[spin_this_cpu() % BOARD_MAX_HARTS]; }

static void mark_cached(struct freeobj *o) {
  o->magic16 = CACHED_MAGIC16;
  o->magic32 = CACHED_MAGIC32;
}

// Up to `want` objects of class cls from the slabs into out[] for a kmalloc
// that found its cache empty: out[0] is the caller's (counted as a kmalloc),
// the rest are for the cache. Returns how many (0: out of memory).
static unsigned slabs_take(unsigned cls, void **out, unsigned want) {
  spin_lock(&km.lock);
  unsigned got = 0;
  while (got < want && (out[got] = alloc_small(cls)) != 0)
    got++;
  km.st.live_objects += got;
  if (got)
    km.st.allocs++;
  else
    km.st.failed++;
  spin_unlock(&km.lock);
  return got;
}

static const char *free_small(void *p, uint32_t t);

// Objects out of a cache, back to their slabs.
static void slabs_give(void **objs, unsigned n) {
  spin_lock(&km.lock);
  for (unsigned i = 0; i < n; i++) {
    const char *err = free_small(objs[i], palloc_get_tag(objs[i]));
    if (err) {
      spin_unlock(&km.lock);
      kpanic("kmalloc: cached object %p: %s", objs[i], err);
    }
  }
  km.st.live_objects -= n;
  spin_unlock(&km.lock);
}

static void *cache_get(unsigned cls) {
  struct hart_cache *c = my_cache();
  struct freeobj *o = 0;
  spin_lock(&c->lock);
  if (c->n[cls]) {
    o = c->obj[cls][--c->n[cls]];
    c->allocs++;
  }
  spin_unlock(&c->lock);
  if (o) {
    o->magic16 = 0;
    o->magic32 = 0;
    return o;
  }
  void *got[CACHE_OBJS / 2];
  unsigned k = slabs_take(cls, got, CACHE_OBJS / 2), extra = 0;
  if (k > 1) {
    spin_lock(&c->lock);
    for (unsigned i = 1; i < k && c->n[cls] < CACHE_OBJS; i++) {
      mark_cached(got[i]);
      c->obj[cls][c->n[cls]++] = got[i];
      got[i] = 0;
    }
    spin_unlock(&c->lock);
    for (unsigned i = 1; i < k; i++)   // (only if the cache filled up meanwhile)
      if (got[i])
        got[1 + extra++] = got[i];
    if (extra)
      slabs_give(got + 1, extra);
  }
  return k ? got[0] : 0;
}

void *kmalloc(size_t n) {
  if (caches_on && n <= KMALLOC_MAX_SMALL)
    return cache_get(class_of(n));
  void *p;
  spin_lock(&km.lock);
  if (n <= KMALLOC_MAX_SMALL)
    p = alloc_small(class_of(n));
  else
    p = alloc_large(n);
  if (p) {
    km.st.allocs++;
    km.st.live_objects++;
  } else {
    km.st.failed++;
  }
  spin_unlock(&km.lock);
  return p;
}

size_t kmalloc_size_class(size_t n) {
  if (n > KMALLOC_MAX_SMALL)
    return ALIGN_UP(n, PAGE_SIZE);
  return class_size[class_of(n)];
}

void *kzalloc(size_t n) {
  void *p = kmalloc(n);
  if (p)
    memset(p, 0, n);
  return p;
}

// Is object idx1 on the free chain starting at head? 1 yes, 0 no, -1 corrupt.
static int on_chain(void *page, unsigned cls, unsigned head, unsigned idx1) {
  unsigned n = NOBJ(cls);
  for (unsigned steps = 0; head; steps++) {
    if (head > n || steps >= n)
      return -1;
    if (head == idx1)
      return 1;
    head = obj_at(page, cls, head)->next;
  }
  return 0;
}

// Return a slab object. Lock held. NULL on success, else what is wrong.
static const char *free_small(void *p, uint32_t t) {
  unsigned cls = TAG_CLASS(t), inuse = TAG_INUSE(t), head = TAG_HEAD(t);
  if (cls >= NCLASS || head > NOBJ(cls) || inuse > NOBJ(cls))
    return "corrupt slab tag";
  void *page = (void *)((uintptr_t)p & ~(uintptr_t)(PAGE_SIZE - 1));
  uintptr_t off = (uintptr_t)p - (uintptr_t)page;
  if (off % class_size[cls] || off / class_size[cls] >= NOBJ(cls))
    return "not the start of an object";
  unsigned idx1 = off / class_size[cls] + 1;
  struct freeobj *o = p;
  if (idx1 == head || inuse == 0)
    return "double free (object is already free)";
  if (marked_free(o)) {
    int r = on_chain(page, cls, head, idx1);
    if (r < 0)
      return "corrupt slab free chain";
    if (r > 0)
      return "double free (object is already free)";
  }

  if (head == 0) {               // was full: back on the partial list
    mark_free(o, 0);
    palloc_set_tag(page, slab_tag(cls, inuse - 1, idx1));
    list_push(cls, page);
  } else {                       // becomes the first free object: take the links
    struct freeobj *h = obj_at(page, cls, head);
    o->prev_slab = h->prev_slab;
    o->next_slab = h->next_slab;
    mark_free(o, head);
    palloc_set_tag(page, slab_tag(cls, inuse - 1, idx1));
  }
  km.st.live_bytes -= class_size[cls];

  if (inuse - 1 == 0) {          // empty: cache it or give it back
    list_unlink(cls, page);
    if (!km.cached[cls]) {
      km.cached[cls] = page;
    } else {
      km.st.slab_pages--;
      pfree(page, 1);
    }
  }
  return 0;
}

// Return a large run. Lock held. NULL on success, else what is wrong.
static const char *free_large(void *p, uint32_t t) {
  if ((uintptr_t)p % PAGE_SIZE)
    return "not the start of an object";
  size_t npages = TAG_NPAGES(t);
  pfree(p, npages);                // also clears the tags
  km.st.large_pages -= npages;
  km.st.live_bytes -= (uint64_t)npages * PAGE_SIZE;
  return 0;
}

// Is p the start of an object on a slab page, by tag t (read without the
// lock: see cache_put)? Its class in *cls.
static bool at_slab_object(const void *p, uint32_t t, unsigned *cls) {
  *cls = TAG_CLASS(t);
  if (TAG_KIND(t) != KIND_SLAB || *cls >= NCLASS)
    return false;
  uintptr_t off = (uintptr_t)p & (PAGE_SIZE - 1);
  return off % class_size[*cls] == 0 && off / class_size[*cls] < NOBJ(*cls);
}

// kfree into the caller's hart's cache: 1 if done, 0 if the slab path must
// take p. The tag is read without the slab lock: a live object's page keeps
// its kind and class, and what else the read may see (another hart is
// changing the page's counts) only sends p the slow way, which looks again
// under the lock. So does anything that might be a double free or a bad
// pointer: the slab path's checks decide it.
static int cache_put(void *p) {
  uint32_t t = palloc_get_tag(p);
  unsigned cls;
  if (!at_slab_object(p, t, &cls))
    return 0;
  unsigned idx1 = ((uintptr_t)p & (PAGE_SIZE - 1)) / class_size[cls] + 1;
  struct freeobj *o = p;
  if (idx1 == TAG_HEAD(t) || TAG_INUSE(t) == 0 || marked_free(o) || marked_cached(o))
    return 0;
  struct hart_cache *c = my_cache();
  void *out[CACHE_OBJS / 2];
  unsigned nout = 0;
  spin_lock(&c->lock);
  if (c->n[cls] == CACHE_OBJS)          // full: half of it goes back to the slabs
    while (nout < CACHE_OBJS / 2)
      out[nout++] = c->obj[cls][--c->n[cls]];
  mark_cached(o);
  c->obj[cls][c->n[cls]++] = p;
  c->frees++;
  spin_unlock(&c->lock);
  if (nout)
    slabs_give(out, nout);
  return 1;
}

// Is p held by a cache? (Its first bytes carry the cached marker: so may a
// live object's, by chance, hence the search.)
static int in_a_cache(void *p) {
  int found = 0;
  for (unsigned i = 0; i < BOARD_MAX_HARTS && !found; i++) {
    struct hart_cache *c = &caches[i];
    spin_lock(&c->lock);
    for (unsigned cls = 0; cls < NCLASS && !found; cls++)
      for (unsigned j = 0; j < c->n[cls]; j++)
        if (c->obj[cls][j] == p)
          found = 1;
    spin_unlock(&c->lock);
  }
  return found;
}

void kfree(void *p) {
  if (!p)
    return;
  if (caches_on && cache_put(p))
    return;
  unsigned cls;
  if (at_slab_object(p, palloc_get_tag(p), &cls) && marked_cached(p) && in_a_cache(p))
    kpanic("kfree(%p): double free (object is already free, in a hart's cache)", p);
  spin_lock(&km.lock);
  uint32_t t = palloc_get_tag(p);
  const char *err;
  if (TAG_KIND(t) == KIND_SLAB)
    err = free_small(p, t);
  else if (TAG_KIND(t) == KIND_LARGE)
    err = free_large(p, t);
  else
    err = "not a kmalloc pointer (or already freed)";
  if (err) {
    spin_unlock(&km.lock);
    kpanic("kfree(%p): %s", p, err);
  }
  km.st.frees++;
  km.st.live_objects--;
  spin_unlock(&km.lock);
}

// Every cached object back to its slab.
static void drain_caches(void) {
  for (unsigned i = 0; i < BOARD_MAX_HARTS; i++) {
    struct hart_cache *c = &caches[i];
    void *objs[CACHE_OBJS];
    for (unsigned cls = 0; cls < NCLASS; cls++) {
      spin_lock(&c->lock);
      unsigned n = c->n[cls];
      for (unsigned j = 0; j < n; j++)
        objs[j] = c->obj[cls][j];
      c->n[cls] = 0;
      spin_unlock(&c->lock);
      if (n)
        slabs_give(objs, n);
    }
  }
}

void kmalloc_reclaim(void) {
  drain_caches();
  spin_lock(&km.lock);
  for (unsigned c = 0; c < NCLASS; c++) {
    if (km.cached[c]) {
      pfree(km.cached[c], 1);
      km.cached[c] = 0;
      km.st.slab_pages--;
    }
  }
  spin_unlock(&km.lock);
}

// One consistent view: every cache lock (in order), then the slab lock. (No
// other code holds two of these locks at once.)
void kmalloc_get_stats(struct kmalloc_stats *st) {
  for (unsigned i = 0; i < BOARD_MAX_HARTS; i++)
    spin_lock(&caches[i].lock);
  spin_lock(&km.lock);
  *st = km.st;
  spin_unlock(&km.lock);
  for (unsigned i = 0; i < BOARD_MAX_HARTS; i++) {
    const struct hart_cache *c = &caches[i];
    for (unsigned cls = 0; cls < NCLASS; cls++) {
      st->live_objects -= c->n[cls];
      st->live_bytes -= (uint64_t)c->n[cls] * class_size[cls];
    }
    st->allocs += c->allocs;
    st->frees += c->frees;
  }
  for (unsigned i = BOARD_MAX_HARTS; i-- > 0;)
    spin_unlock(&caches[i].lock);
}

static void print_stats(stats_out_fn *out) {
  struct palloc_stats ps;
  struct kmalloc_stats ks;
  palloc_get_stats(&ps);
  kmalloc_get_stats(&ks);
  out("memory: pages %lu free of %lu; kmalloc live %lu objects / %lu bytes, slab pages %lu, large pages %lu\n",
      ps.free_pages, ps.total_pages, ks.live_objects, ks.live_bytes, ks.slab_pages, ks.large_pages);
}
STATS_SOURCE(20, "memory", print_stats);
