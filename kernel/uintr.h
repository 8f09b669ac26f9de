// User interrupts: the RISC-V N extension (docs/NEXT.md), as one kernel
// interface with two backends, chosen at boot from the device tree:
//
//   emulated (kernel/uintr_emul.c; stock QEMU, or any hart without N): each
//     user thread has shadow u-CSRs; u-CSR accesses and `uret` trap as illegal
//     instructions and are emulated; a pending interrupt is injected when the
//     thread returns to U-mode.
//   native (kernel/uintr_native.c; every hart's riscv,isa names N, e.g. our
//     patched QEMU with -cpu rv64,n=on): sideleg delegates the user software
//     interrupt to U; the real u-CSRs are loaded when a thread enters U-mode and
//     saved when it leaves, and a pending interrupt is handed to the hardware
//     (uip.USIP), which enters the handler itself.
//
// Both keep each thread's N state in one struct nm_hart (kernel/nmodel.h, the
// model the RTL is tested against), and post the same way: set the thread's
// USIP bit (from any hart) and, if the thread is in U-mode on another hart,
// interrupt that hart so the delivery happens at once. What a thread sees is
// the same on both; the same user binaries run on both.
#ifndef UINTR_H
#define UINTR_H
#include <stdint.h>
#include "nmodel.h"

struct thread;

// One user thread's N state and two counters.
struct uintr_state {
  struct nm_hart n;            // n.uip (USIP) is set by uintr_post from any hart
  uint64_t posted;             // how many times an interrupt was raised
  uint64_t delivered;          // handler entries the kernel made (emulated only)
  uint64_t posted_at_entry;    // `posted` when the kernel last entered the handler (emulated)
  uint32_t in_handler;         // handler entries the kernel made not yet left (emulated):
                               // SYS_uintr_ret with none is refused (uintr_emul_ecall_ret)
  uint64_t post_instret;       // instret of the posting hart at the last post
  uint64_t post_cost;          // instructions that post took on its hart (benchmarks)
  int uintc_entry1;            // its entry on the user-interrupt controller + 1; 0: none
  int loaded;                  // native: 1 + the hart whose u-CSRs are t's (uintr_deliver
                               // loaded them, uintr_leave not yet run); 0: in this record
};

// At boot, before any hart calls uintr_init_hart: native if every hart has N.
void uintr_select(int native);
// Each hart, once (native: sideleg, sedeleg).
void uintr_init_hart(void);
const char *uintr_backend_name(void);
int uintr_is_native(void);

void uintr_init(struct thread *t);
// The thread's receive page on the user-interrupt controller, mapped into its
// process (allocated on first use): its user address, or 0 where there is no
// controller (or no free entry: posts then go through uip and an IPI).
uint64_t uintr_recv_page(struct thread *t);
// The process is ending: give its threads' controller entries back.
void uintr_release(struct thread *t);
// SYS_uintr_ret (abi.h): clear t's USIP unless an interrupt was posted since
// its handler was entered, then uret, then restore a0/a7 from t's stack. 0, or -1 if t is not in its handler's state
// (uret illegal) or its stack is unreadable: the caller kills the process.
// Emulated backend only (-1 on native harts, where uret does not trap).
int uintr_ecall_ret(struct thread *t);
// Raise a user software interrupt for thread t (from any hart, any kernel coroutine).
void uintr_post(struct thread *t);
int uintr_pending(struct thread *t);
// A thread's N state meets the hart in three steps (native; the emulation
// needs only the first). They are on every trap's path, so they are inline
// here and call a backend (uintr_backend.h) only when it has work to do.
extern int uintr_native_harts;   // set once at boot (uintr_select); read-only after
void uintr_native_enter(struct thread *t);
void uintr_native_trap(struct thread *t);
void uintr_native_leave(struct thread *t);
void uintr_emul_deliver(struct thread *t);

// Just before t returns to U-mode (interrupts off): make its N state current
// (emulated: enter its handler if an interrupt is pending and enabled;
// native: load the u-CSRs unless they still are in this hart, and hand over
// a pending USIP). ui is &t->ui (struct thread is not complete here).
static inline void uintr_deliver(struct thread *t, const struct uintr_state *ui) {
  if (uintr_native_harts)
    uintr_native_enter(t);
  else if (__atomic_load_n(&ui->n.uip, __ATOMIC_RELAXED))
    uintr_emul_deliver(t);       // (nothing pending, the common case: no call)
}
// Just after each trap out of U-mode (interrupts off): native: a USIP the
// handler has not taken goes back into t's record, where the kernel looks for
// it. The u-CSRs stay in the hart: most traps return to the same thread.
static inline void uintr_trap(struct thread *t) {
  if (uintr_native_harts)
    uintr_native_trap(t);
}
// Before t can run anywhere else or another thread on this hart (it blocks,
// is preempted, stops, or its switcher yields): native: save the u-CSRs and
// detach its controller entry from this hart. Idempotent. Emulated: nothing.
static inline void uintr_leave(struct thread *t) {
  if (uintr_native_harts)
    uintr_native_leave(t);
}
// An illegal-instruction trap from t: emulate it if it is a u-CSR access or uret.
// Returns 1 if emulated (pc advanced), 0 if the process really is at fault
// (always 0 on native harts, where those instructions do not trap).
int uintr_illegal(struct thread *t, uint32_t insn);

#endif
