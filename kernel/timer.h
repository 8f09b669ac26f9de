// Timers: the per-hart periodic tick and one-shot coroutine wakeups.
// Time is in timebase ticks (rdtime); board.timebase_hz converts.
#ifndef TIMER_H
#define TIMER_H
#include <stdint.h>
#include "executor.h"

// Halt this hart for about `ticks` timebase ticks, interrupts masked (boot
// waits). Under -icount QEMU runs its harts in turn and switches only when one
// halts or its budget ends: a hart that spins while it waits for another can
// starve it for billions of instructions; one that naps cannot.
void timer_nap(uint64_t ticks);

struct timer_entry { uint64_t when; cid_t cid; };

void timer_init_hart(void);          // program the first event on this hart
int timer_interrupt(void);           // from the trap handler: 1 if a tick passed
// An idle hart stops its periodic tick while it sleeps (interrupts masked,
// just before wfi): it wakes for its own timers' deadlines, an IPI or a
// device, and timer_idle_exit starts the tick again a full period later.
// wake_by: a deadline of the caller's own (parking, kernel/park.c), ~0 if none.
// timer_set_idle_tick(1) keeps the tick running while idle (bootargs
// idle_tick=1), for comparisons.
void timer_idle_enter(uint64_t wake_by);
void timer_idle_exit(void);
void timer_set_idle_tick(int on);
// Wake cid at or after `when`. The entry lives on the calling hart's heap and
// cannot be cancelled: a wake of an exited coroutine is rejected by its stale cid,
// and a live coroutine must tolerate a spurious wake. Returns 0, or -1 if no memory.
int timer_add(uint64_t when, cid_t cid);
int timer_uses_sstc(void);
// A hart that parks (kernel/park.c) gives every entry of its heap to hart
// `to` (of a lower index, which does not park), interrupting it to program
// its compare register for them: an armed deadline fires even if the hart
// that armed it stops. 0, or -1 if to's heap could not grow (nothing moved).
int timer_hand_over(uint32_t to);
// The software interrupt's part (trap.c): program the compare register
// again if entries were handed to this hart.
void timer_take_handed(void);
// Coroutines that still exist and have a timer armed on some hart
// (KSTAT_TIMERS): stale entries (their coroutine has ended) wait for their
// deadline to be dropped, and a coroutine that re-armed early has two, so
// counting entries would make a leak check depend on when it looks.
uint32_t timer_live(void);

// Stackful kernel coroutines only: block until rdtime() >= deadline, or for ms
// milliseconds.
void kco_sleep_until(uint64_t deadline);     // in timebase ticks (rdtime)
void kco_sleep_ms(uint64_t ms);

#endif
