// Fill struct board from the flattened device tree the firmware hands us.
//
// Everything the kernel needs to know about the machine comes from here, so
// the rules are strict: a tree without memory, a usable hart, a timebase, a
// UART or a PLIC is rejected with a one-line reason rather than half-parsed.
// All tree access goes through fdt.c, which bounds every read by the header's
// totalsize; this file only decides what the properties mean.
#include "board.h"
#include "fdt.h"
#include "klib.h"

#define IRQ_S_EXT 9     // S-mode external interrupt: the PLIC context we want

// Error text. There is no snprintf in the kernel, so just enough of one.
struct msg {
  char *buf;
  size_t cap, len;
};

static void msg_str(struct msg *m, const char *s) {
  if (m->cap == 0)
    return;
  while (*s != '\0' && m->len + 1 < m->cap)
    m->buf[m->len++] = *s++;
  m->buf[m->len] = '\0';
}

static void msg_hex(struct msg *m, uint64_t v) {
  char t[19];
  int i = sizeof t;

  t[--i] = '\0';
  do {
    t[--i] = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v != 0);
  t[--i] = 'x';
  t[--i] = '0';
  msg_str(m, t + i);
}

static void msg_dec(struct msg *m, uint64_t v) {
  char t[21];
  int i = sizeof t;

  t[--i] = '\0';
  do {
    t[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  msg_str(m, t + i);
}

// State shared by the parsing steps below.
struct ctx {
  struct fdt f;
  struct board *b;
  struct msg err;
  int cpu[BOARD_MAX_HARTS];       // node of each used hart
  uint32_t intc[BOARD_MAX_HARTS]; // phandle of its interrupt-controller child, 0 if none
};

// Start the message over: "board: <what>". Always returns -1.
static int fail(struct ctx *c, const char *what) {
  c->err.len = 0;
  msg_str(&c->err, "board: ");
  msg_str(&c->err, what);
  return -1;
}

static int fail_hex(struct ctx *c, const char *what, uint64_t v) {
  fail(c, what);
  msg_str(&c->err, " ");
  msg_hex(&c->err, v);
  return -1;
}

// An fdt call failed while reading what: "board: <what>: <fdt error>".
static int fail_fdt(struct ctx *c, const char *what, int e) {
  fail(c, what);
  msg_str(&c->err, ": ");
  msg_str(&c->err, fdt_strerror(e));
  return -1;
}

// The same for property prop of device what: "board: uart reg: <fdt error>".
static int fail_fdt2(struct ctx *c, const char *what, const char *prop, int e) {
  fail(c, what);
  msg_str(&c->err, prop);
  msg_str(&c->err, ": ");
  msg_str(&c->err, fdt_strerror(e));
  return -1;
}

static bool has_device_type(struct ctx *c, int node, const char *type) {
  const char *s;

  return fdt_getprop_str(&c->f, node, "device_type", &s) == 0 && strcmp(s, type) == 0;
}

//
// Memory.
//

// The first memory node under the root; its first reg range.
static int parse_memory(struct ctx *c) {
  int n, r;
  uint64_t base, size;

  for (n = fdt_first_child(&c->f, fdt_root(&c->f)); n >= 0; n = fdt_next_sibling(&c->f, n)) {
    if (!has_device_type(c, n, "memory") || !fdt_node_enabled(&c->f, n))
      continue;
    if ((r = fdt_reg(&c->f, n, 0, &base, &size)) < 0)
      return fail_fdt(c, "memory reg", r);
    if (size == 0 || base + size < base)
      return fail_hex(c, "memory range is empty or wraps at", base);
    c->b->mem_base = base;
    c->b->mem_size = size;
    return 0;
  }
  if (n != FDT_ERR_NOTFOUND)
    return fail_fdt(c, "reading the root's children", n);
  return fail(c, "no memory node");
}

//
// Harts.
//

static char lower(char ch) {
  return ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
}

// Does the riscv,isa string name the multi-letter extension ext? After the
// base ("rv64imafdch") multi-letter extensions follow, each after an '_', so
// only a whole '_'-separated token counts: "sstc" must not match inside some
// longer extension name. ISA strings are case-insensitive.
static bool isa_has(const char *isa, const char *ext) {
  size_t n = strlen(ext);

  for (const char *p = isa; *p != '\0'; p++) {
    if (*p != '_')
      continue;
    size_t len = 0;
    while (p[1 + len] != '\0' && p[1 + len] != '_')
      len++;
    if (len == n) {
      size_t i = 0;
      while (i < n && lower(p[1 + i]) == ext[i])
        i++;
      if (i == n)
        return true;
    }
  }
  return false;
}

// Does the riscv,isa string name the single-letter extension letter? Those
// follow "rv32"/"rv64", before the first '_'.
static bool isa_has_letter(const char *isa, char letter) {
  if (lower(isa[0]) != 'r' || lower(isa[1]) != 'v')
    return false;
  const char *p = isa + 2;
  while (*p >= '0' && *p <= '9')
    p++;
  for (; *p != '\0' && *p != '_'; p++)
    if (lower(*p) == letter)
      return true;
  return false;
}

// Newer trees list extensions in riscv,isa-extensions; older ones only have
// the riscv,isa string. Use whichever the hart has. ext is lower case; a
// one-letter ext is looked for among the single-letter extensions.
static bool hart_has_ext(struct ctx *c, int cpu, const char *ext) {
  struct fdt_prop p;
  const char *isa;

  if (fdt_getprop(&c->f, cpu, "riscv,isa-extensions", &p) == 0)
    return fdt_stringlist_contains(&p, ext);
  if (fdt_getprop_str(&c->f, cpu, "riscv,isa", &isa) != 0)
    return false;
  return ext[1] == '\0' ? isa_has_letter(isa, ext[0]) : isa_has(isa, ext);
}

// A hart we can run on: a cpu node, enabled, with an MMU.
static bool hart_usable(struct ctx *c, int cpu) {
  const char *mmu;

  if (!has_device_type(c, cpu, "cpu") || !fdt_node_enabled(&c->f, cpu))
    return false;
  return fdt_getprop_str(&c->f, cpu, "mmu-type", &mmu) == 0 && strcmp(mmu, "riscv,none") != 0;
}

// Phandle of the hart's local interrupt controller (its child node with an
// interrupt-controller property), which the PLIC's contexts point at.
static uint32_t hart_intc(struct ctx *c, int cpu) {
  int n;

  for (n = fdt_first_child(&c->f, cpu); n >= 0; n = fdt_next_sibling(&c->f, n))
    if (fdt_has_prop(&c->f, n, "interrupt-controller"))
      return fdt_phandle(&c->f, n);
  return 0;
}

// Record the usable harts under /cpus in tree order, keeping the first
// BOARD_MAX_HARTS but counting them all.
static int parse_harts(struct ctx *c) {
  struct board *b = c->b;
  int cpus, n, r;
  uint64_t id, unused;

  if ((cpus = fdt_path_offset(&c->f, "/cpus")) < 0)
    return cpus == FDT_ERR_NOTFOUND ? fail(c, "no /cpus node") : fail_fdt(c, "/cpus", cpus);
  b->has_sstc = b->has_n = true;
  for (n = fdt_first_child(&c->f, cpus); n >= 0; n = fdt_next_sibling(&c->f, n)) {
    if (!hart_usable(c, n))
      continue;
    if ((r = fdt_reg(&c->f, n, 0, &id, &unused)) < 0)
      return fail_fdt(c, "cpu reg", r);
    if (id > 0xffffffffu)
      return fail_hex(c, "hart id too large:", id);
    b->nharts_found++;
    if (b->nharts == BOARD_MAX_HARTS)
      continue;
    for (uint32_t i = 0; i < b->nharts; i++)
      if (b->hartid[i] == id)
        return fail_hex(c, "duplicate hart id", id);
    c->cpu[b->nharts] = n;
    c->intc[b->nharts] = hart_intc(c, n);
    b->hartid[b->nharts] = (uint32_t)id;
    b->has_sstc = b->has_sstc && hart_has_ext(c, n, "sstc");
    b->has_n = b->has_n && hart_has_ext(c, n, "n");
    b->nharts++;
  }
  if (n != FDT_ERR_NOTFOUND)
    return fail_fdt(c, "reading /cpus", n);
  if (b->nharts == 0) {
    b->has_sstc = b->has_n = false;
    return fail(c, "no usable hart");
  }

  // timebase-frequency belongs on /cpus; some trees put it on each cpu.
  r = fdt_getprop_u64(&c->f, cpus, "timebase-frequency", &b->timebase_hz);
  if (r == FDT_ERR_NOTFOUND)
    r = fdt_getprop_u64(&c->f, c->cpu[0], "timebase-frequency", &b->timebase_hz);
  if (r == FDT_ERR_NOTFOUND)
    return fail(c, "no timebase-frequency");
  if (r < 0)
    return fail_fdt(c, "timebase-frequency", r);
  if (b->timebase_hz == 0)
    return fail(c, "timebase-frequency is 0");
  return 0;
}

//
// Devices.
//

// reg entry 0 and the first interrupt of a device node. No interrupt at all
// is allowed (irq 0); a malformed one is not.
static int read_mmio(struct ctx *c, int node, const char *what, struct mmio_dev *d) {
  struct fdt_prop p;
  int r;

  if ((r = fdt_reg(&c->f, node, 0, &d->base, &d->size)) < 0)
    return fail_fdt2(c, what, " reg", r);
  d->irq = 0;
  if (fdt_getprop(&c->f, node, "interrupts", &p) == 0)
    r = fdt_prop_u32(&p, 0, &d->irq);
  else if (fdt_getprop(&c->f, node, "interrupts-extended", &p) == 0)
    r = fdt_prop_u32(&p, 1, &d->irq);         // <phandle irq ...>
  if (r < 0)
    return fail_fdt2(c, what, " interrupts", r);
  return 0;
}

// The first enabled node, in tree order, compatible with any of list[0..n).
// Returns the node, FDT_ERR_NOTFOUND, or another error.
static int find_enabled(struct ctx *c, const char *const *list, int n) {
  int node;

  for (node = fdt_next_compatible(&c->f, -1, list, n); node >= 0;
       node = fdt_next_compatible(&c->f, node, list, n))
    if (fdt_node_enabled(&c->f, node))
      return node;
  return node;
}

static int parse_uart(struct ctx *c) {
  // The first two are 16550s; the last is LiteX's UART.
  static const char *const compat[] = { "ns16550a", "ns16550", "litex,liteuart" };
  int n = find_enabled(c, compat, 3);

  if (n == FDT_ERR_NOTFOUND)
    return fail(c, "no uart (ns16550a or litex,liteuart)");
  if (n < 0)
    return fail_fdt(c, "looking for the uart", n);
  c->b->uart_type = fdt_node_compatible(&c->f, n, compat, 2) >= 0 ? UART_NS16550 : UART_LITEX;
  return read_mmio(c, n, "uart", &c->b->uart);
}

// QEMU virt's test device ("sifive,test0"): writing it ends the emulator with
// an exit status, which the SBI reset call of Debian's OpenSBI 1.1 cannot
// carry. Optional: a board without it has size 0 here.
static int parse_finisher(struct ctx *c) {
  static const char *const compat[] = { "sifive,test0", "sifive,test1" };
  int n = find_enabled(c, compat, 2);

  if (n == FDT_ERR_NOTFOUND)
    return 0;
  if (n < 0)
    return fail_fdt(c, "looking for the test device", n);
  return read_mmio(c, n, "test device", &c->b->finisher);
}

// Our QEMU's user-interrupt controller ("coral,uintc", hw/qemu), present only
// when the harts have the N extension. Optional.
static int parse_uintc(struct ctx *c) {
  static const char *const compat[] = { "coral,uintc" };
  int n = find_enabled(c, compat, 1), r;

  if (n == FDT_ERR_NOTFOUND)
    return 0;
  if (n < 0)
    return fail_fdt(c, "looking for the user-interrupt controller", n);
  if (read_mmio(c, n, "user-interrupt controller", &c->b->uintc) < 0)
    return -1;
  if ((r = fdt_getprop_u32(&c->f, n, "coral,entries", &c->b->uintc_entries)) < 0)
    return fail_fdt(c, "coral,uintc coral,entries", r);
  return 0;
}

// The PLIC's interrupts-extended lists its contexts in order, each as a
// phandle of a hart-local interrupt controller followed by that controller's
// #interrupt-cells cells (one for RISC-V: the local irq number, 11 = M-mode
// external, 9 = S-mode external). A hart's S-mode context is the index of the
// entry naming its controller with irq 9.
static int plic_contexts(struct ctx *c, int plic) {
  struct board *b = c->b;
  struct fdt_prop p;
  uint32_t ncells, i, ph, irq, icells = 0, cached_ph = 0;
  int32_t ctx;
  int r, node;

  for (uint32_t h = 0; h < BOARD_MAX_HARTS; h++)
    b->plic_sctx[h] = -1;
  if ((r = fdt_getprop(&c->f, plic, "interrupts-extended", &p)) < 0)
    return r == FDT_ERR_NOTFOUND ? fail(c, "plic has no interrupts-extended")
                                 : fail_fdt(c, "plic interrupts-extended", r);
  ncells = p.len / 4;
  // Every entry is at least two cells, so ctx < ncells and i only grows.
  for (i = 0, ctx = 0; i < ncells; ctx++) {
    fdt_prop_u32(&p, i, &ph);
    if (ph != cached_ph) {
      // Consecutive entries usually name the same hart: look each up once.
      if ((node = fdt_node_by_phandle(&c->f, ph)) < 0)
        return node == FDT_ERR_NOTFOUND ? fail_hex(c, "plic context names unknown phandle", ph)
                                        : fail_fdt(c, "plic interrupts-extended", node);
      if ((r = fdt_getprop_u32(&c->f, node, "#interrupt-cells", &icells)) < 0)
        return fail_fdt(c, "#interrupt-cells of a plic context's controller", r);
      cached_ph = ph;
    }
    if (icells == 0 || (uint64_t)i + 1 + icells > ncells)
      return fail_hex(c, "plic interrupts-extended malformed at cell", i);
    fdt_prop_u32(&p, i + 1, &irq);
    for (uint32_t h = 0; h < b->nharts; h++)
      if (irq == IRQ_S_EXT && c->intc[h] == ph && b->plic_sctx[h] < 0)
        b->plic_sctx[h] = ctx;
    i += 1 + icells;
  }
  return 0;
}

static int parse_plic(struct ctx *c) {
  static const char *const compat[] = { "riscv,plic0", "sifive,plic-1.0.0" };
  int n = find_enabled(c, compat, 2), r;

  if (n == FDT_ERR_NOTFOUND)
    return fail(c, "no plic (riscv,plic0 / sifive,plic-1.0.0)");
  if (n < 0)
    return fail_fdt(c, "looking for the plic", n);
  if (read_mmio(c, n, "plic", &c->b->plic) < 0)
    return -1;
  c->b->plic.irq = 0;
  if ((r = fdt_getprop_u32(&c->f, n, "riscv,ndev", &c->b->plic_ndev)) < 0)
    return fail_fdt(c, "plic riscv,ndev", r);
  return plic_contexts(c, n);
}

// Every virtio,mmio slot, kept sorted by base address. Past BOARD_MAX_VIRTIO
// the lowest addresses win, so the result does not depend on tree order.
static int parse_virtio(struct ctx *c) {
  static const char *const compat[] = { "virtio,mmio" };
  struct board *b = c->b;
  struct mmio_dev d;
  int n;
  uint32_t i;

  for (n = fdt_next_compatible(&c->f, -1, compat, 1); n >= 0;
       n = fdt_next_compatible(&c->f, n, compat, 1)) {
    if (!fdt_node_enabled(&c->f, n))
      continue;
    if (read_mmio(c, n, "virtio", &d) < 0)
      return -1;
    if (b->nvirtio == BOARD_MAX_VIRTIO) {
      if (d.base >= b->virtio[BOARD_MAX_VIRTIO - 1].base)
        continue;
      b->nvirtio--;           // drop the highest to make room
    }
    for (i = b->nvirtio; i > 0 && b->virtio[i - 1].base > d.base; i--)
      b->virtio[i] = b->virtio[i - 1];
    b->virtio[i] = d;
    b->nvirtio++;
  }
  if (n != FDT_ERR_NOTFOUND)
    return fail_fdt(c, "looking for virtio,mmio", n);
  return 0;
}

// /chosen: bootargs (absent means "") and rng-seed (absent means length 0;
// a longer seed is cut to what struct board holds, more than any key needs).
// A tree without /chosen has neither.
static int parse_chosen(struct ctx *c) {
  struct fdt_prop p;
  const char *s;
  int chosen = fdt_path_offset(&c->f, "/chosen"), r;
  size_t len;

  c->b->bootargs[0] = '\0';
  if (chosen == FDT_ERR_NOTFOUND)
    return 0;
  if (chosen < 0)
    return fail_fdt(c, "/chosen", chosen);
  r = fdt_getprop_str(&c->f, chosen, "bootargs", &s);
  if (r < 0 && r != FDT_ERR_NOTFOUND)
    return fail_fdt(c, "/chosen bootargs", r);
  if (r == 0) {
    len = strlen(s);
    if (len >= BOARD_BOOTARGS_MAX)
      return fail_hex(c, "bootargs too long, bytes:", len);
    memcpy(c->b->bootargs, s, len + 1);
  }
  r = fdt_getprop(&c->f, chosen, "rng-seed", &p);
  if (r < 0 && r != FDT_ERR_NOTFOUND)
    return fail_fdt(c, "/chosen rng-seed", r);
  if (r == 0) {
    c->b->rng_seed_len = p.len < BOARD_RNG_SEED_MAX ? p.len : BOARD_RNG_SEED_MAX;
    memcpy(c->b->rng_seed, p.val, c->b->rng_seed_len);
  }
  return 0;
}

// fdt_init failed: say why, with the offending value where there is one.
static int fail_init(struct ctx *c, const uint8_t *blob, int e) {
  c->err.len = 0;
  msg_str(&c->err, "fdt: ");
  msg_str(&c->err, fdt_strerror(e));
  if (e == FDT_ERR_BADMAGIC) {
    msg_str(&c->err, " ");
    msg_hex(&c->err, fdt_be32(blob));
  } else if (e == FDT_ERR_BADVERSION) {
    // fdt_init only gets this far once totalsize covers the header.
    msg_str(&c->err, " ");
    msg_dec(&c->err, fdt_be32(blob + 20));
    msg_str(&c->err, " (last compatible ");
    msg_dec(&c->err, fdt_be32(blob + 24));
    msg_str(&c->err, "), need 17");
  }
  return -1;
}

int board_parse(const void *dtb, struct board *b, char *err, size_t errlen) {
  struct ctx c;
  int r;

  memset(b, 0, sizeof *b);
  memset(&c, 0, sizeof c);
  c.b = b;
  c.err.buf = err;
  c.err.cap = err ? errlen : 0;
  msg_str(&c.err, "");          // err is "" unless something fails

  if (dtb == NULL) {
    msg_str(&c.err, "fdt: no device tree (null pointer)");
    return -1;
  }
  if (((uintptr_t)dtb & 7) != 0) {
    msg_str(&c.err, "fdt: blob not 8-byte aligned at ");
    msg_hex(&c.err, (uintptr_t)dtb);
    return -1;
  }
  if ((r = fdt_init(&c.f, dtb)) < 0)
    return fail_init(&c, dtb, r);

  if (parse_memory(&c) < 0 || parse_harts(&c) < 0 || parse_uart(&c) < 0 ||
      parse_plic(&c) < 0 || parse_virtio(&c) < 0 || parse_finisher(&c) < 0 ||
      parse_uintc(&c) < 0 ||
      parse_chosen(&c) < 0)
    return -1;
  return 0;
}
