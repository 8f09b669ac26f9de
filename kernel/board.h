// The board as the device tree describes it. Nothing about the machine is
// hard-coded elsewhere in the kernel: memory, harts, timebase, UART, PLIC and the
// virtio-mmio slots all come from here, filled by board_parse() at boot.
#ifndef BOARD_H
#define BOARD_H
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
#include "param.h"   // BOARD_MAX_HARTS

#define BOARD_MAX_VIRTIO 16
#define BOARD_BOOTARGS_MAX 256
#define BOARD_RNG_SEED_MAX 64

struct mmio_dev {
  uint64_t base, size;
  uint32_t irq;                 // PLIC source number, 0 if none
};

// Which register set the console UART has (chosen by its compatible string).
enum uart_type {
  UART_NS16550,                 // "ns16550a" / "ns16550": QEMU virt
  UART_LITEX,                   // "litex,liteuart": the LiteX SoC of hw/soc
};

struct board {
  uint64_t mem_base, mem_size;  // the first /memory node's first range
  uint32_t nharts;              // usable harts (status okay, mmu present), <= BOARD_MAX_HARTS
  uint32_t nharts_found;        // harts in the tree before the cap was applied
  uint32_t hartid[BOARD_MAX_HARTS];
  uint64_t timebase_hz;         // /cpus timebase-frequency
  bool has_sstc;                // every usable hart's riscv,isa names the Sstc extension
  bool has_n;                   // ... and the N extension (user-level interrupts)
  struct mmio_dev uart;         // first "ns16550a" or "litex,liteuart" node
  enum uart_type uart_type;     // which of the two it is
  struct mmio_dev plic;         // "riscv,plic0" / "sifive,plic-1.0.0"; irq unused
  uint32_t plic_ndev;           // riscv,ndev
  int32_t plic_sctx[BOARD_MAX_HARTS]; // PLIC context of each hart's S-mode external irq, -1 if none
  uint32_t nvirtio;
  struct mmio_dev virtio[BOARD_MAX_VIRTIO]; // "virtio,mmio" slots, in ascending address order
  struct mmio_dev uintc;        // "coral,uintc" (our QEMU's user-interrupt controller); size 0 if absent
  uint32_t uintc_entries;       // its receiver entries ("coral,entries")
  struct mmio_dev finisher;     // "sifive,test0" (QEMU's exit-status device); size 0 if absent
  char bootargs[BOARD_BOOTARGS_MAX];        // /chosen bootargs ("" if absent)
  // /chosen rng-seed: random bytes from whoever wrote the tree (QEMU's virt
  // board puts 32 there, from the host's getrandom), the kernel's only source
  // of secrets (net/isn.c). Its first BOARD_RNG_SEED_MAX bytes; length 0 if absent.
  uint8_t rng_seed[BOARD_RNG_SEED_MAX];
  uint32_t rng_seed_len;
};

// Parse the flattened device tree at dtb. Returns 0 on success; on failure
// returns -1 and writes a one-line reason into err (always NUL-terminated).
// Never reads outside [dtb, dtb + totalsize) and rejects a malformed blob.
int board_parse(const void *dtb, struct board *b, char *err, size_t errlen);

#endif
