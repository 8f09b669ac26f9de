// Validation of static RV64 ELF executables (kernel/elf.c).
//
// elf_parse() reads an executable image that sits in memory (for Coral, a file
// of the initrd) and either rejects it or describes the segments to load. It
// maps nothing and allocates nothing: the caller maps each segment itself, and
// may trust every number in the result (see the guarantees below).
#ifndef ELF_H
#define ELF_H
#include <stddef.h>
#include <stdint.h>

#define ELF_MAX_SEGS 8          // PT_LOAD segments per executable

// Segment permissions: the same bits as the ELF p_flags field.
#define ELF_X 1
#define ELF_W 2
#define ELF_R 4

struct elf_seg {
  uint64_t vaddr;               // first byte in the user address space
  uint64_t memsz;               // bytes in memory (> 0)
  uint64_t filesz;              // bytes copied from the image (<= memsz); the rest is zero
  uint64_t offset;              // where those bytes start in the image
  uint32_t flags;               // ELF_R | ELF_W | ELF_X, never both W and X
};

struct elf_info {
  uint64_t entry;               // initial pc, inside an executable segment
  uint32_t nsegs;               // 1..ELF_MAX_SEGS
  struct elf_seg seg[ELF_MAX_SEGS]; // in program-header order
  uint64_t end;                 // highest vaddr+memsz, rounded up to a page: the initial break
};

// Validate the executable img[0..len) and describe it in *out.
// Returns 0, or -ENOEXEC if the image is not a well-formed static RV64
// little-endian executable that fits Coral's user address space. On failure
// *out is zeroed (nsegs == 0).
//
// On success, for every seg[i]:
//   USER_BASE <= vaddr,  vaddr + memsz <= USER_HEAP_MAX  (no wrap-around);
//   0 < memsz,  filesz <= memsz,  offset + filesz <= len  (no wrap-around);
//   not both ELF_W and ELF_X;
//   the pages it touches, [ALIGN_DOWN(vaddr), ALIGN_UP(vaddr + memsz)), are
//   touched by no other segment, so each page has one set of permissions.
// entry lies in [vaddr, vaddr + memsz) of a segment with ELF_X.
// img needs no particular alignment.
int elf_parse(const void *img, size_t len, struct elf_info *out);

#endif
