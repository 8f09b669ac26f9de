// Host unit tests for kernel/elf.c.
//
// Real executables come from riscv64-unknown-elf-gcc at run time (tiny
// programs written into a mkdtemp() directory). Each image handed to
// elf_parse sits in a malloc'd buffer of exactly its length, so ASan reports
// any read past the end.
//
// The expected answers never come from elf.c itself nor from numbers typed in
// here. They come from two independent sources:
//   - ref_*: a second reader in this file, which decodes the headers byte by
//     byte (little-endian) and applies the rules of elf.h with 128-bit
//     arithmetic, so it has no overflow reasoning in common with elf.c;
//   - riscv64-unknown-elf-readelf -lhW, for the images the compiler produced.
// Then every rejection rule is exercised one field at a time, on the real
// image and on hand-built images (a small ELF writer below) for the cases the
// linker does not produce; truncation at every length; and a fixed-seed fuzz
// that must agree with the reference verdict and keep every invariant.
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "testutil.h"
#include "abi.h"
#include "elf.h"

#define PAGE 4096ULL

typedef unsigned __int128 u128;

//
// Little-endian field access, by byte offset (gABI layouts).
//

// ELF header fields: offset, size.
#define E_TYPE 16, 2
#define E_MACHINE 18, 2
#define E_VERSION 20, 4
#define E_ENTRY 24, 8
#define E_PHOFF 32, 8
#define E_PHENTSIZE 54, 2
#define E_PHNUM 56, 2
// Program header fields, relative to the entry.
#define P_TYPE 0, 4
#define P_FLAGS 4, 4
#define P_OFFSET 8, 8
#define P_VADDR 16, 8
#define P_FILESZ 32, 8
#define P_MEMSZ 40, 8
#define P_ALIGN 48, 8

#define GET_(p, off, n) get_le((p) + (off), (n))
#define SET_(p, off, n, v) put_le((p) + (off), (n), (v))
#define GET(p, field) GET_(p, field)
#define SET(p, field, v) SET_(p, field, v)

#define PT_NULL 0
#define PT_LOAD 1
#define PT_NOTE 4
#define PT_GNU_STACK 0x6474e551
#define PT_RISCV_ATTRIBUTES 0x70000003

// Program header i of img (the caller knows the table is in range).
static uint8_t *ph(uint8_t *img, uint64_t i) {
  return img + GET(img, E_PHOFF) + i * 56;
}

//
// The reference reader.
//

// The PT_LOAD entries of img as elf.h describes them, without any checks.
// Only call it on images whose program-header table is in range.
static void ref_loads(const uint8_t *img, struct elf_info *r) {
  uint64_t phnum = GET(img, E_PHNUM);
  memset(r, 0, sizeof *r);
  r->entry = GET(img, E_ENTRY);
  for (uint64_t i = 0; i < phnum; i++) {
    const uint8_t *p = img + GET(img, E_PHOFF) + i * 56;
    if (GET(p, P_TYPE) != PT_LOAD)
      continue;
    if (r->nsegs == ELF_MAX_SEGS) {
      r->nsegs++;               // "too many": the caller sees nsegs > ELF_MAX_SEGS
      return;
    }
    struct elf_seg *s = &r->seg[r->nsegs++];
    s->vaddr = GET(p, P_VADDR);
    s->memsz = GET(p, P_MEMSZ);
    s->filesz = GET(p, P_FILESZ);
    s->offset = GET(p, P_OFFSET);
    s->flags = (uint32_t)GET(p, P_FLAGS) & 7;
    u128 end = ((u128)s->vaddr + s->memsz + PAGE - 1) / PAGE * PAGE;
    if (end > r->end)
      r->end = (uint64_t)end;
  }
}

// Is the program-header table of img[0..len) readable at all?
static bool ref_table_ok(const uint8_t *img, size_t len) {
  if (len < 64)
    return false;
  return GET(img, E_PHENTSIZE) == 56 && GET(img, E_PHNUM) != 0xffff &&
         (u128)GET(img, E_PHOFF) + (u128)GET(img, E_PHNUM) * 56 <= len;
}

// The verdict elf_parse must give, decided from the rules in elf.h.
static int ref_verdict(const uint8_t *img, size_t len) {
  struct elf_info r;

  if (!ref_table_ok(img, len))
    return -ENOEXEC;
  if (img[0] != 0x7f || img[1] != 'E' || img[2] != 'L' || img[3] != 'F' || img[4] != 2 ||
      img[5] != 1 || img[6] != 1 || GET(img, E_VERSION) != 1 || GET(img, E_TYPE) != 2 ||
      GET(img, E_MACHINE) != 243)
    return -ENOEXEC;
  ref_loads(img, &r);
  if (r.nsegs == 0 || r.nsegs > ELF_MAX_SEGS)
    return -ENOEXEC;
  // Alignment lives only in the program header, so look it up again.
  uint64_t phnum = GET(img, E_PHNUM), k = 0;
  for (uint64_t i = 0; i < phnum; i++) {
    const uint8_t *p = img + GET(img, E_PHOFF) + i * 56;
    if (GET(p, P_TYPE) != PT_LOAD)
      continue;
    const struct elf_seg *s = &r.seg[k++];
    if (GET(p, P_ALIGN) >= PAGE && s->vaddr % PAGE != s->offset % PAGE)
      return -ENOEXEC;
  }
  bool entry_found = false;
  for (uint32_t i = 0; i < r.nsegs; i++) {
    const struct elf_seg *s = &r.seg[i];
    if (s->memsz == 0 || s->filesz > s->memsz || (u128)s->offset + s->filesz > len)
      return -ENOEXEC;
    if (s->vaddr < USER_BASE || (u128)s->vaddr + s->memsz > USER_HEAP_MAX)
      return -ENOEXEC;
    if ((s->flags & ELF_W) && (s->flags & ELF_X))
      return -ENOEXEC;
    for (uint32_t j = 0; j < i; j++) {
      const struct elf_seg *t = &r.seg[j];
      if (s->vaddr / PAGE <= (t->vaddr + t->memsz - 1) / PAGE &&
          t->vaddr / PAGE <= (s->vaddr + s->memsz - 1) / PAGE)
        return -ENOEXEC;
    }
    if ((s->flags & ELF_X) && r.entry >= s->vaddr && (u128)r.entry < (u128)s->vaddr + s->memsz)
      entry_found = true;
  }
  return entry_found ? 0 : -ENOEXEC;
}

// Every promise elf.h makes about an accepted image, checked on the result.
static void check_invariants(const struct elf_info *info, size_t len) {
  uint64_t end = 0;
  bool entry_found = false;

  CHECK(info->nsegs >= 1 && info->nsegs <= ELF_MAX_SEGS);
  for (uint32_t i = 0; i < info->nsegs && i < ELF_MAX_SEGS; i++) {
    const struct elf_seg *s = &info->seg[i];
    CHECK(s->vaddr >= USER_BASE);
    CHECK(s->memsz > 0);
    CHECK((u128)s->vaddr + s->memsz <= USER_HEAP_MAX);
    CHECK(s->filesz <= s->memsz);
    CHECK((u128)s->offset + s->filesz <= len);
    CHECK(!((s->flags & ELF_W) && (s->flags & ELF_X)));
    CHECK((s->flags & ~7u) == 0);
    for (uint32_t j = 0; j < i; j++) {
      const struct elf_seg *t = &info->seg[j];
      uint64_t slo = s->vaddr & ~(PAGE - 1), shi = (s->vaddr + s->memsz + PAGE - 1) & ~(PAGE - 1);
      uint64_t tlo = t->vaddr & ~(PAGE - 1), thi = (t->vaddr + t->memsz + PAGE - 1) & ~(PAGE - 1);
      CHECK(shi <= tlo || thi <= slo);
    }
    if ((s->flags & ELF_X) && info->entry >= s->vaddr && info->entry - s->vaddr < s->memsz)
      entry_found = true;
    uint64_t e = (s->vaddr + s->memsz + PAGE - 1) & ~(PAGE - 1);
    if (e > end)
      end = e;
  }
  CHECK(entry_found);
  CHECK_EQ(info->end, end);
  CHECK(info->end % PAGE == 0 && info->end <= USER_HEAP_MAX);
}

// The result equals what the reference reader finds in img.
static void check_matches_ref(const uint8_t *img, const struct elf_info *info) {
  struct elf_info r;

  ref_loads(img, &r);
  CHECK_EQ(info->entry, r.entry);
  CHECK_EQ(info->nsegs, r.nsegs);
  CHECK_EQ(info->end, r.end);
  for (uint32_t i = 0; i < r.nsegs && i < ELF_MAX_SEGS; i++) {
    CHECK_EQ(info->seg[i].vaddr, r.seg[i].vaddr);
    CHECK_EQ(info->seg[i].memsz, r.seg[i].memsz);
    CHECK_EQ(info->seg[i].filesz, r.seg[i].filesz);
    CHECK_EQ(info->seg[i].offset, r.seg[i].offset);
    CHECK_EQ(info->seg[i].flags, r.seg[i].flags);
  }
}

static bool info_is_zero(const struct elf_info *info) {
  static const struct elf_info zero;
  return memcmp(info, &zero, sizeof zero) == 0;
}

//
// Images.
//

// What riscv64-unknown-elf-readelf says about a compiled image: a third
// opinion, next to elf.c and the reference reader.
struct readelf_view {
  uint64_t entry;
  int nloads;
  struct elf_seg seg[16];
};

struct image {
  uint8_t *p;
  size_t len;
  bool re_ok;                   // compiled images: readelf's view was read
  struct readelf_view re;
};

// Parse a copy of img[0..len) that is exactly len bytes long.
static int parse_exact(const uint8_t *img, size_t len, struct elf_info *info) {
  uint8_t *p = dup_exact(img, len, len);
  memset(info, 0xa5, sizeof *info);
  int r = elf_parse(p, len, info);
  free(p);
  return r;
}

// img must be accepted, agree with the reference, and keep the invariants.
static void expect_accept_(const uint8_t *img, size_t len, int line, const char *what) {
  struct elf_info info;
  int r = parse_exact(img, len, &info);

  if (r != 0 || ref_verdict(img, len) != 0) {
    if (!check_failed_)
      snprintf(check_why_, sizeof check_why_, "%s:%d: %s: elf_parse %d, reference %d, expected 0",
               __FILE__, line, what, r, ref_verdict(img, len));
    check_failed_ = 1;
    return;
  }
  check_matches_ref(img, &info);
  check_invariants(&info, len);
}

// img must be refused, by elf_parse and by the reference, leaving a zeroed result.
static void expect_reject_(const uint8_t *img, size_t len, int line, const char *what) {
  struct elf_info info;
  int r = parse_exact(img, len, &info);
  int ref = ref_verdict(img, len);

  if (r != -ENOEXEC || ref != -ENOEXEC || !info_is_zero(&info)) {
    if (!check_failed_)
      snprintf(check_why_, sizeof check_why_,
               "%s:%d: %s: elf_parse %d, reference %d, expected %d (-ENOEXEC)%s",
               __FILE__, line, what, r, ref, -ENOEXEC,
               info_is_zero(&info) ? "" : ", result not zeroed");
    check_failed_ = 1;
  }
}

#define EXPECT_ACCEPT(img, len) expect_accept_((img), (len), __LINE__, #img)
#define EXPECT_REJECT(img, len) expect_reject_((img), (len), __LINE__, #img)

// Apply `stmt` to a copy `m` (of length `mlen`) of image `base` and expect
// the verdict. stmt may replace m and change mlen.
#define MUTANT_(base, expect, stmt, text) do { \
    uint8_t *m = dup_exact((base)->p, (base)->len, (base)->len); \
    size_t mlen = (base)->len; (void)mlen; \
    stmt; \
    expect(m, mlen, __LINE__, text); \
    free(m); \
  } while (0)
#define REJECTS(base, stmt) MUTANT_(base, expect_reject_, stmt, #stmt)
#define ACCEPTS(base, stmt) MUTANT_(base, expect_accept_, stmt, #stmt)

//
// Images from the cross compiler.
//

static char tmpdir[256];

static bool readelf(const char *path, struct readelf_view *v) {
  char out[320], line[512];
  char *argv[] = { "riscv64-unknown-elf-readelf", "-lhW", (char *)path, NULL };
  FILE *fp;

  memset(v, 0, sizeof *v);
  snprintf(out, sizeof out, "%s.readelf", path);
  if (run_cmd(argv, out) != 0 || (fp = fopen(out, "r")) == NULL) {
    unlink(out);
    return false;
  }
  while (fgets(line, sizeof line, fp) != NULL) {
    unsigned long long a, b, c, d;
    int n = 0;
    if (sscanf(line, " Entry point address: 0x%llx", &a) == 1)
      v->entry = a;
    // "  LOAD  0xOFF 0xVADDR 0xPADDR 0xFILESZ 0xMEMSZ FLG 0xALIGN"
    if (sscanf(line, " LOAD 0x%llx 0x%llx %*s 0x%llx 0x%llx%n", &a, &b, &c, &d, &n) == 4 &&
        v->nloads < 16) {
      struct elf_seg *s = &v->seg[v->nloads++];
      s->offset = a; s->vaddr = b; s->filesz = c; s->memsz = d;
      char *flg = line + n, *stop = strstr(flg, "0x");
      for (char *q = flg; *q && q != stop; q++)
        s->flags |= *q == 'R' ? ELF_R : *q == 'W' ? ELF_W : *q == 'E' ? ELF_X : 0;
    }
  }
  fclose(fp);
  unlink(out);
  return true;
}

// A program with code, read-only data, initialised data and bss.
static const char SRC_FULL[] =
  "int counter = 5;\n"
  "char buf[8192];\n"
  "const char msg[] = \"coral\";\n"
  "void _start(void) { for (;;) { counter++; buf[counter & 8191] = msg[counter & 3]; } }\n";
// The smallest program: code only.
static const char SRC_TINY[] = "void _start(void) { for (;;); }\n";

enum { I_FULL, I_TINY, I_TTEXT, I_TTEXT11, I_RWX, I_N };
static const struct { const char *name, *src, *ldflag; } icfg[I_N] = {
  // Linked so that the first segment (which carries the ELF and program
  // headers) starts at USER_BASE: what Coral's user programs should use.
  [I_FULL] = { "full", SRC_FULL, "-Wl,-Ttext-segment=0x10000" },
  [I_TINY] = { "tiny", SRC_TINY, "-Wl,-Ttext-segment=0x10000" },
  // -Ttext=0x10000 puts .text at USER_BASE but the headers, mapped in the
  // same segment, a page below it: vaddr < USER_BASE, refused.
  [I_TTEXT] = { "ttext", SRC_FULL, "-Wl,-Ttext=0x10000" },
  [I_TTEXT11] = { "ttext11", SRC_FULL, "-Wl,-Ttext=0x11000" },
  // -N: one RWX segment, refused by W^X.
  [I_RWX] = { "rwx", SRC_FULL, "-Wl,-N,-Ttext-segment=0x10000" },
};
static struct image images[I_N];
static char iwhy[I_N][512];

static struct image *compiled(int i) {
  char src[300], exe[300];
  FILE *fp;

  if (images[i].p != NULL || iwhy[i][0] != '\0')
    return &images[i];
  snprintf(src, sizeof src, "%s/%s.c", tmpdir, icfg[i].name);
  snprintf(exe, sizeof exe, "%s/%s", tmpdir, icfg[i].name);
  fp = fopen(src, "w");
  if (fp == NULL) {
    snprintf(iwhy[i], sizeof iwhy[i], "cannot create %s", src);
    return &images[i];
  }
  fputs(icfg[i].src, fp);
  fclose(fp);
  char *argv[] = { "riscv64-unknown-elf-gcc", "-nostdlib", "-static", "-O1",
                   (char *)icfg[i].ldflag, "-o", exe, src, NULL };
  int rc = run_cmd(argv, NULL);
  unlink(src);
  if (rc != 0 || (images[i].p = slurp(exe, &images[i].len)) == NULL) {
    snprintf(iwhy[i], sizeof iwhy[i], "riscv64-unknown-elf-gcc %s failed (exit %d)",
             icfg[i].ldflag, rc);
    unlink(exe);
    return &images[i];
  }
  images[i].re_ok = readelf(exe, &images[i].re);
  unlink(exe);
  return &images[i];
}

#define NEED_IMAGE(var, i) struct image *var = compiled(i); \
  if (var->p == NULL) { check_failed_ = 1; \
    snprintf(check_why_, sizeof check_why_, "%s", iwhy[i]); return; }

// Index (in the program-header table) of the first PT_LOAD with or without
// the given flag.
static uint64_t load_with(uint8_t *img, uint32_t flag, bool set) {
  for (uint64_t i = 0; i < GET(img, E_PHNUM); i++)
    if (GET(ph(img, i), P_TYPE) == PT_LOAD && ((GET(ph(img, i), P_FLAGS) & flag) != 0) == set)
      return i;
  fprintf(stderr, "test_elf: no PT_LOAD with flag %u %s\n", flag, set ? "set" : "clear");
  abort();
}

//
// Tests.
//

// The compiled programs are accepted and described exactly as the reference
// reader and readelf describe them.
static void check_compiled_accepted(int i) {
  struct elf_info info;
  NEED_IMAGE(img, i);
  const struct readelf_view *v = &img->re;

  CHECK_EQ(parse_exact(img->p, img->len, &info), 0);
  check_matches_ref(img->p, &info);
  check_invariants(&info, img->len);
  CHECK(img->re_ok);
  CHECK_EQ(info.entry, v->entry);
  CHECK_EQ(info.nsegs, v->nloads);
  for (int k = 0; k < v->nloads && k < ELF_MAX_SEGS; k++) {
    CHECK_EQ(info.seg[k].vaddr, v->seg[k].vaddr);
    CHECK_EQ(info.seg[k].memsz, v->seg[k].memsz);
    CHECK_EQ(info.seg[k].filesz, v->seg[k].filesz);
    CHECK_EQ(info.seg[k].offset, v->seg[k].offset);
    CHECK_EQ(info.seg[k].flags, v->seg[k].flags);
  }
}

static void test_full_program(void) {
  NEED_IMAGE(img, I_FULL);
  check_compiled_accepted(I_FULL);
  // The shape the mutation tests rely on: text R+X, data R+W with bss.
  uint64_t t = load_with(img->p, ELF_X, true), d = load_with(img->p, ELF_W, true);
  CHECK(t != d);
  CHECK(GET(ph(img->p, d), P_MEMSZ) > GET(ph(img->p, d), P_FILESZ));
  // A program-header type other than PT_LOAD is present and ignored.
  bool other = false;
  for (uint64_t i = 0; i < GET(img->p, E_PHNUM); i++)
    other |= GET(ph(img->p, i), P_TYPE) != PT_LOAD;
  CHECK(other);
}

static void test_tiny_program(void) { check_compiled_accepted(I_TINY); }
static void test_text_at_0x11000(void) { check_compiled_accepted(I_TTEXT11); }

// The image needs no alignment: the same answer at an odd address.
static void test_unaligned_image(void) {
  struct elf_info a, b;
  NEED_IMAGE(img, I_FULL);

  uint8_t *buf = malloc(img->len + 1);
  if (buf == NULL)
    abort();
  memcpy(buf + 1, img->p, img->len);
  CHECK_EQ(elf_parse(img->p, img->len, &a), 0);
  CHECK_EQ(elf_parse(buf + 1, img->len, &b), 0);
  CHECK(memcmp(&a, &b, sizeof a) == 0);
  free(buf);
  CHECK_EQ(elf_parse(NULL, 0, &a), -ENOEXEC);
  CHECK(info_is_zero(&a));
}

// Linked with -Ttext=0x10000, the headers' page lands below USER_BASE.
static void test_ttext_below_user_base(void) {
  struct elf_info r;
  NEED_IMAGE(img, I_TTEXT);

  ref_loads(img->p, &r);
  CHECK(r.nsegs >= 1 && r.seg[0].vaddr < USER_BASE);
  EXPECT_REJECT(img->p, img->len);
}

// Linked with -N: text and data share one RWX segment.
static void test_rwx_program(void) {
  struct elf_info r;
  NEED_IMAGE(img, I_RWX);

  ref_loads(img->p, &r);
  bool rwx = false;
  for (uint32_t i = 0; i < r.nsegs && i < ELF_MAX_SEGS; i++)
    rwx |= (r.seg[i].flags & (ELF_W | ELF_X)) == (ELF_W | ELF_X);
  CHECK(rwx);
  EXPECT_REJECT(img->p, img->len);
}

// The identification and fixed header fields, one at a time.
static void test_bad_header(void) {
  NEED_IMAGE(b, I_FULL);

  for (int k = 0; k < 4; k++) {
    REJECTS(b, m[k] ^= 0x20);
    REJECTS(b, m[k] = 0);
  }
  REJECTS(b, m[4] = 1);                 // ELFCLASS32
  REJECTS(b, m[4] = 0);
  REJECTS(b, m[4] = 3);
  REJECTS(b, m[5] = 2);                 // ELFDATA2MSB
  REJECTS(b, m[5] = 0);
  REJECTS(b, m[6] = 0);                 // EI_VERSION
  REJECTS(b, m[6] = 2);
  REJECTS(b, SET(m, E_VERSION, 0));
  REJECTS(b, SET(m, E_VERSION, 2));
  REJECTS(b, SET(m, E_MACHINE, 62));    // EM_X86_64
  REJECTS(b, SET(m, E_MACHINE, 0));
  REJECTS(b, SET(m, E_MACHINE, 243 | 0x100));
  REJECTS(b, SET(m, E_TYPE, 0));        // ET_NONE
  REJECTS(b, SET(m, E_TYPE, 1));        // ET_REL
  REJECTS(b, SET(m, E_TYPE, 3));        // ET_DYN
  REJECTS(b, SET(m, E_TYPE, 4));        // ET_CORE
  // Fields a loader does not need may hold anything.
  ACCEPTS(b, m[7] = 0x61);              // EI_OSABI
  ACCEPTS(b, SET_(m, 40, 8, UINT64_MAX)); // e_shoff
  ACCEPTS(b, SET_(m, 60, 2, 0xffff));   // e_shnum
}

// The program-header table: size of an entry, position, count.
static void test_bad_phdr_table(void) {
  NEED_IMAGE(b, I_FULL);
  uint64_t phnum = GET(b->p, E_PHNUM), phoff = GET(b->p, E_PHOFF);

  for (uint64_t sz = 0; sz <= 128; sz += 8)
    if (sz != 56)
      REJECTS(b, SET(m, E_PHENTSIZE, sz));
  REJECTS(b, SET(m, E_PHENTSIZE, 55));
  REJECTS(b, SET(m, E_PHENTSIZE, 57));
  REJECTS(b, SET(m, E_PHOFF, mlen));
  REJECTS(b, SET(m, E_PHOFF, mlen - 1));
  REJECTS(b, SET(m, E_PHOFF, mlen - phnum * 56 + 1));   // one byte over the end
  REJECTS(b, SET(m, E_PHOFF, UINT64_MAX));
  REJECTS(b, SET(m, E_PHOFF, UINT64_MAX - 55));          // phoff + 56 wraps to 0
  REJECTS(b, SET(m, E_PHOFF, UINT64_MAX - phnum * 56 + 1));
  REJECTS(b, SET(m, E_PHOFF, 1ULL << 63));
  REJECTS(b, SET(m, E_PHNUM, 0));                        // no PT_LOAD at all
  REJECTS(b, SET(m, E_PHNUM, 0xffff));                   // PN_XNUM
  REJECTS(b, SET(m, E_PHNUM, (mlen - phoff) / 56 + 1));  // past the end
  // The table moved to the very end of the image: fits exactly.
  ACCEPTS(b, {
    uint8_t *n = dup_exact(m, mlen, mlen + phnum * 56);
    memcpy(n + mlen, m + phoff, phnum * 56);
    SET(n, E_PHOFF, mlen);
    free(m); m = n; mlen += phnum * 56;
  });
  // ... and one byte short.
  REJECTS(b, {
    uint8_t *n = dup_exact(m, mlen, mlen + phnum * 56 - 1);
    memcpy(n + mlen, m + phoff, phnum * 56 - 1);
    SET(n, E_PHOFF, mlen);
    free(m); m = n; mlen += phnum * 56 - 1;
  });
}

// Each PT_LOAD rule, on the compiled program's text (t) and data (d) segments.
static void test_bad_segments(void) {
  NEED_IMAGE(b, I_FULL);
  uint64_t t = load_with(b->p, ELF_X, true), d = load_with(b->p, ELF_W, true);
  uint64_t tvaddr = GET(ph(b->p, t), P_VADDR), dvaddr = GET(ph(b->p, d), P_VADDR);
  uint64_t tfilesz = GET(ph(b->p, t), P_FILESZ), dfilesz = GET(ph(b->p, d), P_FILESZ);
  uint64_t dmemsz = GET(ph(b->p, d), P_MEMSZ), doffset = GET(ph(b->p, d), P_OFFSET);
  uint64_t entry = GET(b->p, E_ENTRY);

  // filesz > memsz
  REJECTS(b, SET(ph(m, t), P_MEMSZ, tfilesz - 1));
  REJECTS(b, SET(ph(m, d), P_FILESZ, dmemsz + 1));
  ACCEPTS(b, SET(ph(m, d), P_FILESZ, dmemsz < mlen - doffset ? dmemsz : mlen - doffset));
  // memsz == 0
  REJECTS(b, { SET(ph(m, d), P_FILESZ, 0); SET(ph(m, d), P_MEMSZ, 0); });
  ACCEPTS(b, SET(ph(m, d), P_FILESZ, 0));      // all bss is fine
  // file bytes past the image, or wrapping around
  CHECK(b->len - doffset <= dmemsz);           // so the next two isolate the rule
  ACCEPTS(b, SET(ph(m, d), P_FILESZ, mlen - doffset));
  REJECTS(b, SET(ph(m, d), P_FILESZ, mlen - doffset + 1));
  REJECTS(b, SET(ph(m, d), P_OFFSET, (mlen + PAGE) / PAGE * PAGE + dvaddr % PAGE));
  REJECTS(b, SET(ph(m, d), P_OFFSET, UINT64_MAX - PAGE + 1 + dvaddr % PAGE));
  REJECTS(b, SET(ph(m, t), P_OFFSET, UINT64_MAX - PAGE + 1 + tvaddr % PAGE));
  REJECTS(b, { SET(ph(m, d), P_FILESZ, UINT64_MAX); SET(ph(m, d), P_MEMSZ, UINT64_MAX); });
  // offset + filesz wraps around to a small number (offset still congruent)
  REJECTS(b, { SET(ph(m, t), P_OFFSET, UINT64_MAX - PAGE + 1 + tvaddr % PAGE);
               SET(ph(m, t), P_FILESZ, PAGE + 16); SET(ph(m, t), P_MEMSZ, PAGE + 16); });
  REJECTS(b, { SET(ph(m, d), P_ALIGN, 0); SET(ph(m, d), P_OFFSET, UINT64_MAX - dfilesz + 2); });
  // below USER_BASE (entry moved along, so only the base is wrong)
  REJECTS(b, { SET(ph(m, t), P_VADDR, tvaddr - PAGE); SET(m, E_ENTRY, entry - PAGE); });
  REJECTS(b, { SET(ph(m, t), P_VADDR, tvaddr % PAGE); SET(m, E_ENTRY, entry - tvaddr + tvaddr % PAGE); });
  REJECTS(b, SET(ph(m, d), P_VADDR, USER_BASE - PAGE + dvaddr % PAGE));
  // above USER_HEAP_MAX, or wrapping around
  ACCEPTS(b, SET(ph(m, d), P_MEMSZ, USER_HEAP_MAX - dvaddr));
  REJECTS(b, SET(ph(m, d), P_MEMSZ, USER_HEAP_MAX - dvaddr + 1));
  REJECTS(b, SET(ph(m, d), P_VADDR, USER_HEAP_MAX - PAGE + dvaddr % PAGE));
  REJECTS(b, SET(ph(m, d), P_VADDR, USER_HEAP_MAX + dvaddr % PAGE));
  REJECTS(b, SET(ph(m, d), P_VADDR, UINT64_MAX - PAGE + 1 + dvaddr % PAGE));
  REJECTS(b, SET(ph(m, d), P_MEMSZ, UINT64_MAX));
  REJECTS(b, SET(ph(m, d), P_MEMSZ, UINT64_MAX - dvaddr + 1));   // end wraps to exactly 0
  // vaddr and offset must agree within the page when p_align >= 4096
  REJECTS(b, SET(ph(m, d), P_VADDR, dvaddr + 8));
  REJECTS(b, { SET(ph(m, d), P_VADDR, dvaddr + 8); SET(ph(m, d), P_ALIGN, 0x10000); });
  ACCEPTS(b, { SET(ph(m, d), P_VADDR, dvaddr + 8); SET(ph(m, d), P_ALIGN, 8); });
  ACCEPTS(b, { SET(ph(m, d), P_VADDR, dvaddr + 8); SET(ph(m, d), P_ALIGN, 0); });
  REJECTS(b, SET(ph(m, d), P_OFFSET, doffset - 8));
  // page ranges overlap
  REJECTS(b, SET(ph(m, d), P_VADDR, tvaddr / PAGE * PAGE + dvaddr % PAGE));
  REJECTS(b, { SET(ph(m, t), P_VADDR, dvaddr / PAGE * PAGE + tvaddr % PAGE);
                SET(m, E_ENTRY, entry - tvaddr + dvaddr / PAGE * PAGE + tvaddr % PAGE); });
  // W^X
  REJECTS(b, SET(ph(m, t), P_FLAGS, ELF_R | ELF_W | ELF_X));
  REJECTS(b, SET(ph(m, d), P_FLAGS, ELF_R | ELF_W | ELF_X));
  REJECTS(b, SET(ph(m, d), P_FLAGS, ELF_W | ELF_X));
  ACCEPTS(b, SET(ph(m, t), P_FLAGS, ELF_X));            // execute-only is fine
  ACCEPTS(b, SET(ph(m, t), P_FLAGS, ELF_R | ELF_X | 0xf0000000)); // processor bits ignored
  // no PT_LOAD left
  REJECTS(b, {
    for (uint64_t i = 0; i < GET(m, E_PHNUM); i++)
      if (GET(ph(m, i), P_TYPE) == PT_LOAD)
        SET(ph(m, i), P_TYPE, PT_NOTE);
  });
  REJECTS(b, {
    for (uint64_t i = 0; i < GET(m, E_PHNUM); i++)
      if (GET(ph(m, i), P_TYPE) == PT_LOAD)
        SET(ph(m, i), P_TYPE, PT_NULL);
  });
  // the data segment alone is left: no executable segment for the entry
  REJECTS(b, SET(ph(m, t), P_TYPE, PT_NOTE));
}

// The entry point must lie in an executable segment.
static void test_bad_entry(void) {
  NEED_IMAGE(b, I_FULL);
  uint64_t t = load_with(b->p, ELF_X, true), d = load_with(b->p, ELF_W, true);
  uint64_t tvaddr = GET(ph(b->p, t), P_VADDR), tmemsz = GET(ph(b->p, t), P_MEMSZ);

  REJECTS(b, SET(m, E_ENTRY, GET(ph(m, d), P_VADDR)));   // data: not executable
  REJECTS(b, SET(m, E_ENTRY, tvaddr + tmemsz));           // one past the end
  REJECTS(b, SET(m, E_ENTRY, tvaddr - 1));
  REJECTS(b, SET(m, E_ENTRY, 0));
  REJECTS(b, SET(m, E_ENTRY, UINT64_MAX));
  REJECTS(b, SET(ph(m, t), P_FLAGS, ELF_R));              // text no longer executable
  ACCEPTS(b, SET(m, E_ENTRY, tvaddr));
  ACCEPTS(b, SET(m, E_ENTRY, tvaddr + tmemsz - 1));
}

//
// Hand-built images, for what the linker does not emit.
//

struct hseg {
  uint32_t type, flags;
  uint64_t vaddr, filesz, memsz, align;
};

// An executable with these program headers, right after the ELF header; the
// file bytes of segment i start on a fresh page at vaddr % PAGE.
static struct image build(const struct hseg *s, int n, uint64_t entry) {
  uint64_t off = 64 + 56 * (uint64_t)n, offs[32];
  struct image img;

  for (int i = 0; i < n; i++) {
    off = (off + PAGE - 1) / PAGE * PAGE + s[i].vaddr % PAGE;
    offs[i] = off;
    off += s[i].filesz;
  }
  img.len = off;
  img.p = calloc(1, img.len);
  img.re_ok = false;
  if (img.p == NULL)
    abort();
  memcpy(img.p, "\x7f" "ELF\x02\x01\x01", 7);
  SET(img.p, E_TYPE, 2);
  SET(img.p, E_MACHINE, 243);
  SET(img.p, E_VERSION, 1);
  SET(img.p, E_ENTRY, entry);
  SET(img.p, E_PHOFF, 64);
  SET_(img.p, 52, 2, 64);          // e_ehsize
  SET(img.p, E_PHENTSIZE, 56);
  SET(img.p, E_PHNUM, n);
  for (int i = 0; i < n; i++) {
    uint8_t *p = ph(img.p, i);
    SET(p, P_TYPE, s[i].type);
    SET(p, P_FLAGS, s[i].flags);
    SET(p, P_OFFSET, offs[i]);
    SET(p, P_VADDR, s[i].vaddr);
    SET_(p, 24, 8, s[i].vaddr);    // p_paddr
    SET(p, P_FILESZ, s[i].filesz);
    SET(p, P_MEMSZ, s[i].memsz);
    SET(p, P_ALIGN, s[i].align);
    memset(img.p + offs[i], 0x13, s[i].filesz);   // RISC-V "nop" bytes, roughly
  }
  return img;
}

#define RX (ELF_R | ELF_X)
#define RW (ELF_R | ELF_W)

// k segments, one per page pair, the first executable.
static struct image build_many(int k, int extra_other) {
  struct hseg s[32];
  int n = 0;
  for (int i = 0; i < k; i++)
    s[n++] = (struct hseg){ PT_LOAD, i == 0 ? RX : RW, USER_BASE + 2 * PAGE * (uint64_t)i,
                            100, 100 + PAGE, PAGE };
  if (extra_other) {
    s[n++] = (struct hseg){ PT_GNU_STACK, RW, 0, 0, 0, 16 };
    s[n++] = (struct hseg){ PT_NOTE, ELF_R, 0, 8, 8, 4 };
    s[n++] = (struct hseg){ PT_RISCV_ATTRIBUTES, ELF_R, 0, 16, 0, 1 };
  }
  return build(s, n, USER_BASE);
}

// PN_XNUM (0xffff) means "the real count is in section header 0", which a
// loader that reads no section headers cannot honour: refused, even though
// 0xffff entries (one PT_LOAD, the rest PT_NULL) would fit in the image.
static void test_pn_xnum(void) {
  struct hseg one[] = { { PT_LOAD, RX, USER_BASE, 16, 16, PAGE } };
  struct image img = build(one, 1, USER_BASE);
  uint64_t table = 64 + 0xffffULL * 56, data = (table + PAGE - 1) / PAGE * PAGE;
  size_t len = data + 16;
  uint8_t *m = calloc(1, len);

  if (m == NULL)
    abort();
  memcpy(m, img.p, 64 + 56);                       // header and the PT_LOAD
  SET(ph(m, 0), P_OFFSET, data);
  memcpy(m + data, img.p + GET(ph(img.p, 0), P_OFFSET), 16);
  EXPECT_ACCEPT(m, len);                           // one entry: fine
  SET(m, E_PHNUM, 0xffff);
  EXPECT_REJECT(m, len);
  SET(m, E_PHNUM, 0xfffe);                         // the largest literal count
  EXPECT_ACCEPT(m, len);
  free(m);
  free(img.p);
}

static void test_segment_count(void) {
  for (int k = 1; k <= ELF_MAX_SEGS + 2; k++) {
    for (int other = 0; other < 2; other++) {
      struct image img = build_many(k, other);
      if (k <= ELF_MAX_SEGS)
        EXPECT_ACCEPT(img.p, img.len);
      else
        EXPECT_REJECT(img.p, img.len);
      free(img.p);
    }
  }
}

static void test_handbuilt_layouts(void) {
  struct image img;
  const uint64_t B = USER_BASE;

  // Byte-disjoint segments in one page: refused (one page, two permissions).
  struct hseg share[] = { { PT_LOAD, RX, B, 64, 64, PAGE },
                          { PT_LOAD, RW, B + 128, 64, 64, PAGE } };
  img = build(share, 2, B);
  EXPECT_REJECT(img.p, img.len);
  free(img.p);
  // Adjacent pages: fine, in either order.
  struct hseg adj[] = { { PT_LOAD, RW, B + PAGE, 64, 64, PAGE },
                        { PT_LOAD, RX, B, PAGE, PAGE, PAGE } };
  img = build(adj, 2, B + 4);
  EXPECT_ACCEPT(img.p, img.len);
  free(img.p);
  // A segment ending one byte into the next page collides with that page.
  struct hseg spill[] = { { PT_LOAD, RX, B, PAGE + 1, PAGE + 1, PAGE },
                          { PT_LOAD, RW, B + PAGE + 8, 8, 8, PAGE } };
  img = build(spill, 2, B);
  EXPECT_REJECT(img.p, img.len);
  free(img.p);
  // A segment whose last byte is the last byte below USER_HEAP_MAX.
  struct hseg top[] = { { PT_LOAD, RX, B, 16, 16, PAGE },
                        { PT_LOAD, RW, USER_HEAP_MAX - 3 * PAGE - 24, 8, 3 * PAGE + 24, PAGE } };
  img = build(top, 2, B);
  EXPECT_ACCEPT(img.p, img.len);
  struct elf_info info;
  CHECK_EQ(parse_exact(img.p, img.len, &info), 0);
  CHECK_EQ(info.end, USER_HEAP_MAX);
  free(img.p);
  // The segments need not be sorted; end is the highest one, page-rounded.
  struct hseg unsorted[] = { { PT_LOAD, RW, B + 0x50010, 8, 0x1234, 8 },
                             { PT_LOAD, RX, B + 0x20000, 40, 40, PAGE } };
  img = build(unsorted, 2, B + 0x20000 + 39);
  EXPECT_ACCEPT(img.p, img.len);
  CHECK_EQ(parse_exact(img.p, img.len, &info), 0);
  CHECK_EQ(info.end, (B + 0x50010 + 0x1234 + PAGE - 1) / PAGE * PAGE);
  free(img.p);
  // Two executable segments: the entry may be in the second one.
  struct hseg twox[] = { { PT_LOAD, RX, B, 16, 16, PAGE },
                         { PT_LOAD, ELF_X, B + 4 * PAGE, 16, 16, PAGE } };
  img = build(twox, 2, B + 4 * PAGE + 15);
  EXPECT_ACCEPT(img.p, img.len);
  free(img.p);
}

// Truncation at every length: accepted exactly when every byte the parser
// needs (header, program headers, segment file bytes) is still there.
static void truncate_all(const struct image *img) {
  uint64_t need = 64, phoff = GET(img->p, E_PHOFF), phnum = GET(img->p, E_PHNUM);
  struct elf_info r;

  if (phoff + phnum * 56 > need)
    need = phoff + phnum * 56;
  ref_loads(img->p, &r);
  for (uint32_t i = 0; i < r.nsegs; i++)
    if (r.seg[i].offset + r.seg[i].filesz > need)
      need = r.seg[i].offset + r.seg[i].filesz;
  for (size_t len = 0; len <= img->len && !check_failed_; len++) {
    struct elf_info info;
    int rc = parse_exact(img->p, len, &info);
    if (len >= need) {
      CHECK_EQ(rc, 0);
      if (rc == 0) {
        check_matches_ref(img->p, &info);
        check_invariants(&info, len);
      }
    } else {
      CHECK_EQ(rc, -ENOEXEC);
      CHECK(info_is_zero(&info));
    }
    check_context(" [length %zu of %zu, need %llu]", len, img->len, (unsigned long long)need);
  }
}

static void test_truncated(void) {
  NEED_IMAGE(full, I_FULL);
  NEED_IMAGE(tiny, I_TINY);
  truncate_all(full);
  truncate_all(tiny);
  struct image many = build_many(ELF_MAX_SEGS, 1);
  truncate_all(&many);
  free(many.p);
}

//
// Fuzz.
//

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void) { return xorshift64(&rng); }

// Values that sit on the edges of the rules.
static uint64_t interesting(size_t len) {
  static const uint64_t v[] = { 0, 1, 8, 55, 56, 64, PAGE - 1, PAGE, USER_BASE, USER_BASE - 1,
                                USER_HEAP_MAX, USER_HEAP_MAX - 1, USER_HEAP_MAX - PAGE,
                                UINT64_MAX, UINT64_MAX - PAGE + 1, 1ULL << 63, 0xffff };
  const uint64_t n = sizeof v / sizeof v[0];
  uint64_t k = rnd() % (n + 2);
  if (k == n)
    return len;
  if (k == n + 1)
    return len - 1 - rnd() % 64;
  return v[k];
}

static void fuzz(const struct image *img, int iters, int maxflips) {
  // Most flips land in the headers, where the decisions are.
  uint64_t hot = GET(img->p, E_PHOFF) + GET(img->p, E_PHNUM) * 56;
  int accepted = 0, rejected = 0;

  for (int it = 0; it < iters && !check_failed_; it++) {
    uint8_t *m = dup_exact(img->p, img->len, img->len);
    int flips = 1 + (int)(rnd() % (uint64_t)maxflips);
    for (int k = 0; k < flips; k++) {
      uint64_t where = rnd() % 4 == 0 ? rnd() % img->len : rnd() % hot;
      switch (rnd() % 4) {
      case 0: m[where] = (uint8_t)rnd(); break;
      case 1:                           // an aligned 8-byte field gets an edge value
        if ((where & ~7ULL) + 8 <= img->len)
          put_le(m + (where & ~7ULL), 8, interesting(img->len));
        break;
      default: m[where] ^= (uint8_t)(1u << (rnd() % 8)); break;
      }
    }
    struct elf_info info;
    int r = parse_exact(m, img->len, &info);
    int ref = ref_verdict(m, img->len);
    CHECK_EQ(r, ref);
    if (r == 0) {
      accepted++;
      check_matches_ref(m, &info);
      check_invariants(&info, img->len);
    } else {
      rejected++;
      CHECK(info_is_zero(&info));
    }
    check_context(" [iteration %d]", it);
    free(m);
  }
  // Both outcomes must be reached, or the fuzz explores nothing.
  CHECK(accepted > iters / 50);
  CHECK(rejected > iters / 50);
}

static void test_fuzz(void) {
  NEED_IMAGE(full, I_FULL);
  NEED_IMAGE(tiny, I_TINY);
  fuzz(full, 6000, 1);
  fuzz(full, 6000, 4);
  fuzz(tiny, 3000, 2);
  struct image many = build_many(ELF_MAX_SEGS, 1);
  fuzz(&many, 6000, 3);
  free(many.p);
}

CHECK_MAIN_BEGIN("test_elf")
  if (setup_tmpdir(tmpdir, sizeof tmpdir, check_binary_) != 0)
    return 1;

  RUN_TEST(test_full_program);
  RUN_TEST(test_tiny_program);
  RUN_TEST(test_text_at_0x11000);
  RUN_TEST(test_unaligned_image);
  RUN_TEST(test_ttext_below_user_base);
  RUN_TEST(test_rwx_program);
  RUN_TEST(test_bad_header);
  RUN_TEST(test_bad_phdr_table);
  RUN_TEST(test_bad_segments);
  RUN_TEST(test_bad_entry);
  RUN_TEST(test_pn_xnum);
  RUN_TEST(test_segment_count);
  RUN_TEST(test_handbuilt_layouts);
  RUN_TEST(test_truncated);
  RUN_TEST(test_fuzz);

  rmdir(tmpdir);     // every file in it was removed right after use
  for (int i = 0; i < I_N; i++)
    free(images[i].p);
CHECK_MAIN_END
