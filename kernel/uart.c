// The console UART: received bytes go into a ring that console readers wait
// on; output is synchronous. The register set is the board's (board.uart_type,
// from the device tree): the 16550A below (register map from the 16550 data
// sheet), or LiteX's UART (liteuart.c). Base address and interrupt number come
// from the device tree too.
#include "uart.h"
#include "hart.h"
#include "kco.h"
#include "plic.h"
#include "printf.h"
#include "stats.h"
#include "status.h"
#include "vm.h"
#include "waitq.h"

#define RHR 0   // receive holding (read)
#define THR 0   // transmit holding (write)
#define IER 1   // interrupt enable
#define FCR 2   // FIFO control (write)
#define LCR 3   // line control
#define LSR 5   // line status
#define IER_RX 0x01
#define FCR_ENABLE_CLEAR 0x07
#define LCR_8N1 0x03
#define LSR_DATA_READY 0x01
#define LSR_THR_EMPTY 0x20

#define RX_RING 256

static volatile uint8_t *regs;
static const struct uart_regs *hw;
static struct spinlock rx_lock = SPINLOCK_INIT("uart-rx");
static uint8_t rx_buf[RX_RING];
static uint32_t rx_head, rx_tail;       // head: next to read; tail: next to fill
static uint64_t rx_count, rx_dropped;
static struct waitq rx_wait;

static void ns16550_putc(volatile uint8_t *r, int c) {
  while (!(r[LSR] & LSR_THR_EMPTY))
    ;
  r[THR] = (uint8_t)c;
}

static void ns16550_init(volatile uint8_t *r) {
  r[IER] = 0;
  r[LCR] = LCR_8N1;
  r[FCR] = FCR_ENABLE_CLEAR;
  r[IER] = IER_RX;
}

static int ns16550_getc(volatile uint8_t *r) {
  return (r[LSR] & LSR_DATA_READY) ? r[RHR] : -1;
}

static const struct uart_regs ns16550 = { ns16550_init, ns16550_putc, ns16550_getc };

void uart_putc(int c) { hw->putc(regs, c); }

void uart_init(void) {
  regs = (volatile uint8_t *)mmio(board.uart.base);
  hw = board.uart_type == UART_LITEX ? &liteuart_regs : &ns16550;
  waitq_init(&rx_wait, "console");
  hw->init(regs);
  plic_enable(board.uart.irq, 0);      // console interrupts go to the boot hart
  console_set_output(uart_putc);
}

void uart_interrupt(void) {
  int got = 0, status = 0;
  spin_lock(&rx_lock);
  for (int got_c; (got_c = hw->getc(regs)) >= 0;) {
    uint8_t c = (uint8_t)got_c;
    rx_count++;
    if (c == STATUS_KEY) {       // never a program's input (kernel/status.c)
      status = 1;
      continue;
    }
    if (rx_tail - rx_head < RX_RING)
      rx_buf[rx_tail++ % RX_RING] = c;
    else
      rx_dropped++;
    got = 1;
  }
  spin_unlock(&rx_lock);
  if (got)
    waitq_wake_all(&rx_wait);
  if (status)
    status_key();
}

static int rx_pop(int *c) {
  spin_lock(&rx_lock);
  int ok = rx_head != rx_tail;
  if (ok)
    *c = rx_buf[rx_head++ % RX_RING];
  spin_unlock(&rx_lock);
  return ok;
}

int console_trygetc(int *c) { return rx_pop(c); }

int console_getc(void) { return console_getc_killable(0); }

int console_getc_killable(volatile int *killed) {
  int c = 0, got = 0;
  KCO_WAIT_UNTIL(&rx_wait, (got = rx_pop(&c)) || (killed && *killed));
  return got ? c : -1;
}

uint64_t uart_rx_count(void) { return rx_count; }
uint64_t uart_rx_dropped(void) { return rx_dropped; }

static void print_stats(stats_out_fn *out) {
  out("uart: %lu bytes received, %lu dropped\n", uart_rx_count(), uart_rx_dropped());
}
STATS_SOURCE(30, "console", print_stats);
