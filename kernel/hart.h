// Per-hart state. tp holds a pointer to this hart's struct hart for as long as
// the hart runs kernel code, so this_hart() is one instruction.
//
// Rule: a stackful coroutine may resume on another hart after it blocks, so never
// keep a struct hart pointer across a blocking call; call this_hart() again.
#ifndef HART_H
#define HART_H
#include <stdint.h>
#include "board.h"
#include "spinlock.h"
#include "param.h"

struct co;
struct timer_entry;

// Why an IPI was asked for (counted in the target's ipis_asked).
enum ipi_reason {
  // Ready kernel work for an idle hart (sched.c, kick_lane), by what made it:
  IPI_KICK_SPAWN,  //   a spawn (into the target's lane, or another busy one's)
  IPI_KICK_WAKE,   //   a wake that went home: the waker's lane had work (kco_wake_home)
  IPI_KICK_TICK,   //   a busy hart's tick, with work queued behind it (sched_tick)
  IPI_KICK_HAND,   //   a hand-over to another hart (kco_wake_elsewhere: CES)
  IPI_KICK_OTHER,  //   sched_kick's callers
  IPI_UINTR,       // a user interrupt for a thread running there (uintr.c)
  IPI_ADDRSPACE,   // let go of a dying address space's root (uvm.c)
  IPI_UNPARK,      // a parked hart is wanted again (park.c)
  IPI_TIMERS,      // a parking hart moved its timers here (timer.c)
  NIPI_REASONS,
};

struct hart {
  uint32_t index;               // 0 .. nharts-1, in device-tree order; 0 boots
  uint32_t hartid;              // the hart's id in the device tree / SBI
  struct co *cur;               // coroutine this hart is running, NULL in the loop
  int noff;                     // depth of spin_lock interrupt masking
  int intena;                   // nonzero: interrupts were on before the first spin_lock
  uint64_t ipi_pending;         // harts (by index) to interrupt at the last spin_unlock
  int online;
  int plic_ctx;                 // PLIC context for S-mode external interrupts
  // timers (kernel/timer.c)
  struct spinlock timer_lock;
  struct timer_entry *timers;   // min-heap by deadline
  uint32_t ntimers, timer_cap;
  uint64_t timers_dropped;      // stale entries dropped before the heap would grow
  uint32_t timers_moved;        // another hart gave its entries to this heap (timer_hand_over)
  uint64_t next_tick;
  // counters shown by the console's `stats` and read by tests
  uint64_t ticks, irq_timer, irq_soft, irq_ext, idle_wfi, dispatches;
  // Timer interrupts taken more than 1 ms after the deadline they were
  // programmed for, and the latest: interrupts held masked that long, or, on
  // an emulator, a vCPU (or the host thread that raises its timer) that did
  // not run. A tail that grows with these is not the scheduler's.
  uint64_t timer_late, timer_late_max_us;
  int idling;                   // in idle_wait: an interrupt here finds nothing else to do
  int tick_unseen;              // a tick came since a switcher here last looked (kernel/switcher.c)
  uint64_t wakes_here;          // kco_wake's wake-affine moves to this hart's lane
  uint64_t idle_wfi_at_tick;    // idle_wfi at the last tick (sched_tick)
  // Time (timebase ticks) from each wfi to the hart's first instruction after
  // it: the guest's own idle time. On an emulator it also holds the wake-up's
  // wait for a host core, but not time the vCPU lost while running (set it
  // against the host's count of the vCPU thread's CPU time: bench-light.sh).
  uint64_t idle_halted;
  // IPIs other harts asked for to this one, by reason (enum ipi_reason): the
  // console's `stats` shows what keeps waking a hart that would sleep.
  // Counted when asked, so two asked within one lock section count twice
  // and arrive as one.
  uint64_t ipis_asked[NIPI_REASONS];
  // parking (kernel/park.c)
  uint32_t unpark;              // set by whoever starts this parked hart again
  uint64_t park_dispatches;     // dispatches when idle_since was set
  uint64_t idle_since;          // (timebase) no dispatch here since then
  uint64_t parks, unparks, parked_ticks;
  uint64_t parked_at;           // (timebase) when it parked, 0 while it runs
  // address space (kernel/uvm.h, uvm_activate)
  uint64_t *satp_root;          // the root table in satp: the kernel's, or a process's kept on
  uint64_t satp_loads;          // satp writes (each empties the TLB, and QEMU's software TLB)
  uint64_t user_copy_seq;       // odd while this hart copies to or from user memory (uvm.h)
};

extern struct hart harts[BOARD_MAX_HARTS];
extern uint32_t nharts_online;
extern struct board board;

// Interrupt hart `index` (a software interrupt, through SBI). With a spinlock
// held on this hart, the interrupt is sent when the last one is released
// (kernel/spinlock.c says why).
void hart_ipi(uint32_t index, enum ipi_reason why);
// bootargs ipi=now: send every IPI at once, lock or no lock (for comparison).
void hart_ipi_at_once(int on);

static inline struct hart *this_hart(void) {
  struct hart *h;
  __asm__ volatile("mv %0, tp" : "=r"(h));
  return h;
}

#endif
