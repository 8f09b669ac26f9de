// The initrd: the archive of user programs built into the kernel image
// (kernel/initrd.c, packed by scripts/mkinitrd.py, embedded by kernel/initrd.S).
//
// Archive format, version 1. All integers are little-endian; offsets count
// from the first byte of the archive.
//
//   0   char magic[8]        "CORALRD1" (no NUL)
//   8   u32  count           number of files, at most INITRD_MAX_FILES
//   12  u32  reserved        0
//   16  count entries of 48 bytes each:
//         0   char name[32]  the file's name: 1..31 bytes, NUL-terminated,
//                            NUL-padded; no two entries share a name
//         32  u64  offset    where the file's bytes start: a multiple of 8,
//                            at or after the end of the entry table
//         40  u64  size      number of bytes (may be 0)
//   then the file data, in entry order, each file starting at a multiple of 8
//   (zero padding between files and at the end).
//
// The archive is read in place and never copied or modified.
#ifndef INITRD_H
#define INITRD_H
#include <stddef.h>
#include <stdint.h>

#define INITRD_MAGIC "CORALRD1"
#define INITRD_HDR_SIZE 16
#define INITRD_ENTRY_SIZE 48
#define INITRD_NAME_MAX 32      // bytes in the name field, including the NUL
#define INITRD_MAX_FILES 1024   // bounds the validation work at boot

// The archive linked into the kernel (kernel/initrd.S); 8-byte aligned.
extern const char _initrd_start[], _initrd_end[];

// Validate the whole archive blob[0..len) and remember it. Returns 0, or
// -EINVAL if any part of it is malformed, in which case the initrd is empty
// afterwards. Called once at boot, before other harts run; the lookups below
// only read, so they need no lock.
int initrd_open(const void *blob, size_t len);

// Look up a file by name (compared with strcmp). On success stores a pointer
// to its bytes (inside the blob) and its size, either of which may be NULL,
// and returns 0; otherwise returns -ENOENT.
int initrd_find(const char *name, const void **data, size_t *size);

// Number of files, and the name of file i (0 <= i < initrd_count()), in
// archive order; NULL if i is out of range.
int initrd_count(void);
const char *initrd_name(int i);

#endif
