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
void hart_ipi(uint32_t index);
// bootargs ipi=now: send every IPI at once, lock or no lock (for comparison).
void hart_ipi_at_once(int on);

static inline struct hart *this_hart(void) {
  struct hart *h;
  __asm__ volatile("mv %0, tp" : "=r"(h));
  return h;
}

#endif
