// Platform-level interrupt controller: routes device interrupts to harts.
#ifndef PLIC_H
#define PLIC_H
#include <stdint.h>
void plic_init(void);                       // boot hart: source priorities
void plic_init_hart(void);                  // each hart: threshold 0
void plic_enable(uint32_t irq, uint32_t hart_index);   // route irq to one hart
uint32_t plic_claim(void);                  // this hart; 0 = nothing pending
void plic_complete(uint32_t irq);
#endif
