// Host unit tests for kernel/fdt.c and kernel/board.c.
//
// Real device trees come from QEMU itself (machine virt, dumpdtb=FILE) at run
// time, written under a mkdtemp() directory. Every blob handed to the parser
// sits in a malloc'd buffer of exactly totalsize bytes, so ASan reports any
// read past the end. Hand-built trees (a tiny DTB writer below) cover what
// QEMU does not emit: 1/1 address cells, more harts than BOARD_MAX_HARTS,
// disabled and MMU-less cpus, more virtio slots than fit, odd PLIC contexts.
// Malformed blobs (bad header fields, truncation, overlong properties,
// unterminated strings, random byte flips) must give -1 or a sane parse.
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "testutil.h"
#include "fdt.h"
#include "board.h"

// board_parse must succeed; if not, the failure names its reason.
#define PARSE_OK(blob, b, err) do { \
  if (board_parse((blob), (b), (err), sizeof (err)) != 0 && !check_failed_) { \
    check_failed_ = 1; \
    snprintf(check_why_, sizeof check_why_, "%s:%d: board_parse: %s", __FILE__, __LINE__, (err)); \
  } } while (0)

// A copy of src (srclen bytes) in a buffer of exactly newsize bytes (at least
// 8, the magic and totalsize the parser must read to learn the size), the
// tail zero-filled if newsize is larger.
static uint8_t *copy_sized(const uint8_t *src, size_t srclen, size_t newsize) {
  return dup_exact(src, srclen, newsize < 8 ? 8 : newsize);
}

// Copy of a blob with header word `field` (byte offset) set to v and the
// buffer sized to the resulting totalsize.
static uint8_t *with_header(const uint8_t *src, size_t size, int field, uint32_t v) {
  uint8_t *tmp = copy_sized(src, size, size), *p;
  put_be32(tmp + field, v);
  p = copy_sized(tmp, size, get_be32(tmp + 4));
  free(tmp);
  return p;
}

//
// QEMU-generated blobs.
//

static char tmpdir[256];

struct blob {
  uint8_t *p;
  size_t size;     // == header totalsize == allocation size
};

enum { Q_SMP1, Q_SMP4, Q_SMP8, Q_ARGS, Q_N };
static const struct { int smp; const char *mem; const char *append; uint64_t memsize; } qcfg[Q_N] = {
  [Q_SMP1] = { 1, "128M", NULL, 128ull << 20 },
  [Q_SMP4] = { 4, "256M", NULL, 256ull << 20 },
  [Q_SMP8] = { 8, "2G", NULL, 2ull << 30 },
  [Q_ARGS] = { 2, "128M", "test=all", 128ull << 20 },
};
static struct blob qblob[Q_N];
static char qwhy[Q_N][512];

// Run QEMU to dump its device tree for configuration i. -append needs a
// -kernel, so that case loads a dummy 64-byte image (never executed).
static struct blob qemu_dtb(int i) {
  char path[300], machine[400], smp[16], kernel[300];
  char *argv[20];
  int a = 0, rc;
  FILE *fp;
  size_t len = 0;
  uint8_t *raw;

  if (qblob[i].p != NULL || qwhy[i][0] != '\0')
    return qblob[i];
  snprintf(path, sizeof path, "%s/virt%d.dtb", tmpdir, i);
  snprintf(machine, sizeof machine, "virt,dumpdtb=%s", path);
  snprintf(smp, sizeof smp, "%d", qcfg[i].smp);
  snprintf(kernel, sizeof kernel, "%s/dummy-kernel.bin", tmpdir);
  argv[a++] = "qemu-system-riscv64"; argv[a++] = "-machine"; argv[a++] = machine;
  argv[a++] = "-smp"; argv[a++] = smp; argv[a++] = "-m"; argv[a++] = (char *)qcfg[i].mem;
  argv[a++] = "-nographic"; argv[a++] = "-bios"; argv[a++] = "none";
  if (qcfg[i].append) {
    fp = fopen(kernel, "wb");
    if (fp == NULL) {
      snprintf(qwhy[i], sizeof qwhy[i], "cannot create %s", kernel);
      return qblob[i];
    }
    for (int k = 0; k < 64; k++)
      fputc(0, fp);
    fclose(fp);
    argv[a++] = "-kernel"; argv[a++] = kernel;
    argv[a++] = "-append"; argv[a++] = (char *)qcfg[i].append;
  }
  argv[a] = NULL;
  rc = run_cmd(argv, NULL);
  if (qcfg[i].append)
    unlink(kernel);
  raw = slurp(path, &len);
  unlink(path);     // gone either way, even if a later test crashes
  if (rc != 0 || raw == NULL) {
    snprintf(qwhy[i], sizeof qwhy[i], "qemu-system-riscv64 -machine %s -smp %s -m %s failed "
             "(exit %d; installed? see scripts/deps.sh)", machine, smp, qcfg[i].mem, rc);
    free(raw);
    return qblob[i];
  }
  // QEMU writes its whole fdt buffer; the blob proper is totalsize bytes.
  if (len < 40 || get_be32(raw + 4) > len || get_be32(raw + 4) < 40) {
    snprintf(qwhy[i], sizeof qwhy[i], "%s: %zu bytes, totalsize %u", path, len,
             len >= 8 ? get_be32(raw + 4) : 0);
    free(raw);
    return qblob[i];
  }
  qblob[i].size = get_be32(raw + 4);
  qblob[i].p = copy_sized(raw, qblob[i].size, qblob[i].size);
  free(raw);
  return qblob[i];
}

// Get QEMU blob i into var, or fail the current test saying why.
#define NEED_QEMU(var, i) struct blob var = qemu_dtb(i); \
  if (var.p == NULL) { check_failed_ = 1; \
    snprintf(check_why_, sizeof check_why_, "%s", qwhy[i]); return; }

// Everything QEMU 7.2's virt machine puts in its tree.
static void check_qemu_board(int i) {
  struct board b;
  char err[128];
  int smp = qcfg[i].smp;
  NEED_QEMU(q, i);

  memset(err, 'x', sizeof err);
  PARSE_OK(q.p, &b, err);
  CHECK(strcmp(err, "") == 0);
  CHECK_EQ(b.mem_base, 0x80000000);
  CHECK_EQ(b.mem_size, qcfg[i].memsize);
  CHECK_EQ(b.nharts, smp);
  CHECK_EQ(b.nharts_found, smp);
  for (int h = 0; h < smp; h++) {
    CHECK_EQ(b.hartid[h], h);
    CHECK_EQ(b.plic_sctx[h], 2 * h + 1);   // contexts: M = 2h, S = 2h+1
  }
  for (int h = smp; h < BOARD_MAX_HARTS; h++)
    CHECK_EQ(b.plic_sctx[h], -1);
  CHECK_EQ(b.timebase_hz, 10000000);
  CHECK(b.has_sstc);
  CHECK(!b.has_n);                       // stock QEMU has no N extension
  CHECK_EQ(b.uart.base, 0x10000000);
  CHECK_EQ(b.uart.size, 0x100);
  CHECK_EQ(b.uart.irq, 10);
  CHECK_EQ(b.plic.base, 0xc000000);
  CHECK_EQ(b.plic.size, 0x600000);
  // QEMU 7.2 writes riscv,ndev = VIRT_IRQCHIP_NUM_SOURCES = 96 (0x60); the
  // highest source is 95 (0x5f).
  CHECK_EQ(b.plic_ndev, 0x60);
  CHECK_EQ(b.nvirtio, 8);
  for (int v = 0; v < 8; v++) {
    CHECK_EQ(b.virtio[v].base, 0x10001000 + 0x1000 * v);
    CHECK_EQ(b.virtio[v].size, 0x1000);
    CHECK_EQ(b.virtio[v].irq, v + 1);
  }
  CHECK(strcmp(b.bootargs, qcfg[i].append ? qcfg[i].append : "") == 0);
  CHECK_EQ(b.rng_seed_len, 32);          // QEMU's virt board writes a /chosen rng-seed
}

static void test_qemu_smp1_128m(void) { check_qemu_board(Q_SMP1); }
static void test_qemu_smp4_256m(void) { check_qemu_board(Q_SMP4); }
static void test_qemu_smp8_2g(void) { check_qemu_board(Q_SMP8); }
static void test_qemu_bootargs(void) { check_qemu_board(Q_ARGS); }

// The generic reader on a real tree.
static void test_fdt_api_qemu(void) {
  struct fdt f;
  struct fdt_prop p;
  const char *s;
  uint64_t a, sz;
  uint32_t v;
  int root, n, soc, cpu2, intc, plic, count;
  NEED_QEMU(q, Q_SMP4);

  CHECK_EQ(fdt_init(&f, q.p), 0);
  CHECK_EQ(f.totalsize, q.size);
  CHECK_EQ(f.version, 17);
  root = fdt_root(&f);
  CHECK(root > 0);
  CHECK(strcmp(fdt_node_name(&f, root), "") == 0);
  CHECK_EQ(fdt_parent(&f, root), FDT_ERR_NOTFOUND);
  CHECK_EQ(fdt_address_cells(&f, root), 2);
  CHECK_EQ(fdt_size_cells(&f, root), 2);
  CHECK_EQ(fdt_path_offset(&f, "/"), root);
  CHECK_EQ(fdt_path_offset(&f, "cpus"), FDT_ERR_BADPATH);
  CHECK_EQ(fdt_path_offset(&f, "/nosuch"), FDT_ERR_NOTFOUND);
  CHECK_EQ(fdt_path_offset(&f, "/cpus/cpu@9"), FDT_ERR_NOTFOUND);
  CHECK_EQ(fdt_path_offset(&f, "/memory@80000001"), FDT_ERR_NOTFOUND);

  // Unit address may be left out; both spellings find the same node.
  soc = fdt_path_offset(&f, "/soc");
  n = fdt_path_offset(&f, "/soc/serial");
  CHECK(soc > 0 && n > soc);
  CHECK_EQ(fdt_path_offset(&f, "/soc/serial@10000000"), n);
  CHECK_EQ(fdt_path_offset(&f, "//soc//serial@10000000/"), n);
  CHECK(strcmp(fdt_node_name(&f, n), "serial@10000000") == 0);
  CHECK_EQ(fdt_parent(&f, n), soc);
  CHECK_EQ(fdt_reg(&f, n, 0, &a, &sz), 0);
  CHECK_EQ(a, 0x10000000);
  CHECK_EQ(sz, 0x100);
  CHECK_EQ(fdt_reg(&f, n, 1, &a, &sz), FDT_ERR_NOTFOUND);
  CHECK(fdt_is_compatible(&f, n, "ns16550a"));
  CHECK(!fdt_is_compatible(&f, n, "ns16550"));
  CHECK(fdt_node_enabled(&f, n));
  CHECK_EQ(fdt_first_child(&f, n), FDT_ERR_NOTFOUND);

  // The flash node has two reg entries.
  n = fdt_path_offset(&f, "/flash");
  CHECK_EQ(fdt_reg(&f, n, 1, &a, &sz), 0);
  CHECK_EQ(a, 0x22000000);
  CHECK_EQ(sz, 0x2000000);

  // cpus: 1 address cell, 0 size cells.
  cpu2 = fdt_path_offset(&f, "/cpus/cpu@2");
  CHECK(cpu2 > 0);
  CHECK_EQ(fdt_address_cells(&f, fdt_parent(&f, cpu2)), 1);
  CHECK_EQ(fdt_size_cells(&f, fdt_parent(&f, cpu2)), 0);
  CHECK_EQ(fdt_reg(&f, cpu2, 0, &a, &sz), 0);
  CHECK_EQ(a, 2);
  CHECK_EQ(sz, 0);
  CHECK_EQ(fdt_getprop_str(&f, cpu2, "riscv,isa", &s), 0);
  CHECK(strstr(s, "_sstc") != NULL);
  CHECK_EQ(fdt_getprop_str(&f, cpu2, "nosuch", &s), FDT_ERR_NOTFOUND);

  // phandles: the cpu's interrupt-controller child, found both ways.
  intc = fdt_first_child(&f, cpu2);
  CHECK(intc > cpu2);
  CHECK(strcmp(fdt_node_name(&f, intc), "interrupt-controller") == 0);
  CHECK(fdt_has_prop(&f, intc, "interrupt-controller"));
  CHECK(fdt_phandle(&f, intc) != 0);
  CHECK_EQ(fdt_node_by_phandle(&f, fdt_phandle(&f, intc)), intc);
  CHECK_EQ(fdt_node_by_phandle(&f, 0), FDT_ERR_NOTFOUND);
  CHECK_EQ(fdt_node_by_phandle(&f, 0xffffffff), FDT_ERR_NOTFOUND);
  CHECK_EQ(fdt_node_by_phandle(&f, 0x7777), FDT_ERR_NOTFOUND);
  CHECK_EQ(fdt_parent(&f, intc), cpu2);
  CHECK_EQ(fdt_next_sibling(&f, intc), FDT_ERR_NOTFOUND);
  CHECK_EQ(fdt_next_sibling(&f, cpu2), fdt_path_offset(&f, "/cpus/cpu@3"));

  // The PLIC: compatible is a two-string list.
  static const char *const want[] = { "nope", "riscv,plic0", "sifive,plic-1.0.0" };
  plic = fdt_next_compatible(&f, -1, want, 3);
  CHECK(plic > 0);
  CHECK_EQ(fdt_next_compatible(&f, plic, want, 3), FDT_ERR_NOTFOUND);
  CHECK_EQ(fdt_node_compatible(&f, plic, want, 3), 1);
  CHECK_EQ(fdt_getprop(&f, plic, "compatible", &p), 0);
  CHECK_EQ(fdt_stringlist_count(&p), 2);
  CHECK_EQ(fdt_stringlist_get(&p, 1, &s), 0);
  CHECK(strcmp(s, "riscv,plic0") == 0);
  CHECK_EQ(fdt_stringlist_get(&p, 2, &s), FDT_ERR_NOTFOUND);
  CHECK_EQ(fdt_getprop_u32(&f, plic, "riscv,ndev", &v), 0);
  CHECK_EQ(v, 0x60);
  CHECK_EQ(fdt_getprop_u32(&f, plic, "reg", &v), FDT_ERR_BADVALUE);
  CHECK_EQ(fdt_getprop(&f, plic, "interrupts-extended", &p), 0);
  CHECK_EQ(p.len, 4 * 16);
  CHECK_EQ(fdt_prop_u32(&p, 3, &v), 0);
  CHECK_EQ(v, 9);
  CHECK_EQ(fdt_prop_u32(&p, 16, &v), FDT_ERR_BADVALUE);
  CHECK_EQ(fdt_prop_cells(&p, 15, 2, &a), FDT_ERR_BADVALUE);
  CHECK_EQ(fdt_prop_cells(&p, 0, 3, &a), FDT_ERR_BADCELLS);

  // Properties iterate in order and each has a readable name.
  count = 0;
  for (n = fdt_first_prop(&f, plic); n >= 0; n = fdt_next_prop(&f, n)) {
    CHECK_EQ(fdt_prop_at(&f, n, &p), 0);
    CHECK(p.name[0] != '\0');
    count++;
  }
  CHECK_EQ(n, FDT_ERR_NOTFOUND);
  CHECK_EQ(count, 8);

  // A whole-tree walk: depth never negative, ends cleanly.
  count = 0;
  int depth = 0, maxdepth = 0;
  for (n = root; n >= 0; n = fdt_next_node(&f, n, &depth)) {
    CHECK(depth >= 0);
    if (depth > maxdepth)
      maxdepth = depth;
    count++;
  }
  CHECK_EQ(n, FDT_ERR_NOTFOUND);
  CHECK(count > 30);
  CHECK_EQ(maxdepth, 4);      // /cpus/cpu-map/cluster0/core0

  // No reservations in QEMU's map.
  CHECK_EQ(fdt_rsv_entry(&f, 0, &a, &sz), FDT_ERR_NOTFOUND);

  // Offsets that are not nodes.
  CHECK(fdt_node_name(&f, root + 4) == NULL);
  CHECK(fdt_node_name(&f, -1) == NULL);
  CHECK(fdt_node_name(&f, (int)q.size) == NULL);
  CHECK_EQ(fdt_first_child(&f, -3), FDT_ERR_BADOFFSET);
  CHECK_EQ(fdt_next_node(&f, 1, NULL), FDT_ERR_BADOFFSET);
  CHECK_EQ(fdt_parent(&f, root + 4), FDT_ERR_BADOFFSET);
  CHECK_EQ(fdt_first_prop(&f, 0x7ffffffc), FDT_ERR_BADOFFSET);
  CHECK_EQ(fdt_next_prop(&f, root), FDT_ERR_BADOFFSET);
  CHECK_EQ(fdt_prop_at(&f, root, &p), FDT_ERR_BADOFFSET);
}

//
// Hand-built trees: a minimal DTB writer.
//

struct bld {
  uint8_t st[32768];
  size_t n;
  char str[4096];
  size_t ns;
  uint64_t rsv[4][2];
  int nrsv;
};

static void st32(struct bld *b, uint32_t v) {
  if (b->n + 4 > sizeof b->st)
    abort();
  put_be32(b->st + b->n, v);
  b->n += 4;
}

static void st_bytes(struct bld *b, const void *p, size_t len) {
  if (b->n + len + 4 > sizeof b->st)
    abort();
  if (len)
    memcpy(b->st + b->n, p, len);
  b->n += len;
  while (b->n % 4)
    b->st[b->n++] = 0;
}

static uint32_t str_off(struct bld *b, const char *name) {
  size_t off, len = strlen(name) + 1;

  for (off = 0; off < b->ns; off += strlen(b->str + off) + 1)
    if (strcmp(b->str + off, name) == 0)
      return (uint32_t)off;
  if (b->ns + len > sizeof b->str)
    abort();
  memcpy(b->str + b->ns, name, len);
  b->ns += len;
  return (uint32_t)off;
}

static void node(struct bld *b, const char *name) { st32(b, FDT_BEGIN_NODE); st_bytes(b, name, strlen(name) + 1); }
static void end(struct bld *b) { st32(b, FDT_END_NODE); }

static void prop(struct bld *b, const char *name, const void *val, size_t len) {
  st32(b, FDT_PROP);
  st32(b, (uint32_t)len);
  st32(b, str_off(b, name));
  st_bytes(b, val, len);
}

static void prop_str(struct bld *b, const char *name, const char *s) { prop(b, name, s, strlen(s) + 1); }

static void prop_cells(struct bld *b, const char *name, int n, ...) {
  uint8_t v[256];
  va_list ap;

  va_start(ap, n);
  for (int i = 0; i < n; i++)
    put_be32(v + 4 * i, va_arg(ap, uint32_t));
  va_end(ap);
  prop(b, name, v, 4 * (size_t)n);
}

// header | reservation map | structure block | strings block
static struct blob finish(struct bld *b) {
  struct blob r;
  uint32_t off_rsv = 40, off_struct, off_strings;

  st32(b, FDT_END);
  off_struct = off_rsv + 16 * (uint32_t)(b->nrsv + 1);
  off_strings = off_struct + (uint32_t)b->n;
  r.size = off_strings + b->ns;
  r.p = calloc(1, r.size);
  if (r.p == NULL)
    abort();
  put_be32(r.p + 0, FDT_MAGIC);
  put_be32(r.p + 4, (uint32_t)r.size);
  put_be32(r.p + 8, off_struct);
  put_be32(r.p + 12, off_strings);
  put_be32(r.p + 16, off_rsv);
  put_be32(r.p + 20, 17);
  put_be32(r.p + 24, 16);
  put_be32(r.p + 28, 0);
  put_be32(r.p + 32, (uint32_t)b->ns);
  put_be32(r.p + 36, (uint32_t)b->n);
  for (int i = 0; i < b->nrsv; i++) {
    put_be32(r.p + off_rsv + 16 * i, (uint32_t)(b->rsv[i][0] >> 32));
    put_be32(r.p + off_rsv + 16 * i + 4, (uint32_t)b->rsv[i][0]);
    put_be32(r.p + off_rsv + 16 * i + 8, (uint32_t)(b->rsv[i][1] >> 32));
    put_be32(r.p + off_rsv + 16 * i + 12, (uint32_t)b->rsv[i][1]);
  }
  memcpy(r.p + off_struct, b->st, b->n);
  memcpy(r.p + off_strings, b->str, b->ns);
  return r;
}

// What the hand-built board looks like.
struct opts {
  int ncpus;                 // usable cpus (hart ids 100, 101, ...)
  int nvirtio;               // enabled virtio slots, in scrambled order
  int nosstc;                // this hart's isa lacks sstc (-1: none)
  int non;                   // harts [0, non) have the N extension ("rv64imacn")
  bool isa_ext_list;         // hart 0 uses riscv,isa-extensions instead
  bool timebase_on_cpus;     // else on each cpu node (the fallback)
  bool no_memory, no_uart, no_plic, no_cpus_node;
  bool liteuart;             // the enabled UART is LiteX's, not a 16550
  const char *bootargs;      // NULL: /chosen without bootargs
  bool bootargs_unterminated;
  int rng_seed;              // bytes of /chosen rng-seed (byte i is 3i+1), 0: none
  int32_t sctx[16];          // out: expected S-mode context per usable hart
};

#define CPU_PH(h)  (0x100u + (h))
#define INTC_PH(h) (0x200u + (h))
#define HART_ID(h) (100u + (h))

static void cpu_node(struct bld *b, const char *name, uint32_t id, uint32_t intc_ph,
                     const char *status, const char *mmu, const char *isa, bool timebase) {
  node(b, name);
  prop_str(b, "device_type", "cpu");
  prop_cells(b, "reg", 1, id);
  if (status)
    prop_str(b, "status", status);
  prop_str(b, "compatible", "riscv");
  if (isa)
    prop_str(b, "riscv,isa", isa);
  if (mmu)
    prop_str(b, "mmu-type", mmu);
  if (timebase)
    prop_cells(b, "timebase-frequency", 1, 1000000u);
  node(b, "interrupt-controller");
  prop_cells(b, "#interrupt-cells", 1, 1u);
  prop(b, "interrupt-controller", NULL, 0);
  prop_str(b, "compatible", "riscv,cpu-intc");
  prop_cells(b, "phandle", 1, intc_ph);
  end(b);
  end(b);
}

// Harts that must not count: disabled, no MMU, mmu-type none.
static void unusable_cpus(struct bld *b) {
  cpu_node(b, "cpu@1f4", 500, 0x300, "disabled", "riscv,sv39", "rv64imac_sstc", false);
  cpu_node(b, "cpu@1f5", 501, 0x301, NULL, NULL, "rv64imac_sstc", false);
  cpu_node(b, "cpu@1f6", 502, 0x302, "okay", "riscv,none", "rv64imac_sstc", false);
}

static struct blob build_board(struct opts *o) {
  static struct bld b;
  char name[64];
  uint8_t ie[4096];
  size_t nie = 0;
  int32_t ctx = 0;

  memset(&b, 0, sizeof b);
  b.rsv[b.nrsv][0] = 0x40000000;
  b.rsv[b.nrsv++][1] = 0x200000;
  node(&b, "");
  prop_cells(&b, "#address-cells", 1, 1u);
  prop_cells(&b, "#size-cells", 1, 1u);
  prop_str(&b, "compatible", "coral,test-board");

  node(&b, "chosen");
  if (o->bootargs && o->bootargs_unterminated)
    prop(&b, "bootargs", o->bootargs, strlen(o->bootargs));
  else if (o->bootargs)
    prop_str(&b, "bootargs", o->bootargs);
  if (o->rng_seed) {
    uint8_t seed[256];
    for (int i = 0; i < o->rng_seed; i++)
      seed[i] = (uint8_t)(3 * i + 1);
    prop(&b, "rng-seed", seed, (size_t)o->rng_seed);
  }
  end(&b);

  if (!o->no_memory) {
    node(&b, "memory@40000000");
    prop_str(&b, "device_type", "memory");
    prop_cells(&b, "reg", 2, 0x40000000u, 0x08000000u);
    end(&b);
    // Only the first memory node counts.
    node(&b, "memory@50000000");
    prop_str(&b, "device_type", "memory");
    prop_cells(&b, "reg", 2, 0x50000000u, 0x1000u);
    end(&b);
  }

  // A second-level interrupt controller with 2 cells per interrupt, so the
  // PLIC's interrupts-extended has entries of different widths.
  node(&b, "intc2");
  prop(&b, "interrupt-controller", NULL, 0);
  prop_cells(&b, "#interrupt-cells", 1, 2u);
  prop_cells(&b, "phandle", 1, 0x400u);
  end(&b);

  node(&b, o->no_cpus_node ? "cpus-elsewhere" : "cpus");
  prop_cells(&b, "#address-cells", 1, 1u);
  prop_cells(&b, "#size-cells", 1, 0u);
  if (o->timebase_on_cpus)
    prop_cells(&b, "timebase-frequency", 2, 0x1u, 0x2u);   // a 2-cell u64
  for (int h = 0; h < o->ncpus; h++) {
    const char *isa = h == o->nosstc ? "rv64imafdc_zicsr_zifencei_xsstc"
                    : h < o->non   ? "rv64imafdcn_zicsr_zifencei_zba_sstc_zbb"
                                   : "rv64imafdc_zicsr_zifencei_zba_sstc_zbb_zn";
    if (h == 0 && o->isa_ext_list)
      isa = NULL;
    snprintf(name, sizeof name, "cpu@%x", HART_ID(h));
    if (h == 0 && o->isa_ext_list) {
      node(&b, name);
      prop_str(&b, "device_type", "cpu");
      prop_cells(&b, "reg", 1, HART_ID(h));
      prop_str(&b, "mmu-type", "riscv,sv39");
      prop(&b, "riscv,isa-extensions", "i\0m\0a\0zicsr\0sstc", sizeof "i\0m\0a\0zicsr\0sstc");
      if (!o->timebase_on_cpus)
        prop_cells(&b, "timebase-frequency", 1, 1000000u);
      node(&b, "interrupt-controller");
      prop_cells(&b, "#interrupt-cells", 1, 1u);
      prop(&b, "interrupt-controller", NULL, 0);
      prop_cells(&b, "phandle", 1, INTC_PH(h));
      end(&b);
      end(&b);
    } else {
      cpu_node(&b, name, HART_ID(h), INTC_PH(h), h % 2 ? "okay" : NULL, "riscv,sv39", isa,
               !o->timebase_on_cpus);
    }
    if (h == 1 || (h == 0 && o->ncpus == 1))
      unusable_cpus(&b);
  }
  if (o->ncpus == 0)
    unusable_cpus(&b);
  node(&b, "cpu-map");
  node(&b, "cluster0");
  end(&b);
  end(&b);
  end(&b);

  node(&b, "soc");
  prop_cells(&b, "#address-cells", 1, 1u);
  prop_cells(&b, "#size-cells", 1, 1u);
  prop(&b, "ranges", NULL, 0);
  prop_str(&b, "compatible", "simple-bus");
  if (!o->no_uart) {
    node(&b, "serial@1000");            // disabled: skipped
    prop_str(&b, "compatible", "ns16550a");
    prop_str(&b, "status", "disabled");
    prop_cells(&b, "reg", 2, 0x1000u, 0x100u);
    end(&b);
    node(&b, "serial@20000");
    if (o->liteuart)
      prop_str(&b, "compatible", "litex,liteuart");
    else
      prop(&b, "compatible", "vendor,uart\0ns16550", sizeof "vendor,uart\0ns16550");
    prop_cells(&b, "reg", 2, 0x20000u, 0x100u);
    prop_cells(&b, "interrupts", 1, 3u);
    end(&b);
  }
  if (!o->no_plic) {
    // Contexts: the disabled hart's pair first, then a 2-cell entry, then the
    // usable harts in reverse, with hart 3 having no S-mode context.
    for (int i = 0; i < 16; i++)
      o->sctx[i] = -1;
#define IE(v) (put_be32(ie + nie, (v)), nie += 4)
    IE(0x300); IE(11); ctx++;
    IE(0x300); IE(9); ctx++;
    IE(0x400); IE(9); IE(9); ctx++;
    for (int h = o->ncpus - 1; h >= 0; h--) {
      IE(INTC_PH(h)); IE(11); ctx++;
      if (h != 3) {
        IE(INTC_PH(h)); IE(9);
        o->sctx[h] = ctx++;
      }
    }
#undef IE
    node(&b, "interrupt-controller@c000000");
    prop(&b, "compatible", "sifive,plic-1.0.0\0riscv,plic0", sizeof "sifive,plic-1.0.0\0riscv,plic0");
    prop_cells(&b, "reg", 2, 0xc000000u, 0x400000u);
    prop_cells(&b, "riscv,ndev", 1, 31u);
    prop(&b, "interrupt-controller", NULL, 0);
    prop_cells(&b, "#interrupt-cells", 1, 1u);
    prop(&b, "interrupts-extended", ie, nie);
    prop_cells(&b, "phandle", 1, 0x500u);
    end(&b);
  }
  node(&b, "virtio_mmio@f000");          // disabled, lowest address: skipped
  prop_str(&b, "compatible", "virtio,mmio");
  prop_str(&b, "status", "disabled");
  prop_cells(&b, "reg", 2, 0xf000u, 0x200u);
  prop_cells(&b, "interrupts", 1, 77u);
  end(&b);
  for (int k = 0; k < o->nvirtio; k++) {
    // Scramble the order: 7 is coprime with the counts used.
    uint32_t slot = (uint32_t)(k * 7) % (uint32_t)o->nvirtio;
    snprintf(name, sizeof name, "virtio_mmio@%x", 0x100000u + 0x1000u * slot);
    node(&b, name);
    prop_str(&b, "compatible", "virtio,mmio");
    prop_cells(&b, "reg", 2, 0x100000u + 0x1000u * slot, 0x200u);
    prop_cells(&b, "interrupts", 1, 1u + slot);
    end(&b);
  }
  end(&b);   // soc
  end(&b);   // root
  return finish(&b);
}

static void default_opts(struct opts *o) {
  memset(o, 0, sizeof *o);
  o->ncpus = 10;
  o->nvirtio = 18;
  o->nosstc = -1;
  o->bootargs = "console=ttyS0 quiet";
}

static void test_handbuilt_board(void) {
  struct opts o;
  struct board b;
  char err[128];

  default_opts(&o);
  struct blob t = build_board(&o);
  PARSE_OK(t.p, &b, err);
  CHECK(strcmp(err, "") == 0);
  CHECK_EQ(b.mem_base, 0x40000000);     // 1/1 cells
  CHECK_EQ(b.mem_size, 0x08000000);
  CHECK_EQ(b.nharts, BOARD_MAX_HARTS);  // capped
  CHECK_EQ(b.nharts_found, 10);
  for (int h = 0; h < BOARD_MAX_HARTS; h++) {
    CHECK_EQ(b.hartid[h], HART_ID(h));
    CHECK_EQ(b.plic_sctx[h], o.sctx[h]);
  }
  CHECK_EQ(b.plic_sctx[3], -1);
  CHECK_EQ(b.plic_sctx[0], 3 + 2 * 10 - 1 - 1);   // hart 0 is listed last
  CHECK_EQ(b.timebase_hz, 1000000);               // from the cpu nodes
  CHECK(b.has_sstc);
  CHECK_EQ(b.uart.base, 0x20000);
  CHECK_EQ(b.uart.size, 0x100);
  CHECK_EQ(b.uart.irq, 3);
  CHECK_EQ(b.uart_type, UART_NS16550);
  CHECK_EQ(b.plic.base, 0xc000000);
  CHECK_EQ(b.plic.size, 0x400000);
  CHECK_EQ(b.plic.irq, 0);
  CHECK_EQ(b.plic_ndev, 31);
  CHECK_EQ(b.nvirtio, BOARD_MAX_VIRTIO);          // 18 found, lowest 16 kept
  for (int v = 0; v < BOARD_MAX_VIRTIO; v++) {
    CHECK_EQ(b.virtio[v].base, 0x100000 + 0x1000 * v);
    CHECK_EQ(b.virtio[v].size, 0x200);
    CHECK_EQ(b.virtio[v].irq, 1 + v);
  }
  CHECK(strcmp(b.bootargs, "console=ttyS0 quiet") == 0);
  CHECK_EQ(b.rng_seed_len, 0);                    // none in this tree
  free(t.p);
}

static void test_handbuilt_variants(void) {
  struct opts o;
  struct board b;
  char err[128];
  struct blob t;

  // Few harts, sstc missing on one (only "xsstc", which must not match),
  // timebase as a 2-cell value on /cpus, no bootargs, few virtio slots.
  default_opts(&o);
  o.ncpus = 5;
  o.nosstc = 4;
  o.timebase_on_cpus = true;
  o.bootargs = NULL;
  o.nvirtio = 3;
  t = build_board(&o);
  PARSE_OK(t.p, &b, err);
  CHECK_EQ(b.nharts, 5);
  CHECK_EQ(b.nharts_found, 5);
  CHECK(!b.has_sstc);
  CHECK(!b.has_n);                       // "zn" is not the letter n
  CHECK_EQ(b.timebase_hz, 0x100000002ull);
  CHECK(strcmp(b.bootargs, "") == 0);
  CHECK_EQ(b.nvirtio, 3);
  for (int v = 0; v < 3; v++)
    CHECK_EQ(b.virtio[v].base, 0x100000 + 0x1000 * v);
  for (int h = 0; h < 5; h++)
    CHECK_EQ(b.plic_sctx[h], o.sctx[h]);
  for (int h = 5; h < BOARD_MAX_HARTS; h++)
    CHECK_EQ(b.plic_sctx[h], -1);
  free(t.p);

  // /chosen rng-seed: its bytes as they are, a long one cut to what struct
  // board holds (the rest of the tree parsed as ever).
  for (int len = 1; len <= 200; len += 199) {
    default_opts(&o);
    o.rng_seed = len;
    t = build_board(&o);
    PARSE_OK(t.p, &b, err);
    int want = len < BOARD_RNG_SEED_MAX ? len : BOARD_RNG_SEED_MAX;
    CHECK_EQ(b.rng_seed_len, want);
    for (int i = 0; i < want; i++)
      CHECK_EQ(b.rng_seed[i], (uint8_t)(3 * i + 1));
    CHECK(strcmp(b.bootargs, "console=ttyS0 quiet") == 0);
    free(t.p);
  }

  // The N extension: a single letter of riscv,isa, on every hart or not at all.
  default_opts(&o);
  o.ncpus = 3;
  o.non = 3;
  t = build_board(&o);
  PARSE_OK(t.p, &b, err);
  CHECK(b.has_n);
  CHECK(b.has_sstc);
  free(t.p);
  default_opts(&o);
  o.ncpus = 3;
  o.non = 2;                             // the third hart lacks it: not usable
  t = build_board(&o);
  PARSE_OK(t.p, &b, err);
  CHECK(!b.has_n);
  free(t.p);

  // riscv,isa-extensions on hart 0; every hart has sstc. One hart.
  default_opts(&o);
  o.ncpus = 1;
  o.isa_ext_list = true;
  t = build_board(&o);
  PARSE_OK(t.p, &b, err);
  CHECK_EQ(b.nharts, 1);
  CHECK(b.has_sstc);
  CHECK_EQ(b.timebase_hz, 1000000);
  CHECK_EQ(b.plic_sctx[0], o.sctx[0]);
  free(t.p);

  // LiteX's UART (the hw/soc SoC) is a console too, and told apart.
  default_opts(&o);
  o.liteuart = true;
  t = build_board(&o);
  PARSE_OK(t.p, &b, err);
  CHECK_EQ(b.uart.base, 0x20000);
  CHECK_EQ(b.uart.irq, 3);
  CHECK_EQ(b.uart_type, UART_LITEX);
  free(t.p);

  // Exactly the cap.
  default_opts(&o);
  o.ncpus = BOARD_MAX_HARTS;
  t = build_board(&o);
  PARSE_OK(t.p, &b, err);
  CHECK_EQ(b.nharts, BOARD_MAX_HARTS);
  CHECK_EQ(b.nharts_found, BOARD_MAX_HARTS);
  free(t.p);
}

// Each required piece missing gives -1 and says which.
static void expect_fail(struct opts *o, const char *want) {
  struct board b;
  char err[128];
  struct blob t = build_board(o);

  CHECK_EQ(board_parse(t.p, &b, err, sizeof err), -1);
  if (strstr(err, want) == NULL && !check_failed_) {
    check_failed_ = 1;
    snprintf(check_why_, sizeof check_why_, "err \"%s\", expected \"%s\"", err, want);
  }
  free(t.p);
}

static void test_missing_pieces(void) {
  struct opts o;

  default_opts(&o); o.no_memory = true;
  expect_fail(&o, "board: no memory node");
  default_opts(&o); o.ncpus = 0;
  expect_fail(&o, "board: no usable hart");
  default_opts(&o); o.no_cpus_node = true;
  expect_fail(&o, "board: no /cpus node");
  default_opts(&o); o.no_uart = true;
  expect_fail(&o, "board: no uart");
  default_opts(&o); o.no_plic = true;
  expect_fail(&o, "board: no plic");
  default_opts(&o); o.bootargs_unterminated = true;
  expect_fail(&o, "board: /chosen bootargs: bad property value");
  default_opts(&o);
  o.bootargs = "x123456789x123456789x123456789x123456789x123456789x123456789x123456789x123456789"
               "x123456789x123456789x123456789x123456789x123456789x123456789x123456789x123456789"
               "x123456789x123456789x123456789x123456789x123456789x123456789x123456789x123456789"
               "x123456789";   // 250 bytes fit
  {
    struct board b;
    char err[64];
    struct blob t = build_board(&o);
    PARSE_OK(t.p, &b, err);
    CHECK_EQ(strlen(b.bootargs), 250);
    free(t.p);
  }
  o.bootargs = "x123456789x123456789x123456789x123456789x123456789x123456789x123456789x123456789"
               "x123456789x123456789x123456789x123456789x123456789x123456789x123456789x123456789"
               "x123456789x123456789x123456789x123456789x123456789x123456789x123456789x123456789"
               "x123456789x12345";   // 256 bytes do not
  expect_fail(&o, "board: bootargs too long");
}

// The generic reader on the hand-built tree: 1/1 cells, reservations, lists.
static void test_fdt_api_handbuilt(void) {
  struct opts o;
  struct fdt f;
  struct fdt_prop p;
  uint64_t a, sz;
  const char *s;
  int root, mem, soc, ser, cpu, intc, n;

  default_opts(&o);
  struct blob t = build_board(&o);
  CHECK_EQ(fdt_init(&f, t.p), 0);
  CHECK_EQ(fdt_rsv_entry(&f, 0, &a, &sz), 0);
  CHECK_EQ(a, 0x40000000);
  CHECK_EQ(sz, 0x200000);
  CHECK_EQ(fdt_rsv_entry(&f, 1, &a, &sz), FDT_ERR_NOTFOUND);
  CHECK_EQ(fdt_rsv_entry(&f, -1, &a, &sz), FDT_ERR_NOTFOUND);

  root = fdt_root(&f);
  CHECK_EQ(fdt_address_cells(&f, root), 1);
  CHECK_EQ(fdt_size_cells(&f, root), 1);
  mem = fdt_path_offset(&f, "/memory");
  CHECK_EQ(mem, fdt_path_offset(&f, "/memory@40000000"));
  CHECK_EQ(fdt_reg(&f, mem, 0, &a, &sz), 0);
  CHECK_EQ(a, 0x40000000);
  CHECK_EQ(sz, 0x08000000);
  CHECK_EQ(fdt_reg(&f, root, 0, &a, &sz), FDT_ERR_BADOFFSET);     // no parent
  // Defaults when a node does not set the cells: 2 and 1.
  n = fdt_path_offset(&f, "/chosen");
  CHECK_EQ(fdt_address_cells(&f, n), 2);
  CHECK_EQ(fdt_size_cells(&f, n), 1);
  CHECK_EQ(fdt_getprop_str(&f, n, "bootargs", &s), 0);
  CHECK(strcmp(s, "console=ttyS0 quiet") == 0);

  soc = fdt_path_offset(&f, "/soc");
  ser = fdt_path_offset(&f, "/soc/serial");
  CHECK_EQ(ser, fdt_path_offset(&f, "/soc/serial@1000"));          // the first serial*
  CHECK(!fdt_node_enabled(&f, ser));
  ser = fdt_path_offset(&f, "/soc/serial@20000");
  CHECK(fdt_node_enabled(&f, ser));
  CHECK_EQ(fdt_parent(&f, ser), soc);
  CHECK_EQ(fdt_reg(&f, ser, 0, &a, &sz), 0);
  CHECK_EQ(a, 0x20000);
  CHECK_EQ(sz, 0x100);
  CHECK(fdt_is_compatible(&f, ser, "ns16550"));
  CHECK(!fdt_is_compatible(&f, ser, "ns16550a"));
  CHECK_EQ(fdt_getprop(&f, ser, "compatible", &p), 0);
  CHECK_EQ(fdt_stringlist_count(&p), 2);

  // 64-bit timebase on /cpus absent here; per-cpu value read as u64 and u32.
  cpu = fdt_path_offset(&f, "/cpus/cpu@67");
  CHECK(cpu > 0);
  CHECK_EQ(fdt_reg(&f, cpu, 0, &a, &sz), 0);
  CHECK_EQ(a, HART_ID(3));
  CHECK_EQ(sz, 0);
  CHECK_EQ(fdt_getprop_u64(&f, cpu, "timebase-frequency", &a), 0);
  CHECK_EQ(a, 1000000);
  intc = fdt_node_by_phandle(&f, INTC_PH(3));
  CHECK_EQ(fdt_parent(&f, intc), cpu);
  CHECK_EQ(fdt_first_child(&f, cpu), intc);
  CHECK(fdt_has_prop(&f, intc, "interrupt-controller"));
  CHECK_EQ(fdt_getprop(&f, intc, "interrupt-controller", &p), 0);
  CHECK_EQ(p.len, 0);
  CHECK_EQ(fdt_stringlist_count(&p), 0);
  CHECK(!fdt_stringlist_contains(&p, ""));

  // Children of /cpus: 10 usable + 3 unusable + cpu-map.
  int count = 0;
  for (n = fdt_first_child(&f, fdt_path_offset(&f, "/cpus")); n >= 0; n = fdt_next_sibling(&f, n))
    count++;
  CHECK_EQ(n, FDT_ERR_NOTFOUND);
  CHECK_EQ(count, 14);

  // Unterminated string values are refused, not over-read.
  CHECK_EQ(fdt_getprop(&f, intc, "#interrupt-cells", &p), 0);
  CHECK_EQ(fdt_getprop_str(&f, intc, "#interrupt-cells", &s), FDT_ERR_BADVALUE);
  CHECK_EQ(fdt_stringlist_count(&p), FDT_ERR_BADVALUE);
  CHECK_EQ(fdt_stringlist_get(&p, 0, &s), FDT_ERR_BADVALUE);
  CHECK(!fdt_stringlist_contains(&p, "x"));
  free(t.p);
}

// An independent decoder (dtc) accepts what the test writer produces, so the
// hand-built tests are testing against real DTBs.
static void test_builder_matches_dtc(void) {
  struct opts o;
  char path[300];
  FILE *fp;

  default_opts(&o);
  struct blob t = build_board(&o);
  snprintf(path, sizeof path, "%s/handbuilt.dtb", tmpdir);
  fp = fopen(path, "wb");
  CHECK(fp != NULL);
  if (fp != NULL) {
    CHECK_EQ(fwrite(t.p, 1, t.size, fp), t.size);
    fclose(fp);
    char *argv[] = { "dtc", "-I", "dtb", "-O", "dts", "-o", "/dev/null", path, NULL };
    CHECK_EQ(run_cmd(argv, NULL), 0);   // nonzero also if dtc is missing: scripts/deps.sh
    unlink(path);
  }
  free(t.p);
}

//
// Malformed blobs.
//

static int parse(const uint8_t *p, char *err, size_t errlen) {
  struct board b;
  return board_parse(p, &b, err, errlen);
}

static void test_bad_header(void) {
  char err[128];
  uint8_t *p;
  NEED_QEMU(q, Q_SMP1);
  uint32_t off_struct = get_be32(q.p + 8), off_strings = get_be32(q.p + 12);
  uint32_t size_strings = get_be32(q.p + 32), size_struct = get_be32(q.p + 36);

  p = with_header(q.p, q.size, 0, 0x12345678);
  CHECK_EQ(parse(p, err, sizeof err), -1);
  CHECK(strcmp(err, "fdt: bad magic 0x12345678") == 0);
  free(p);

  p = with_header(q.p, q.size, 20, 16);
  CHECK_EQ(parse(p, err, sizeof err), -1);
  CHECK(strstr(err, "fdt: unsupported version 16") == err);
  free(p);
  p = with_header(q.p, q.size, 24, 18);        // last_comp_version too new
  CHECK_EQ(parse(p, err, sizeof err), -1);
  free(p);

  // totalsize too small for the header, or cutting off a block.
  uint32_t bad_sizes[] = { 0, 4, 8, 39, 40, off_struct + size_struct - 4,
                           off_strings + size_strings - 1 };
  for (size_t i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; i++) {
    p = with_header(q.p, q.size, 4, bad_sizes[i]);
    CHECK_EQ(parse(p, err, sizeof err), -1);
    CHECK(strncmp(err, "fdt: ", 5) == 0);
    free(p);
  }
  // Block offsets / sizes past the end, wrapping, or misaligned.
  struct { int field; uint32_t v; } bad[] = {
    { 8, (uint32_t)q.size }, { 8, (uint32_t)q.size - 4 }, { 8, 0xfffffff0 }, { 8, 0 },
    { 8, 36 }, { 8, off_struct + 2 },
    { 36, 0xfffffffc }, { 36, (uint32_t)q.size }, { 36, size_struct - 2 }, { 36, 0 },
    { 12, (uint32_t)q.size }, { 12, 0xffffffff }, { 32, 0xffffffff }, { 32, size_strings + 1 },
    { 16, (uint32_t)q.size }, { 16, 0xfffffff8 }, { 16, 44 }, { 16, 0 },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    p = with_header(q.p, q.size, bad[i].field, bad[i].v);
    if (parse(p, err, sizeof err) != -1 && !check_failed_) {
      check_failed_ = 1;
      snprintf(check_why_, sizeof check_why_, "header word %d = %#x accepted", bad[i].field, bad[i].v);
    }
    free(p);
  }
  // A blob at an address that is not 8-byte aligned.
  p = malloc(q.size + 4);
  memcpy(p + 4, q.p, q.size);
  CHECK_EQ(parse(p + 4, err, sizeof err), -1);
  CHECK(strstr(err, "not 8-byte aligned") != NULL);
  free(p);
  // NULL blob; err NULL or tiny.
  CHECK_EQ(parse(NULL, err, sizeof err), -1);
  CHECK_EQ(parse(q.p, NULL, 0), 0);
  p = with_header(q.p, q.size, 0, 0x12345678);
  CHECK_EQ(parse(p, NULL, 0), -1);
  CHECK_EQ(parse(p, err, 0), -1);
  memset(err, 'x', sizeof err);
  CHECK_EQ(parse(p, err, 6), -1);
  CHECK(strcmp(err, "fdt: ") == 0);
  CHECK_EQ(err[6], 'x');
  free(p);
}

// Every totalsize from 0 up to the real one, with a buffer of exactly that
// size: short ones fail, none reads past the end.
static void truncate_sweep(const struct blob *q) {
  char err[128];
  uint32_t need = get_be32(q->p + 8) + get_be32(q->p + 36);
  uint32_t send = get_be32(q->p + 12) + get_be32(q->p + 32);

  if (send > need)
    need = send;
  for (uint32_t ts = 0; ts <= q->size; ts++) {
    uint8_t *p = with_header(q->p, q->size, 4, ts);
    int r = parse(p, err, sizeof err);
    if (r != (ts >= need ? 0 : -1) && !check_failed_) {
      check_failed_ = 1;
      snprintf(check_why_, sizeof check_why_, "totalsize %u: got %d (%s)", ts, r, err);
    }
    free(p);
  }
}

static void test_truncated(void) {
  struct opts o;
  NEED_QEMU(q, Q_SMP1);

  truncate_sweep(&q);
  default_opts(&o);
  struct blob t = build_board(&o);
  truncate_sweep(&t);
  free(t.p);
}

// Offset of the named property of the node at path, found with the reader.
static int find_prop(const struct blob *q, const char *path, const char *name) {
  struct fdt f;
  struct fdt_prop p;
  int n, off;

  if (fdt_init(&f, q->p) < 0 || (n = fdt_path_offset(&f, path)) < 0)
    return -1;
  for (off = fdt_first_prop(&f, n); off >= 0; off = fdt_next_prop(&f, off))
    if (fdt_prop_at(&f, off, &p) == 0 && strcmp(p.name, name) == 0)
      return off;
  return -1;
}

static void test_bad_struct(void) {
  char err[128];
  uint8_t *p;
  int off;
  NEED_QEMU(q, Q_SMP4);
  uint32_t off_struct = get_be32(q.p + 8), size_struct = get_be32(q.p + 36);
  uint32_t size_strings = get_be32(q.p + 32);

  // A property whose length runs past the structure block (and the blob).
  off = find_prop(&q, "/soc/plic", "interrupts-extended");
  CHECK(off > 0);
  uint32_t room = off_struct + size_struct - (uint32_t)off - 12;
  uint32_t lens[] = { room + 1, room + 4, 0x7fffffff, 0xfffffff0, 0xffffffff };
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    p = copy_sized(q.p, q.size, q.size);
    put_be32(p + off + 4, lens[i]);
    CHECK_EQ(parse(p, err, sizeof err), -1);
    CHECK(strstr(err, "malformed structure block") != NULL);
    free(p);
  }
  // A length that would wrap the walk back to the node's first property,
  // which leads here again: a reader without the length check loops forever.
  int first = find_prop(&q, "/soc/plic", "phandle");
  CHECK(first > 0 && first < off);
  p = copy_sized(q.p, q.size, q.size);
  put_be32(p + off + 4, (uint32_t)first - (uint32_t)off - 12u);
  CHECK_EQ(parse(p, err, sizeof err), -1);
  free(p);

  // A property length that stays inside the block but desynchronises the
  // token stream.
  p = copy_sized(q.p, q.size, q.size);
  put_be32(p + off + 4, get_be32(p + off + 4) + 4);
  CHECK_EQ(parse(p, err, sizeof err), -1);
  free(p);

  // A property name offset past the strings block, or at its very end.
  uint32_t nameoffs[] = { size_strings, size_strings + 100, 0xffffffff };
  for (size_t i = 0; i < sizeof nameoffs / sizeof nameoffs[0]; i++) {
    p = copy_sized(q.p, q.size, q.size);
    put_be32(p + off + 8, nameoffs[i]);
    CHECK_EQ(parse(p, err, sizeof err), -1);
    free(p);
  }
  // The strings block cut just before the final name's NUL: unterminated.
  p = with_header(q.p, q.size, 32, size_strings - 1);
  CHECK_EQ(parse(p, err, sizeof err), -1);
  free(p);

  // The structure block cut in the middle of a node name: unterminated.
  struct fdt f;
  CHECK_EQ(fdt_init(&f, q.p), 0);
  int node = fdt_path_offset(&f, "/soc/virtio_mmio@10001000");
  CHECK(node > 0);
  p = with_header(q.p, q.size, 36, (uint32_t)node + 8 - off_struct);
  CHECK_EQ(parse(p, err, sizeof err), -1);
  free(p);
  // ... or with no FDT_END: cut just before it.
  p = with_header(q.p, q.size, 36, size_struct - 4);
  CHECK_EQ(parse(p, err, sizeof err), -1);
  free(p);
  // An unknown token, an extra FDT_END_NODE, a missing one.
  uint32_t toks[] = { 0, 5, 8, 0xffffffff, FDT_END_NODE, FDT_END };
  for (size_t i = 0; i < sizeof toks / sizeof toks[0]; i++) {
    p = copy_sized(q.p, q.size, q.size);
    put_be32(p + off, toks[i]);
    CHECK_EQ(parse(p, err, sizeof err), -1);
    free(p);
  }
  // Unterminated strings board.c relies on: device_type of the memory node,
  // the uart's compatible.
  off = find_prop(&q, "/memory", "device_type");
  p = copy_sized(q.p, q.size, q.size);
  p[off + 12 + 6] = 'x';                     // "memory\0" -> "memoryx"
  CHECK_EQ(parse(p, err, sizeof err), -1);
  CHECK(strcmp(err, "board: no memory node") == 0);
  free(p);
  off = find_prop(&q, "/soc/serial", "compatible");
  p = copy_sized(q.p, q.size, q.size);
  p[off + 12 + 8] = 'x';                     // "ns16550a\0" -> "ns16550ax"
  CHECK_EQ(parse(p, err, sizeof err), -1);
  CHECK(strstr(err, "board: no uart") == err);
  free(p);
  // A PLIC context naming a phandle nobody has.
  off = find_prop(&q, "/soc/plic", "interrupts-extended");
  p = copy_sized(q.p, q.size, q.size);
  put_be32(p + off + 12 + 8, 0x7777);
  CHECK_EQ(parse(p, err, sizeof err), -1);
  CHECK(strstr(err, "unknown phandle 0x7777") != NULL);
  free(p);
  // An odd number of cells.
  p = copy_sized(q.p, q.size, q.size);
  put_be32(p + off + 4, get_be32(p + off + 4) - 4);
  put_be32(p + off + 12 + get_be32(p + off + 4), FDT_NOP);
  CHECK_EQ(parse(p, err, sizeof err), -1);
  CHECK(strstr(err, "interrupts-extended malformed") != NULL);
  free(p);
}

//
// Random corruption.
//

static uint64_t rng = 0x2545f4914f6cdd1dull;   // fixed seed: reproducible

static uint32_t rnd(void) {
  return (uint32_t)(xorshift64(&rng) >> 11);
}

// Whatever the parse said, it must be consistent.
static void check_sane(int r, const struct board *b, const char *err, size_t errlen) {
  CHECK(r == 0 || r == -1);
  CHECK(memchr(err, '\0', errlen) != NULL);
  if (r != 0) {
    CHECK(err[0] != '\0');
    return;
  }
  CHECK(err[0] == '\0');
  CHECK(b->nharts >= 1 && b->nharts <= BOARD_MAX_HARTS);
  CHECK(b->nharts_found >= b->nharts);
  CHECK(b->timebase_hz != 0);
  CHECK(b->nvirtio <= BOARD_MAX_VIRTIO);
  for (uint32_t v = 1; v < b->nvirtio && v < BOARD_MAX_VIRTIO; v++)
    CHECK(b->virtio[v - 1].base <= b->virtio[v].base);
  CHECK(memchr(b->bootargs, '\0', sizeof b->bootargs) != NULL);
  for (int h = 0; h < BOARD_MAX_HARTS; h++)
    CHECK(b->plic_sctx[h] >= -1);
}

// Drive every reader entry point over a (possibly corrupt but accepted) blob.
static void walk_all(const uint8_t *blob) {
  struct fdt f;
  struct fdt_prop p;
  const char *s;
  uint64_t a, sz;
  uint32_t v;
  int n, depth = 0, steps = 0;

  if (fdt_init(&f, blob) < 0)
    return;
  for (n = fdt_root(&f); n >= 0; n = fdt_next_node(&f, n, &depth)) {
    CHECK(++steps <= (int)f.totalsize / 4);
    if (steps > (int)f.totalsize / 4)
      return;
    CHECK(fdt_node_name(&f, n) != NULL);
    fdt_parent(&f, n);
    fdt_first_child(&f, n);
    fdt_next_sibling(&f, n);
    fdt_reg(&f, n, 0, &a, &sz);
    fdt_node_by_phandle(&f, fdt_phandle(&f, n));
    fdt_node_enabled(&f, n);
    fdt_getprop_str(&f, n, "compatible", &s);
    for (int off = fdt_first_prop(&f, n); off >= 0; off = fdt_next_prop(&f, off)) {
      if (fdt_prop_at(&f, off, &p) < 0)
        break;
      fdt_stringlist_count(&p);
      fdt_stringlist_get(&p, 1, &s);
      fdt_stringlist_contains(&p, "okay");
      fdt_prop_u32(&p, 1, &v);
      fdt_prop_cells(&p, 1, 2, &a);
    }
  }
  fdt_path_offset(&f, "/soc/plic/x");
  fdt_path_offset(&f, "/cpus/cpu@0/interrupt-controller");
}

static void fuzz(const struct blob *q, int iters, int maxflips) {
  struct board b;
  char err[96];

  for (int it = 0; it < iters && !check_failed_; it++) {
    uint8_t *tmp = copy_sized(q->p, q->size, q->size), *p;
    int flips = 1 + (int)(rnd() % (uint32_t)maxflips);
    for (int k = 0; k < flips; k++) {
      uint32_t where = rnd() % 4 == 0 ? rnd() % 40 : rnd() % (uint32_t)q->size;
      tmp[where] ^= (uint8_t)(1u << (rnd() % 8));
      if (rnd() % 8 == 0)
        tmp[where] = (uint8_t)rnd();
    }
    // The parser trusts totalsize (it has no other size), so give it a buffer
    // of exactly that size; keep the original when the flip makes it huge.
    if (get_be32(tmp + 4) > (1u << 22))
      put_be32(tmp + 4, (uint32_t)q->size);
    p = copy_sized(tmp, q->size, get_be32(tmp + 4));
    free(tmp);
    memset(err, 'x', sizeof err);
    int r = board_parse(p, &b, err, sizeof err);
    check_sane(r, &b, err, sizeof err);
    walk_all(p);
    check_context(" [iteration %d]", it);
    free(p);
  }
}

static void test_fuzz_qemu(void) {
  NEED_QEMU(q1, Q_SMP1);
  NEED_QEMU(q8, Q_SMP8);
  fuzz(&q1, 3000, 1);
  fuzz(&q1, 3000, 8);
  fuzz(&q8, 2000, 4);
}

static void test_fuzz_handbuilt(void) {
  struct opts o;

  default_opts(&o);
  struct blob t = build_board(&o);
  fuzz(&t, 3000, 1);
  fuzz(&t, 3000, 8);
  free(t.p);
}

CHECK_MAIN_BEGIN("test_fdt")
  if (setup_tmpdir(tmpdir, sizeof tmpdir, check_binary_) != 0)
    return 1;

  RUN_TEST(test_qemu_smp1_128m);
  RUN_TEST(test_qemu_smp4_256m);
  RUN_TEST(test_qemu_smp8_2g);
  RUN_TEST(test_qemu_bootargs);
  RUN_TEST(test_fdt_api_qemu);
  RUN_TEST(test_handbuilt_board);
  RUN_TEST(test_handbuilt_variants);
  RUN_TEST(test_missing_pieces);
  RUN_TEST(test_fdt_api_handbuilt);
  RUN_TEST(test_builder_matches_dtc);
  RUN_TEST(test_bad_header);
  RUN_TEST(test_truncated);
  RUN_TEST(test_bad_struct);
  RUN_TEST(test_fuzz_qemu);
  RUN_TEST(test_fuzz_handbuilt);

  rmdir(tmpdir);     // every file in it was removed right after use
  for (int i = 0; i < Q_N; i++)
    free(qblob[i].p);
CHECK_MAIN_END
