// The kernel's environment for CES mutexes (kces.h, vdso/ces.h).
#include "kces.h"
#include "kco.h"
#include "hart.h"
#include "riscv.h"

// A requester's continuation goes to another hart than the combiner's, which
// goes on combining (CES: the sections stay here, the continuations spread).
int ces_wake_elsewhere(cid_t cid) { return kco_wake_elsewhere(cid); }

// A combiner waits here only while a coroutine on another hart is between its
// swap into the queue and its link, a few instructions (an interrupt at most
// delays it; interrupt handlers never take a CES mutex), so a plain spin.
static void kces_relax(uint32_t spins) {
  (void)spins;
  __asm__ volatile("nop");
}

static uint32_t kces_hart(void) { return this_hart()->index; }

// A spinner that has waited long (m->halt_after polls) halts its hart until
// the hand-over's kick: on an emulator whose host has fewer processors than
// it has busy threads, a vCPU that spins takes the processor from the one
// whose vCPU runs the sections it waits for (docs/ARCHITECTURE.md, "The
// network lock"). Only where its interrupts are on and it holds no spinlock:
// a hart halted with a spinlock held would stall that lock's waiters too, and
// one that cannot take interrupts would never see its tick.
static int kces_halt(volatile uint32_t *state) {
  struct hart *h = this_hart();
  if (h->noff || !intr_get())
    return 0;
  intr_off();
  // The compare-and-swap with interrupts masked: from here a kick stays
  // pending for wfi, which returns on a pending interrupt even with SIE clear.
  uint32_t s = CES_WAITING;
  if (!__atomic_compare_exchange_n(state, &s, CES_HALTED, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    intr_on();
    return 0;
  }
  h->ces_halts++;
  while (__atomic_load_n(state, __ATOMIC_ACQUIRE) == CES_HALTED) {
    wfi();
    intr_on();                   // take what woke it (a tick, another IPI)
    intr_off();
  }
  intr_on();
  return 1;
}

static void kces_kick(uint32_t hart) { hart_ipi(hart, IPI_CES_KICK); }

const struct ces_env kces_env = {
  .current = kco_current,
  .block = kco_block,
  .wake = kco_wake,
  .wake_elsewhere = ces_wake_elsewhere,
  .relax = kces_relax,
  .hart = kces_hart,
  .halt = kces_halt,
  .kick = kces_kick,
};
