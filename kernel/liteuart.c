// LiteX's UART ("litex,liteuart"), the console of the LiteX SoC in hw/soc.
// Register map: LiteX 2022.12 litex/soc/cores/uart.py (class UART) with 32-bit
// CSRs, one register every 4 bytes (the SoC's csr.json says the same).
//
// Receiving: RXTX shows the oldest byte of the receive FIFO; writing the RX
// bit to EV_PENDING drops it. The RX event is set when the FIFO goes from
// empty to non-empty, so the interrupt handler must drain the FIFO (uart.c
// calls getc until -1): a byte left behind would raise no new interrupt.
#include "uart.h"

#define RXTX       0x00   // read: oldest received byte; write: send a byte
#define TXFULL     0x04
#define RXEMPTY    0x08
#define EV_PENDING 0x10
#define EV_ENABLE  0x14
#define EV_TX      0x1
#define EV_RX      0x2

static inline volatile uint32_t *reg(volatile uint8_t *regs, int off) {
  return (volatile uint32_t *)(regs + off);
}

static void liteuart_init(volatile uint8_t *regs) {
  *reg(regs, EV_ENABLE) = 0;
  *reg(regs, EV_PENDING) = EV_TX | EV_RX;   // forget anything from before boot
  *reg(regs, EV_ENABLE) = EV_RX;
}

static void liteuart_putc(volatile uint8_t *regs, int c) {
  while (*reg(regs, TXFULL))
    ;
  *reg(regs, RXTX) = (uint8_t)c;
}

static int liteuart_getc(volatile uint8_t *regs) {
  if (*reg(regs, RXEMPTY))
    return -1;
  int c = (int)(*reg(regs, RXTX) & 0xff);
  *reg(regs, EV_PENDING) = EV_RX;           // next byte (and clears the event)
  return c;
}

const struct uart_regs liteuart_regs = { liteuart_init, liteuart_putc, liteuart_getc };
