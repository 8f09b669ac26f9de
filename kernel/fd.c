// A process's descriptor table (see fd.h).
//
// Why not a flat array: a server holds one descriptor per connection, so the
// table must reach thousands, but most processes use three. A flat table of
// NOFILE_MAX pointers in every process slot would cost 128 KiB each, and the old
// linear search for the lowest free slot cost O(open descriptors) per accept.
#include "fd.h"
#include "klib.h"
#include "kmalloc.h"
#include "executor.h"   // exec_ctz64 (no Zbb, and libgcc is not linked)

static int limit = NOFILE;
static uint64_t chunks_live;                   // in every process (atomic)

// A table grows as a process opens descriptors and keeps its chunks until the
// process ends (a reader may be looking at one without the lock): like the
// executor's slot table, a cache, which leak checks leave out (KSTAT_CACHE_*).
void fdt_caches(uint64_t *bytes, uint64_t *objects) {
  uint64_t n = __atomic_load_n(&chunks_live, __ATOMIC_RELAXED);
  *bytes += n * kmalloc_size_class(FD_CHUNK * sizeof(struct file *));
  *objects += n;
}

void fdt_set_limit(long n) { limit = n < 4 ? 4 : n > NOFILE_MAX ? NOFILE_MAX : (int)n; }
int fdt_limit(void) { return limit; }

int fdt_alloc(struct fdtable *t, struct file *f) {
  if (~t->full == 0)
    return -EMFILE;
  int c = exec_ctz64(~t->full);           // the first chunk with a free slot
  if (c * FD_CHUNK >= limit)
    return -EMFILE;
  if (!t->chunk[c]) {
    struct file **slots = kzalloc(FD_CHUNK * sizeof *slots);
    if (!slots)
      return -ENOMEM;
    __atomic_store_n(&t->chunk[c], slots, __ATOMIC_RELEASE);   // fdt_lookup reads it unlocked
    __atomic_fetch_add(&chunks_live, 1, __ATOMIC_RELAXED);
  }
  uint64_t *w = &t->used[c * (FD_CHUNK / 64)];
  int i = 0;
  while (~w[i] == 0)                           // a chunk not marked full has a zero bit
    i++;
  int bit = exec_ctz64(~w[i]);
  int fd = c * FD_CHUNK + i * 64 + bit;
  if (fd >= limit)
    return -EMFILE;
  w[i] |= 1ULL << bit;
  int all = 1;                                 // the chunk's last free slot?
  for (int j = 0; j < FD_CHUNK / 64; j++)
    all &= ~w[j] == 0;
  if (all)
    t->full |= 1ULL << c;
  __atomic_store_n(&t->chunk[c][fd % FD_CHUNK], f, __ATOMIC_RELEASE);
  t->open++;
  return fd;
}

struct file *fdt_take(struct fdtable *t, uint64_t fd) {
  struct file *f = fdt_lookup(t, fd);
  if (!f)
    return 0;
  t->chunk[fd / FD_CHUNK][fd % FD_CHUNK] = 0;
  t->used[fd / 64] &= ~(1ULL << (fd % 64));
  t->full &= ~(1ULL << (fd / FD_CHUNK));
  t->open--;
  return f;
}

void fdt_release(struct fdtable *t) {
  for (int c = 0; c < FD_NCHUNK; c++) {
    if (t->chunk[c])
      __atomic_fetch_sub(&chunks_live, 1, __ATOMIC_RELAXED);
    kfree(t->chunk[c]);
    t->chunk[c] = 0;
  }
  memset(t->used, 0, sizeof t->used);
  t->full = 0;
  t->open = 0;
}
