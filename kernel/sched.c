// The kernel executor loop and the kernel-coroutine API (kco.h).
#include "kco.h"
#include "hart.h"
#include "hartcache.h"
#include "klib.h"
#include "kmalloc.h"
#include "palloc.h"
#include "park.h"
#include "printf.h"
#include "riscv.h"
#include "sbi.h"
#include "stats.h"
#include "timer.h"
#include "uvm.h"
#include "trace.h"

struct executor kexec;
// How long an idle hart polls for work before it sleeps, in timebase ticks
// (0, the default: sleep at once; bootargs idle_poll_us=N sets it,
// sched_set_idle_poll). On this project's 2-core emulator host a polling
// vCPU takes a host core from QEMU's own threads and the client, and with
// wake-affine wakes and tickless idle harts it lowered neither the light-load
// tail nor the closed-loop rate (docs/results/smp-matrixd.md).
static uint64_t idle_poll_ticks;

static volatile uint64_t idle_harts;     // bit i set: hart index i is about to wfi

void sched_init(void) {
  // One lane per hart (board.nharts is known by now: the device tree has
  // been read). 1,024 slots (48 KiB) from the start: a test's burst of kernel
  // coroutines (a thread blocked in a call is one) should not grow the table,
  // which then stays grown, under a leak check; servers with more grow it.
  uint32_t lanes = board.nharts ? board.nharts : 1;
  if (exec_init_lanes(&kexec, NPRIO_DEFAULT, lanes, kmalloc, kfree) != 0 ||
      exec_reserve(&kexec, 1024) != 0)
    kpanic("sched: executor init failed");
}

// Wake an idle hart (not this one) so it looks at the ready queues: the one
// whose lane the coroutine was queued in if that hart sleeps (it runs it with
// no migration), else any idle one (it steals it).
// The idle hart publishes its bit and then re-reads the union bitmap; we
// published the ready coroutine and then read the idle mask. Both sides use
// sequentially consistent accesses, so at least one of them sees the other: no
// lost kick.
static void kick_lane(uint32_t lane, enum ipi_reason why) {
  // (the loop's first look, before its set-up: on every spawn and wake, and
  // usually nobody sleeps)
  if (!__atomic_load_n(&idle_harts, __ATOMIC_SEQ_CST))
    return;
  // An interrupt that found this hart idle (a device's, an IPI's) made the
  // work ready: this hart takes it (or steals it) as soon as the handler
  // returns, and waking another hart to steal it would only move the
  // request's next step across harts (and a halted vCPU is slow to wake).
  struct hart *h = this_hart();
  if (h->idling || lane == h->index)
    return;
  uint64_t self = 1ULL << h->index;
  for (;;) {
    uint64_t idle = __atomic_load_n(&idle_harts, __ATOMIC_SEQ_CST) & ~self;
    if (!idle)
      return;
    uint32_t target = lane < 64 && (idle >> lane) & 1 ? lane : exec_ctz64(idle);
    // Claim the sleeper, so that the next wake (a burst of spawns) kicks a
    // different one instead of the same hart again.
    uint64_t bit = 1ULL << target;
    if (__atomic_fetch_and(&idle_harts, ~bit, __ATOMIC_SEQ_CST) & bit) {
      hart_ipi(target, why);
      return;
    }
  }
}

void sched_kick(void) { kick_lane(64, IPI_KICK_OTHER); }

// Work this hart queues in its own lane -- a spawn here, a wake-affine wake
// (kco_wake) -- kicks no other hart: at light load this hart gets to it as
// soon as it is done with what it runs now, which is soon, and a halted vCPU
// is slow to wake. When it is not soon (a long coroutine, a spin, a backlog),
// the tick hands it on: idle harts take no tick of their own
// (kernel/timer.c), so the busy hart's tick is what bounds the wait, to two
// periods (below).
//
// Only when this hart has not slept since the last tick: then the work queued
// behind what it runs is a backlog (or a long coroutine holds the hart), and
// another hart should share it. A hart that slept meanwhile keeps up with its
// lane and reaches the waiting work soon. Kicking at every tick that found
// work queued made most of a second hart's wake-ups at light load (matrixd
// KCUC, 64 connections at 100 ms, two harts: 19-129 of hart 1's IPIs in 8 s,
// and 1-3 with this rule: the console's `stats`, "IPIs asked for"), each
// waking a halted vCPU; two harts' light-load tail comes with the second
// hart's use, not with QEMU's second vCPU (docs/results/smp-tap.md). Work
// queued behind a coroutine that runs long is handed on at the second tick
// at most.
static int tick_kicks_any;

void sched_tick_kicks_any(int on) { tick_kicks_any = on; }

void sched_tick(void) {
  struct hart *h = this_hart();
  int busy = h->idle_wfi == h->idle_wfi_at_tick;   // no idle wait since the last tick
  h->idle_wfi_at_tick = h->idle_wfi;
  if ((busy || tick_kicks_any) && !h->idling && exec_lane_has_ready(&kexec, h->index)) {
    // An idle hart if one sleeps, else a parked one (kernel/park.c).
    if (__atomic_load_n(&idle_harts, __ATOMIC_SEQ_CST) & ~(1ULL << h->index))
      kick_lane(64, IPI_KICK_TICK);
    else if (busy)
      park_tick();
  }
}


void sched_set_idle_poll(uint32_t us) {
  idle_poll_ticks = board.timebase_hz * us / 1000000;
}

static void idle_wait(struct hart *h) {
  uint64_t bit = 1ULL << h->index;
  h->idling = 1;
  // Poll a while first, interrupts on: work that comes soon (the next step of
  // a request, often woken on another hart) is picked up without the hart
  // halting and being woken by an IPI, a path that costs a halted vCPU up to
  // milliseconds on a busy emulator host.
  if (idle_poll_ticks) {
    uint64_t until = rdtime() + idle_poll_ticks;
    while (rdtime() < until)
      if (exec_ready_anywhere(&kexec)) {
        h->idling = 0;
        return;
      }
  }
  intr_off();
  // A sleeping hart keeps the table it holds (at light load the next request
  // is most often for the same process), unless a process has ended whose
  // root some hart still holds: then it moves to the kernel's, and the root
  // can be freed. uvm_free interrupts a holder after announcing the root, so
  // one that looked before that wakes at once (the check is made with
  // interrupts masked, so the interrupt stays pending for wfi).
  if (__atomic_load_n(&uvm_ndying, __ATOMIC_SEQ_CST))
    uvm_activate(0);
  // Idle long enough, it parks instead (kernel/park.c), before it joins the
  // idle mask: a kick then goes to a hart that will look.
  uint64_t recheck;
  if (park_idle(h, rdtime(), !exec_ready_anywhere(&kexec), &recheck)) {
    intr_on();
    h->idling = 0;
    return;
  }
  __atomic_fetch_or(&idle_harts, bit, __ATOMIC_SEQ_CST);
  // wfi returns when an interrupt is pending even with SIE clear; it is then
  // taken as soon as interrupts are on again. Checking with SIE clear closes the
  // window between "nothing ready" and "sleep". Every lane's bitmap, not only
  // the union, which can lack a bit for a moment while a lane clears it.
  if (!exec_ready_anywhere(&kexec)) {
    h->idle_wfi++;
    timer_idle_enter(recheck);   // no tick while it sleeps (kernel/timer.c)
    uint64_t slept = rdtime();
    wfi();
    h->idle_halted += rdtime() - slept;
    timer_idle_exit();
  }
  __atomic_fetch_and(&idle_harts, ~bit, __ATOMIC_SEQ_CST);
  intr_on();                     // (a pending interrupt is taken here, still idling)
  h->idling = 0;
}

void sched_loop(void) {
  struct co *prev = 0;
  int res = 0;
  intr_on();
  for (;;) {
    struct hart *h = this_hart();
    struct co *c = exec_next_on(&kexec, h->index, prev, res);
    if (!c) {
      prev = 0;
      idle_wait(h);
      continue;
    }
    h->cur = c;
    h->dispatches++;
    TRACE_CO(TR_RUN, c, 0);
    // Stackful: switch straight onto its stack from here, so the loop is the
    // CACS call site and only the loop's few live values are spilled.
    if (c->kind == CO_STACKFUL)
      res = stackful_resume(c->arg);
    else
      res = c->poll(c->arg);
    TRACE_CO(TR_END, c, res);
    this_hart()->cur = 0;
    prev = c;
  }
}

int kco_run_stackless(uint32_t max_prio) {
  struct hart *h = this_hart();  // (no switch below: this hart throughout)
  struct co *self = h->cur, *c;
  while ((c = exec_take_stackless(&kexec, h->index, max_prio)) != 0) {
    h->cur = c;
    h->dispatches++;
    TRACE_CO(TR_RUN, c, 0);
    int res = c->poll(c->arg);
    TRACE_CO(TR_END, c, res);
    h->cur = self;
    exec_settle_one(&kexec, c, res);
  }
  return exec_best_prio(&kexec) > max_prio;
}

// A spawn into another hart's lane: that hart may be parked, or about to fold
// its lane (kernel/park.c). park_hold_awake starts it if need be and keeps it
// from parking until the coroutine is queued there.
struct spawn_args {
  uint32_t lane;
  co_poll_fn poll;
  void *arg;
  uint32_t prio;
  enum co_kind kind;
};

static int64_t spawn_now(void *p) {
  struct spawn_args *a = p;
  return exec_spawn_on(&kexec, a->lane, a->poll, a->arg, a->prio, a->kind);
}

static int64_t spawn_in(uint32_t hart, co_poll_fn poll, void *arg, uint32_t prio,
                        enum co_kind kind) {
  struct spawn_args a = { hart, poll, arg, prio, kind };
  if (hart == this_hart()->index)
    return spawn_now(&a);
  return park_hold_awake(hart, spawn_now, &a);
}

int64_t kco_spawn_on(uint32_t hart, co_poll_fn poll, void *arg, uint32_t prio) {
  int64_t cid = spawn_in(hart, poll, arg, prio, CO_STACKLESS);
  if (cid > 0)
    kick_lane(hart, IPI_KICK_SPAWN);
  return cid;
}

int64_t kco_spawn(co_poll_fn poll, void *arg, uint32_t prio) {
  return kco_spawn_on(this_hart()->index, poll, arg, prio);
}

// ---- stackful records with their stacks: a small per-hart cache ----
// A system call that finds the network lock held goes on in a stackful
// coroutine (kernel/sys_net.c): in matrixd's closed loop on two harts, about
// one a request. palloc's search for four free pages and kmalloc's record,
// each under its global lock, and freeing both again cost about 1,600
// instructions a time. Each hart keeps a few released ones
// (kernel/hartcache.h); a record keeps its stack (sf->stack_lo).
// kco_drain_stacks empties them before memory is counted.
static struct hartcache stack_cache[BOARD_MAX_HARTS];

static void stack_free(void *p) {
  struct stackful *sf = p;
  pfree(sf->stack_lo, KCO_STACK_PAGES);
  kfree(sf);
}

void kco_drain_stacks(void) { hartcache_drain(stack_cache, stack_free); }

// What a stackful kernel coroutine owns: its stackful record and its stack.
static void release_stackful(struct stackful *sf) {
  if (!hartcache_put(stack_cache, sf))
    stack_free(sf);
}

int64_t kco_spawn_stackful_on(uint32_t hart, void (*fn)(void *), void *arg, uint32_t prio,
                              int flags) {
  struct stackful *sf = hartcache_take(stack_cache);
  void *stack = sf ? sf->stack_lo : 0;
  if (!sf) {
    sf = kmalloc(sizeof *sf);
    stack = palloc(KCO_STACK_PAGES);
    if (!sf || !stack) {
      kfree(sf);
      if (stack)
        pfree(stack, KCO_STACK_PAGES);
      return EXEC_ENOMEM;
    }
  }
  stackful_init(sf, stack, KCO_STACK_PAGES * PAGE_SIZE, fn, arg, flags & KCO_FULLSAVE,
                release_stackful);
  int64_t cid = spawn_in(hart, stackful_poll, sf, prio, CO_STACKFUL);
  if (cid < 0) {
    release_stackful(sf);
    return cid;
  }
  kick_lane(hart, IPI_KICK_SPAWN);
  return cid;
}

int64_t kco_spawn_stackful(void (*fn)(void *), void *arg, uint32_t prio, int flags) {
  return kco_spawn_stackful_on(this_hart()->index, fn, arg, prio, flags);
}

cid_t kco_current(void) {
  struct co *c = this_hart()->cur;
  return c ? co_cid(c) : CID_NONE;
}

// Wake-affine (kco.h): at light load a request's steps are woken one by
// another, and each that went to another hart's lane crossed harts: an IPI to
// a halted hart, which a vCPU is slow to wake from (on this emulator host,
// often milliseconds). When this hart has nothing else ready, it runs the
// coroutine as soon as it is done with what it is doing now, which at light
// load is soon; with work waiting here, the coroutine goes home and an idle
// hart is kicked, so that load spreads. (The lookups are glances, without the
// lane's lock: a wrong guess costs a hop, not a lost wake.)
int kco_wake(cid_t cid) {
  struct hart *h = this_hart();
  if (nharts_online > 1 && !exec_lane_has_ready(&kexec, h->index)) {
    h->wakes_here++;
    return exec_wake_to(&kexec, cid, h->index);
  }
  return kco_wake_home(cid);
}

int kco_wake_home(cid_t cid) {
  uint32_t lane;
  int r = exec_wake_lane(&kexec, cid, &lane);
  if (r == 1)
    kick_lane(lane, IPI_KICK_WAKE);
  return r;
}

int kco_wake_elsewhere(cid_t cid) {
  // Another hart: an idle one if there is one (it runs the coroutine now),
  // else the next one.
  uint32_t self = this_hart()->index, n = park_harts_awake();
  if (n < 2)
    return kco_wake(cid);
  uint64_t idle = __atomic_load_n(&idle_harts, __ATOMIC_SEQ_CST) & ~(1ULL << self);
  uint32_t to = idle ? exec_ctz64(idle) : (self + 1) % n;
  int r = exec_wake_to(&kexec, cid, to);
  if (r == 1)
    kick_lane(to, IPI_KICK_HAND);
  return r;
}

int kco_reprio(cid_t cid, uint32_t prio) { return exec_reprio(&kexec, cid, prio); }


struct stackful *stackful_self(void) {
  struct co *c = this_hart()->cur;
  if (!c || c->kind != CO_STACKFUL)
    kpanic("stackful_self: not in a stackful coroutine");
  return c->arg;
}

void stackful_overflow(struct stackful *sf) {
  kpanic("stack overflow in stackful coroutine %p (stack %p)", (void *)sf, (void *)sf->stack_lo);
}

int stackful_poll(void *arg) { return stackful_resume(arg); }

void kco_yield(void) { stackful_suspend(CO_YIELD); }
void kco_block(void) { stackful_suspend(CO_PENDING); }

// Structures that grow once and are kept as caches: the kernel executor's slot
// table and the per-hart timer heaps. Their growth under load is not a leak;
// tests that compare kmalloc counters before and after subtract them.
void kernel_caches(uint64_t *bytes, uint64_t *objects) {
  uint64_t b = (uint64_t)kexec.nchunks * ALIGN_UP(EXEC_CHUNK_SLOTS * sizeof(struct co), PAGE_SIZE);
  uint64_t o = kexec.nchunks;
  for (uint32_t i = 0; i < nharts_online; i++)
    if (harts[i].timer_cap) {
      b += kmalloc_size_class(harts[i].timer_cap * sizeof(struct timer_entry));
      o++;
    }
  *bytes = b;
  *objects = o;
}

static void print_stats(stats_out_fn *out) {
  struct exec_stats es;
  exec_get_stats(&kexec, &es);
  out("executor: live %u (ready %u, running %u, blocked %u), slots %u, best prio %u\n",
      es.live, es.ready, es.running, es.blocked, es.slots, exec_best_prio(&kexec));
  out("          spawned %lu, exited %lu, wakes %lu (remembered %lu, stale %lu), steals %lu\n",
      es.spawned, es.exited, es.wakes, es.wakes_remembered, es.stale_wakes, es.steals);
  for (uint32_t i = 0; i < nharts_online; i++) {
    struct hart *h = &harts[i];
    out("hart %u (id %u): dispatches %lu, ticks %lu, irq timer %lu soft %lu ext %lu, idle waits %lu "
        "(halted %lu ms), wakes here %lu, timer irqs late %lu (latest %lu us), satp loads %lu, "
        "parked %lu times (%lu ms; started again %lu)\n",
        i, h->hartid, h->dispatches, h->ticks, h->irq_timer, h->irq_soft, h->irq_ext, h->idle_wfi,
        h->idle_halted * 1000 / board.timebase_hz, h->wakes_here, h->timer_late, h->timer_late_max_us,
        h->satp_loads, h->parks, park_time(h) * 1000 / board.timebase_hz, h->unparks);
    // (a line of its own: the console's output lines are bounded)
    out("          IPIs asked for: kicks (spawn %lu, wake %lu, tick %lu, hand-over %lu, other %lu), "
        "user interrupts %lu, address space %lu, unpark %lu, timers %lu\n",
        h->ipis_asked[IPI_KICK_SPAWN], h->ipis_asked[IPI_KICK_WAKE], h->ipis_asked[IPI_KICK_TICK],
        h->ipis_asked[IPI_KICK_HAND], h->ipis_asked[IPI_KICK_OTHER], h->ipis_asked[IPI_UINTR],
        h->ipis_asked[IPI_ADDRSPACE], h->ipis_asked[IPI_UNPARK], h->ipis_asked[IPI_TIMERS]);
  }
}
STATS_SOURCE(10, "sched", print_stats);
