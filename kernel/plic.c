// PLIC driver (RISC-V PLIC specification). Register offsets are the spec's;
// the base address and each hart's S-mode context come from the device tree.
#include "plic.h"
#include "hart.h"
#include "vm.h"

#define PRIORITY(irq) (4 * (irq))
#define ENABLE(ctx) (0x2000 + 0x80 * (ctx))
#define THRESHOLD(ctx) (0x200000 + 0x1000 * (ctx))
#define CLAIM(ctx) (0x200004 + 0x1000 * (ctx))

static volatile uint32_t *reg(uint64_t off) {
  return (volatile uint32_t *)((volatile char *)mmio(board.plic.base) + off);
}

void plic_init(void) {
  // Every source gets priority 1; a source is then delivered wherever enabled.
  for (uint32_t irq = 1; irq <= board.plic_ndev; irq++)
    *reg(PRIORITY(irq)) = 1;
}

void plic_init_hart(void) {
  struct hart *h = this_hart();
  if (h->plic_ctx < 0)
    return;
  *reg(THRESHOLD(h->plic_ctx)) = 0;
}

void plic_enable(uint32_t irq, uint32_t hart_index) {
  int ctx = harts[hart_index].plic_ctx;
  if (ctx < 0 || irq == 0 || irq > board.plic_ndev)
    return;
  *reg(ENABLE(ctx) + 4 * (irq / 32)) |= 1u << (irq % 32);
}

uint32_t plic_claim(void) {
  int ctx = this_hart()->plic_ctx;
  return ctx < 0 ? 0 : *reg(CLAIM(ctx));
}

void plic_complete(uint32_t irq) {
  *reg(CLAIM(this_hart()->plic_ctx)) = irq;
}
