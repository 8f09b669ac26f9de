// Kernel coroutines: the kernel's use of the shared executor (vdso/executor.h).
//
// Every hart runs sched_loop(): fetch the best ready coroutine, poll it (or, for
// a stackful one, switch onto its stack), repeat; wait for an interrupt when
// nothing is ready. Kernel coroutines are cooperative. Interrupt handlers only
// acknowledge their device and wake coroutines.
//
//   stackless: kco_spawn(poll, arg, prio). poll returns CO_PENDING / CO_YIELD /
//              CO_DONE; to wait for something, register kco_current() with a wait
//              queue or timer first, then return CO_PENDING.
//   stackful:  kco_spawn_stackful(fn, arg, prio, flags). fn may call kco_yield,
//              kco_block, kco_sleep_ms (timer.h) and KCO_WAIT_UNTIL at any call
//              depth.
#ifndef KCO_H
#define KCO_H
#include <stdint.h>
#include "executor.h"
#include "stackful.h"
#include "hart.h"

#define KCO_STACK_PAGES 4          // 16 KiB per stackful kernel coroutine
#define KCO_FULLSAVE 1             // flag: use the full-save switch instead of CACS

extern struct executor kexec;

void sched_init(void);                       // boot hart, before any spawn
__attribute__((noreturn)) void sched_loop(void);

// A new coroutine is queued in the lane of the hart that spawns it; the _on
// forms queue it in hart's lane instead (an idle hart may still steal it).
int64_t kco_spawn(co_poll_fn poll, void *arg, uint32_t prio);
int64_t kco_spawn_stackful(void (*fn)(void *), void *arg, uint32_t prio, int flags);
int64_t kco_spawn_on(uint32_t hart, co_poll_fn poll, void *arg, uint32_t prio);
int64_t kco_spawn_stackful_on(uint32_t hart, void (*fn)(void *), void *arg, uint32_t prio,
                              int flags);
cid_t kco_current(void);
// Wake a blocked coroutine (also safe from interrupt handlers). With several
// harts: when this hart has nothing else ready, into this hart's lane, with
// no other hart woken (wake-affine: this hart runs it next); otherwise as
// kco_wake_home.
int kco_wake(cid_t cid);
// ... in its home lane, kicking an idle hart to run it there or steal it.
int kco_wake_home(cid_t cid);
// Wake a blocked coroutine on another hart than this one (an idle one if any):
// it is queued in that hart's lane, which becomes its home.
int kco_wake_elsewhere(cid_t cid);
int kco_reprio(cid_t cid, uint32_t prio);
// Change the running coroutine's own priority: it is running, not queued, so
// this is one store (no executor lock); it takes effect when it is next queued.
// Unless it is its lane's resident (executor.h, struct co_queue: a rotation
// took it and left it linked in its priority's ring, which the executor finds
// by its priority): then exec_reprio takes it out of that ring first.
// Inline: the switcher does it on every trap.
static inline void kco_reprio_self(uint32_t prio) {
  struct co *c = this_hart()->cur;
  if (c->prio != prio && prio < NPRIO_DEFAULT) {
    if (__builtin_expect(c->flags & CO_RESIDENT, 0))
      exec_reprio(&kexec, co_cid_inline(c), prio);
    else
      __atomic_store_n(&c->prio, (uint8_t)prio, __ATOMIC_RELAXED);
  }
}

// Stackful coroutines only.
void kco_yield(void);
void kco_block(void);                        // returns once woken (maybe spuriously)
// Run the ready stackless coroutines of priority max_prio or better here, on
// the calling stackful coroutine's stack, as long as the best ready one of
// this hart's lane is such (exec_take_stackless). Then 1 if nothing of
// max_prio or better is ready, else 0: the caller yields for the rest. A
// switch into the loop and back, and two loop steps, cost about 250
// instructions: a switcher that yields to an async call's coroutine runs it
// here instead.
int kco_run_stackless(uint32_t max_prio);
// (kco_sleep_until and kco_sleep_ms are the timers' part: kernel/timer.h.)

// Kick an idle hart so it looks at the ready queues again.
void sched_kick(void);
// A busy hart's periodic tick (the timer interrupt): if work waits in its
// lane behind what it runs and a hart sleeps, wake one to steal it.
// Only when this hart has not slept since the last tick (kernel/sched.c).
void sched_tick(void);
// bootargs tick_kick=any: kick whenever work waits at a tick, as before (for
// comparison).
void sched_tick_kicks_any(int on);
// How long an idle hart polls for work before it halts in wfi (microseconds;
// 0, the default: at once). Bootargs idle_poll_us=N.
void sched_set_idle_poll(uint32_t us);

// kmalloc bytes and objects held by structures that grow once and stay (the
// executor's slot table, the timer heaps): not leaks (kernel/sched.c).
void kernel_caches(uint64_t *bytes, uint64_t *objects);
// Give the stackful records and stacks each hart keeps for reuse back to
// kmalloc and palloc (before memory is counted).
void kco_drain_stacks(void);

#endif
