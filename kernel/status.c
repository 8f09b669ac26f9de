// The status key: Ctrl-T on the console prints every counter and the
// listings (processes with their threads' user-interrupt and async-call
// state, TCP connections) whoever owns the console: init and the shell, a
// user program under test, or the monitor. BSD's terminals give the same key
// a one-line status; here it is the whole picture, for a system that seems
// stuck while its console still answers (a lost wake leaves every counter
// quiet; the listings say who waits for what).
//
// The key is taken in the UART's interrupt (kernel/uart.c), which only sets a
// flag and wakes a stackless kernel coroutine: the printers take locks (the
// process table's, the network lock) that the interrupted code may hold.
#include "kco.h"
#include "monitor.h"
#include "printf.h"
#include "status.h"
#include "waitq.h"

static struct waitq status_wait;
static struct waiter status_waiter;
static int status_due;          // atomic: a key press not printed yet

void status_key(void) {
  __atomic_store_n(&status_due, 1, __ATOMIC_SEQ_CST);
  waitq_wake_all(&status_wait);
}

// Registered before it looks, as every waiter (kernel/waitq.h): a key press
// after the look wakes it again.
static int status_poll(void *arg) {
  (void)arg;
  for (;;) {
    waitq_add(&status_wait, &status_waiter, kco_current());
    if (!__atomic_exchange_n(&status_due, 0, __ATOMIC_SEQ_CST))
      return CO_PENDING;
    waitq_remove(&status_wait, &status_waiter);
    kprintf("\nstatus (Ctrl-T):\n");
    monitor_status();
    kprintf("status: end\n");
  }
}

void status_start(void) {
  waitq_init(&status_wait, "status-key");
  // Priority 0, the kernel's best: the key is pressed when something seems
  // stuck, often with user work at the best priority a process may have (1)
  // keeping every hart busy, which would leave the monitor's priority waiting.
  if (kco_spawn(status_poll, 0, 0) < 0)
    kpanic("status: cannot spawn");
}
