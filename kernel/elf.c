// Validation of static RV64 ELF executables. See elf.h.
//
// The image is untrusted: it comes from the initrd today and could come from
// anywhere later, so the parser assumes nothing about it. Design:
//
// - Nothing is read in place. The ELF header and each program header are
//   copied into local structs with memcpy first, so the image may have any
//   alignment and a field is never read from outside [img, img + len).
// - Every range is checked with `inside(off, n, limit)`, which compares
//   n <= limit - off after off <= limit; no sum is formed that could wrap
//   around 2^64. The same rule bounds the segments in the address space.
// - Only what loading needs is read: the ELF header and the program headers.
//   Section headers are never consulted (a loader does not need them, and a
//   stripped or truncated section table is no reason to refuse a program).
// - The checks are the ones a kernel must make before it maps anything; see
//   elf_parse() for the list. The result is only written when every check has
//   passed, so a caller that forgets the return value sees nsegs == 0.
//
// References: the System V gABI (ELF header, program headers) and the RISC-V
// ELF psABI (EM_RISCV = 243). Both Coral and its host tests run little-endian,
// which is the only data encoding accepted, so the structs are read natively.
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include "klib.h"
#include "abi.h"
#include "elf.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "elf.c reads ELFDATA2LSB headers natively and needs a little-endian machine"
#endif

#define ELF_PAGE 4096ULL

// The 64-bit ELF header (gABI "ELF Header").
#define EI_NIDENT 16
typedef struct {
  uint8_t e_ident[EI_NIDENT];
  uint16_t e_type;
  uint16_t e_machine;
  uint32_t e_version;
  uint64_t e_entry;
  uint64_t e_phoff;
  uint64_t e_shoff;
  uint32_t e_flags;
  uint16_t e_ehsize;
  uint16_t e_phentsize;
  uint16_t e_phnum;
  uint16_t e_shentsize;
  uint16_t e_shnum;
  uint16_t e_shstrndx;
} Elf64_Ehdr;

// A 64-bit program header (gABI "Program Header").
typedef struct {
  uint32_t p_type;
  uint32_t p_flags;
  uint64_t p_offset;
  uint64_t p_vaddr;
  uint64_t p_paddr;
  uint64_t p_filesz;
  uint64_t p_memsz;
  uint64_t p_align;
} Elf64_Phdr;

_Static_assert(sizeof(Elf64_Ehdr) == 64, "Elf64_Ehdr layout");
_Static_assert(sizeof(Elf64_Phdr) == 56, "Elf64_Phdr layout");

// e_ident indexes and the values Coral accepts.
#define EI_MAG0 0
#define EI_CLASS 4
#define EI_DATA 5
#define EI_VERSION 6
#define ELFCLASS64 2
#define ELFDATA2LSB 1
#define EV_CURRENT 1

#define ET_EXEC 2
#define EM_RISCV 243
#define PN_XNUM 0xffff          // "the real count is in section header 0": not supported

#define PT_LOAD 1

// Does [off, off + n) lie inside [0, limit)? Never forms off + n.
static bool inside(uint64_t off, uint64_t n, uint64_t limit) {
  return off <= limit && n <= limit - off;
}

// The identification bytes and the fixed header fields.
static bool header_ok(const Elf64_Ehdr *eh, size_t len) {
  static const uint8_t magic[4] = { 0x7f, 'E', 'L', 'F' };

  if (memcmp(&eh->e_ident[EI_MAG0], magic, sizeof magic) != 0)
    return false;
  if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB ||
      eh->e_ident[EI_VERSION] != EV_CURRENT || eh->e_version != EV_CURRENT)
    return false;
  if (eh->e_type != ET_EXEC || eh->e_machine != EM_RISCV)
    return false;
  // The program-header table: entries of exactly our size, all in the image.
  if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum == PN_XNUM)
    return false;
  return inside(eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr), len);
}

// One PT_LOAD entry on its own: sizes, file range, address range, alignment
// and permissions.
static bool load_ok(const Elf64_Phdr *ph, size_t len) {
  // A segment that loads nothing has no pages; the linker never emits one,
  // and refusing it keeps every recorded segment non-empty.
  if (ph->p_memsz == 0 || ph->p_filesz > ph->p_memsz)
    return false;
  if (!inside(ph->p_offset, ph->p_filesz, len))
    return false;
  if (ph->p_vaddr < USER_BASE || !inside(ph->p_vaddr, ph->p_memsz, USER_HEAP_MAX))
    return false;
  // With page (or larger) alignment the file is laid out to be mapped page by
  // page, and that only works if the address and the offset agree in the page.
  if (ph->p_align >= ELF_PAGE && ph->p_vaddr % ELF_PAGE != ph->p_offset % ELF_PAGE)
    return false;
  // W^X: no page is ever both writable and executable.
  if ((ph->p_flags & ELF_W) && (ph->p_flags & ELF_X))
    return false;
  return true;
}

// Do two segments share a page? Their page ranges are half-open, and no
// rounding overflows because both end at or below USER_HEAP_MAX.
static bool pages_overlap(const struct elf_seg *a, const struct elf_seg *b) {
  uint64_t alo = ALIGN_DOWN(a->vaddr, ELF_PAGE), ahi = ALIGN_UP(a->vaddr + a->memsz, ELF_PAGE);
  uint64_t blo = ALIGN_DOWN(b->vaddr, ELF_PAGE), bhi = ALIGN_UP(b->vaddr + b->memsz, ELF_PAGE);

  return alo < bhi && blo < ahi;
}

// Is the entry point inside an executable segment?
static bool entry_ok(const struct elf_info *info) {
  for (uint32_t i = 0; i < info->nsegs; i++) {
    const struct elf_seg *s = &info->seg[i];
    if ((s->flags & ELF_X) && info->entry >= s->vaddr && info->entry - s->vaddr < s->memsz)
      return true;
  }
  return false;
}

// Collect and check the PT_LOAD entries into *info. Other types (PT_NOTE,
// PT_GNU_STACK, PT_RISCV_ATTRIBUTES, ...) carry nothing a loader needs.
static bool collect_loads(const uint8_t *img, size_t len, const Elf64_Ehdr *eh,
                          struct elf_info *info) {
  for (uint32_t i = 0; i < eh->e_phnum; i++) {
    Elf64_Phdr ph;
    memcpy(&ph, img + eh->e_phoff + (uint64_t)i * sizeof ph, sizeof ph);
    if (ph.p_type != PT_LOAD)
      continue;
    if (info->nsegs == ELF_MAX_SEGS || !load_ok(&ph, len))
      return false;
    struct elf_seg *s = &info->seg[info->nsegs];
    s->vaddr = ph.p_vaddr;
    s->memsz = ph.p_memsz;
    s->filesz = ph.p_filesz;
    s->offset = ph.p_offset;
    s->flags = ph.p_flags & (ELF_R | ELF_W | ELF_X);
    for (uint32_t j = 0; j < info->nsegs; j++)
      if (pages_overlap(&info->seg[j], s))
        return false;
    info->nsegs++;
    uint64_t end = ALIGN_UP(s->vaddr + s->memsz, ELF_PAGE);
    if (end > info->end)
      info->end = end;
  }
  return info->nsegs > 0;
}

// Checked, in this order: the identification (magic, ELFCLASS64, ELFDATA2LSB,
// EV_CURRENT), e_type == ET_EXEC, e_machine == EM_RISCV, the program-header
// table (entry size, inside the image); then for each PT_LOAD: at most
// ELF_MAX_SEGS of them, 0 < memsz, filesz <= memsz, the file bytes inside the
// image, the addresses inside [USER_BASE, USER_HEAP_MAX), vaddr == offset
// modulo the page when p_align >= 4096, W^X, no page shared with an earlier
// segment; finally at least one PT_LOAD, and the entry point in an executable
// segment.
int elf_parse(const void *img, size_t len, struct elf_info *out) {
  struct elf_info info;
  Elf64_Ehdr eh;

  memset(out, 0, sizeof *out);
  memset(&info, 0, sizeof info);
  if (img == NULL || len < sizeof eh)
    return -ENOEXEC;
  memcpy(&eh, img, sizeof eh);
  if (!header_ok(&eh, len))
    return -ENOEXEC;
  if (!collect_loads(img, len, &eh, &info))
    return -ENOEXEC;
  info.entry = eh.e_entry;
  if (!entry_ok(&info))
    return -ENOEXEC;
  *out = info;
  return 0;
}
