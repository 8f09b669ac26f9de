// A process's descriptor table (kernel/fd.c).
//
// NOFILE descriptors (kernel/abi.h) unless the kernel was booted with nofile=N,
// up to NOFILE_MAX (a server with 10,000 connections asks for more; a small
// limit makes the "over the limit" paths testable).
// Slots come in chunks of FD_CHUNK, allocated on first use and never moved
// until the process ends, so a reader may look a slot up without the process
// lock (the pointer it reads is either the file or 0). A bitmap of used slots
// and a summary word of full chunks find the lowest free descriptor in a few
// word operations instead of a walk over the table.
#ifndef FD_H
#define FD_H
#include <stdint.h>
#include "abi.h"

#define FD_CHUNK 256                           // slots per chunk: 2 KiB, one kmalloc class
#define FD_NCHUNK (NOFILE_MAX / FD_CHUNK)
_Static_assert(NOFILE_MAX % FD_CHUNK == 0 && FD_NCHUNK <= 64, "one summary word covers the chunks");

struct file;
struct fdtable {
  struct file **chunk[FD_NCHUNK];              // chunk[c][i] is descriptor c * FD_CHUNK + i
  uint64_t used[NOFILE_MAX / 64];                  // bit set: slot holds a file
  uint64_t full;                               // bit c set: chunk c has no free slot
  int open;                                    // descriptors in use
};

// All of these but fd_lookup need the owning process's lock.
int fdt_alloc(struct fdtable *t, struct file *f);    // lowest free fd, -EMFILE, -ENOMEM
struct file *fdt_take(struct fdtable *t, uint64_t fd);   // clear the slot; its file or 0
// The file at fd, or 0. Needs no lock, but the file may be closed meanwhile
// unless the caller holds the lock or otherwise keeps the slot. (Inline: every
// read, write and socket call looks its descriptor up.)
static inline struct file *fdt_lookup(struct fdtable *t, uint64_t fd) {
  if (fd >= NOFILE_MAX)
    return 0;
  struct file **slots = __atomic_load_n(&t->chunk[fd / FD_CHUNK], __ATOMIC_ACQUIRE);
  return slots ? __atomic_load_n(&slots[fd % FD_CHUNK], __ATOMIC_ACQUIRE) : 0;
}
// Give back the chunks (every slot must be empty: fdt_take them first).
void fdt_release(struct fdtable *t);
// Add the chunks of every table to *bytes and *objects (kstat KSTAT_CACHE_*).
void fdt_caches(uint64_t *bytes, uint64_t *objects);
// Set the per-process limit (boot argument nofile=N), clamped to [4, NOFILE_MAX].
void fdt_set_limit(long n);
int fdt_limit(void);
#endif
