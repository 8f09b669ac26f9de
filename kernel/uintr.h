// User interrupts: the RISC-V N extension (docs/NEXT.md), as one kernel interface with
// interchangeable backends.
//
//   emulated (kernel/uintr_emul.c, stock QEMU): each user thread has shadow
//     u-CSRs; u-CSR accesses and `uret` trap as illegal instructions and are
//     emulated; a pending interrupt is injected when the thread returns to
//     U-mode; a thread running on another hart is sent an IPI so that happens
//     promptly.
//   native (for a hart that implements N; none exists here yet, so it is not
//     built) would set sideleg, swap the real u-CSRs per thread and set uip.USIP.
//
// Callers use only these functions, so a second backend can go behind them;
// today the emulated one is the only one built (uintr_backend_name).
#ifndef UINTR_H
#define UINTR_H
#include <stdint.h>
#include "nmodel.h"

struct thread;

// Shadow u-CSR state of one user thread: the N extension's architectural
// state as kernel/nmodel.h defines it (the same model the RTL is tested
// against), plus two counters.
struct uintr_state {
  struct nm_hart n;            // n.uip (USIP) is set by uintr_post from any hart
  uint64_t posted;             // how many times an interrupt was raised
  uint64_t delivered;          // how many times the handler was entered
};

void uintr_init(struct thread *t);
// Raise a user software interrupt for thread t (from any hart, any kernel coroutine).
void uintr_post(struct thread *t);
// Before returning t to U-mode: enter its handler if one is pending and enabled.
void uintr_deliver(struct thread *t);
// An illegal-instruction trap from t: emulate it if it is a u-CSR access or uret.
// Returns 1 if emulated (pc advanced), 0 if the process really is at fault.
int uintr_illegal(struct thread *t, uint32_t insn);
int uintr_pending(struct thread *t);
const char *uintr_backend_name(void);

#endif
