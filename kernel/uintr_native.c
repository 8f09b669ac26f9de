// The native user-interrupt backend (see uintr.h and docs/NEXT.md), for harts
// that implement the N extension. The hardware does what uintr_emul.c
// emulates: u-CSR accesses and `uret` run in U-mode without a trap, and a
// delegated USIP enters the thread's handler by itself (uepc, ucause, UPIE,
// pc <- utvec) as soon as the thread is in U-mode with UIE and USIE set.
// The kernel's part is per hart and per switch:
//   - each hart delegates the user software interrupt to U (sideleg = USIP)
//     and no exception (sedeleg = 0); the firmware must have delegated USIP to
//     S in mideleg (our QEMU patch hardwires mideleg's U bits for that);
//   - entering U, a thread's saved u-CSRs (struct nm_hart, the same record the
//     emulation keeps) are loaded, with UIE/UPIE into sstatus, and a USIP that
//     was posted while it was away is handed to the hardware (uip);
//   - at each trap out of U, a USIP the handler has not taken yet goes back
//     into the record (where uwait and the kernel look for it);
//   - the u-CSRs stay in the hart across traps that return to the same thread
//     (most do: a system call that completes, an interrupt), and are saved
//     only when the thread leaves the hart (uintr_leave: it blocks, is
//     preempted, stops, or its switcher yields and may resume elsewhere), so
//     a post is never lost or given to the next thread on this hart. Loading
//     and saving on every trap cost about 70 instructions per trap.
// Assemblers no longer know the u-CSR names (N was dropped from the spec), so
// the CSRs are named by number: nmodel.h's NM_CSR_*, expanded before the asm
// string is made.
#include "uintr_backend.h"
#include "proc.h"
#include "hart.h"
#include "riscv.h"
#include "uintc.h"
#include "printf.h"

#define STR_(x) #x
#define STR(x) STR_(x)       // expands num first: the asm sees the number
#define UCSR_READ(num) ({ uint64_t v_; __asm__ volatile("csrr %0, " STR(num) : "=r"(v_)); v_; })
#define UCSR_WRITE(num, val) __asm__ volatile("csrw " STR(num) ", %0" :: "r"((uint64_t)(val)) : "memory")
#define UCSR_SET(num, bits) __asm__ volatile("csrs " STR(num) ", %0" :: "r"((uint64_t)(bits)) : "memory")
#define UCSR_CLEAR(num, bits) __asm__ volatile("csrc " STR(num) ", %0" :: "r"((uint64_t)(bits)) : "memory")

#define USTATUS_BITS (NM_USTATUS_UIE | NM_USTATUS_UPIE)   // ustatus lives in sstatus

void uintr_native_init_hart(void) {
  UCSR_WRITE(NM_CSR_SEDELEG, 0);
  UCSR_WRITE(NM_CSR_SIDELEG, NM_USIP);
  UCSR_CLEAR(NM_CSR_UIP, NM_USIP);
}

// A USIP posted while t was in the kernel (uintr_post on any hart; the
// exchange takes it: a later post sets it again and interrupts this hart).
static inline void hand_over_posted(struct nm_hart *n) {
  if (__atomic_exchange_n(&n->uip, 0, __ATOMIC_SEQ_CST) & NM_USIP)
    UCSR_SET(NM_CSR_UIP, NM_USIP);
}

void uintr_native_enter(struct thread *t) {
  struct nm_hart *n = &t->ui.n;
  int here = (int)this_hart()->index + 1;
  if (t->ui.loaded) {                  // still here since the last trap
    // A switcher that moved to another hart without uintr_leave would run t
    // with another hart's u-CSRs: a kernel bug, reported rather than run.
    if (t->ui.loaded != here)
      kpanic("uintr: thread %d's u-CSRs are on hart %d, not %d", t->tid, t->ui.loaded - 1, here - 1);
    hand_over_posted(n);
    return;
  }
  t->ui.loaded = here;
  UCSR_WRITE(NM_CSR_UTVEC, n->utvec);
  UCSR_WRITE(NM_CSR_USCRATCH, n->uscratch);
  UCSR_WRITE(NM_CSR_UEPC, n->uepc);
  UCSR_WRITE(NM_CSR_UCAUSE, n->ucause);
  UCSR_WRITE(NM_CSR_UTVAL, n->utval);
  UCSR_WRITE(NM_CSR_UIE, n->uie);
  csr_clear(sstatus, USTATUS_BITS);
  csr_set(sstatus, n->ustatus & USTATUS_BITS);
  hand_over_posted(n);
  // Its controller entry now names this hart: pending bits raise USIP here.
  if (t->ui.uintc_entry1)
    uintc_activate(t->ui.uintc_entry1 - 1, this_hart()->hartid);
}

// A USIP raised but not taken (the handler was disabled, or the trap came
// first) goes back into the record.
static inline void take_back_pending(struct nm_hart *n) {
  if (UCSR_READ(NM_CSR_UIP) & NM_USIP) {
    UCSR_CLEAR(NM_CSR_UIP, NM_USIP);
    nm_raise(n, NM_USIP);
  }
}

void uintr_native_trap(struct thread *t) { take_back_pending(&t->ui.n); }

void uintr_native_leave(struct thread *t) {
  struct nm_hart *n = &t->ui.n;
  if (!t->ui.loaded)
    return;
  t->ui.loaded = 0;
  if (t->ui.uintc_entry1)              // its bits wait in the entry meanwhile
    uintc_deactivate(t->ui.uintc_entry1 - 1);
  n->utvec = UCSR_READ(NM_CSR_UTVEC);
  n->uscratch = UCSR_READ(NM_CSR_USCRATCH);
  n->uepc = UCSR_READ(NM_CSR_UEPC);
  n->ucause = UCSR_READ(NM_CSR_UCAUSE);
  n->utval = UCSR_READ(NM_CSR_UTVAL);
  n->uie = UCSR_READ(NM_CSR_UIE);
  n->ustatus = csr_read(sstatus) & USTATUS_BITS;
  take_back_pending(n);                // (after the entry's detach: nothing comes later)
}
