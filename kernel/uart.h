// The UART console (a 16550 or LiteX's UART, as the device tree says). Output is synchronous (kprintf must work anywhere);
// input is interrupt-driven: the interrupt handler moves received bytes into a
// ring and wakes the coroutines waiting for console input.
#ifndef UART_H
#define UART_H
#include <stdint.h>
void uart_init(void);            // after kvm_enable_hart: registers are mapped
void uart_putc(int c);
void uart_interrupt(void);
// Blocking read of one byte (stackful coroutines only).
int console_getc(void);
int console_trygetc(int *c);
// Like console_getc, but gives up and returns -1 once *killed becomes non-zero
// (the killer wakes the waiting coroutine).
int console_getc_killable(volatile int *killed);     // 1 and a byte if one is buffered, else 0
uint64_t uart_rx_count(void);    // bytes received, for `stats`
uint64_t uart_rx_dropped(void);  // bytes lost because the ring was full

// A UART's register set, behind the console code of uart.c. getc returns the
// next received byte, or -1 when there is none; interrupts are raised while
// received bytes wait (init enables that).
struct uart_regs {
  void (*init)(volatile uint8_t *regs);
  void (*putc)(volatile uint8_t *regs, int c);
  int (*getc)(volatile uint8_t *regs);
};
extern const struct uart_regs liteuart_regs;   // liteuart.c
#endif
