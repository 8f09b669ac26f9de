// Parking idle harts.
//
// With two harts and little work, the second hart sleeps almost all the time,
// yet the first pays for its being there on every step: the executor's
// several-lane steps (a union of bitmaps kept with sequentially consistent
// atomics, a lock word per lane, a scan of the other lanes when a queue
// empties) instead of the one-lane ones, about 1,100 instructions and 90
// fences a matrixd request, and under QEMU's multi-threaded TCG a fence or an
// AMO costs 5 to 10 times a plain instruction (docs/results/light-stalls.md).
// A hart that has dispatched nothing for park_ms therefore parks: it folds its
// lane into lane 0 (exec_fold_lanes: a coroutine blocked with it as home
// wakes in lane 0 while it is folded, and in it again once it is back) and
// waits in wfi with only software interrupts enabled,
// outside the executor, until it is started again. When the last one parks,
// the boot hart is alone and the executor takes its one-lane steps.
//
// Only the highest hart in use parks (lanes are folded from the top), its
// lane empty; its timer entries go to hart 0's heap first (timer_hand_over),
// so that every armed deadline still fires. It is started again (exec_set_lanes, then an IPI)
//   - by a busy hart's tick that finds work queued behind what it runs and
//     no idle hart to kick (sched_tick): the rule that hands such work on
//     to a sleeping hart, two ticks at most, so a rising load brings the
//     harts back one by one;
//   - by a spawn aimed at it (kco_spawn_on), which holds park_lock until its
//     coroutine is queued, so that the hart cannot fold that lane first.
// A parked hart holds no user address space (it moves to the kernel's table
// first) and takes no tick; an IPI for another reason only wakes it to look
// at its flag again. Growing and folding the lanes are serialized by
// park_lock, taken before any lane lock.
#include "park.h"
#include "hart.h"
#include "kco.h"
#include "printf.h"
#include "riscv.h"
#include "spinlock.h"
#include "stats.h"
#include "timer.h"
#include "uvm.h"

static uint64_t park_ticks;     // idle time before a hart parks (0: never)
static uint32_t park_ms;
static struct spinlock park_lock = SPINLOCK_INIT("park");

uint32_t park_delay_ms(void) { return park_ms; }

void park_set_delay_ms(uint32_t ms) {
  park_ms = ms;
  __atomic_store_n(&park_ticks, board.timebase_hz * ms / 1000, __ATOMIC_SEQ_CST);
  // A hart asleep since before this has set no deadline to look again.
  uint32_t self = this_hart()->index;
  for (uint32_t i = 1; i < nharts_online; i++)
    if (i != self)
      hart_ipi(i, IPI_KICK_OTHER);
}

uint64_t park_time(const struct hart *h) {
  uint64_t at = __atomic_load_n(&h->parked_at, __ATOMIC_RELAXED);
  return h->parked_ticks + (at ? rdtime() - at : 0);
}

uint32_t park_harts_awake(void) {
  return __atomic_load_n(&kexec.nlanes, __ATOMIC_ACQUIRE);
}

// What the folds cost (the console's `stats`): exec_fold_lanes runs under
// every lane's lock, so while it runs no other hart can take a step. (It no
// longer walks the slot table; the largest table is still reported, to show
// that its time does not grow with it.) Written under park_lock.
static uint64_t folds, fold_ticks, fold_ticks_max, fold_slots_max;

static void count_fold(uint64_t ticks) {
  uint64_t slots = (uint64_t)__atomic_load_n(&kexec.nchunks, __ATOMIC_ACQUIRE) * EXEC_CHUNK_SLOTS;
  folds++;
  fold_ticks += ticks;
  if (ticks > fold_ticks_max)
    fold_ticks_max = ticks;
  if (slots > fold_slots_max)
    fold_slots_max = slots;
}

// Interrupts off. Fold this hart's lane if it may park now. Under park_lock,
// so that no grow or other fold is half done.
static int fold_self(struct hart *h) {
  int folded = 0;
  spin_lock(&park_lock);
  if (h->index + 1 == park_harts_awake() && timer_hand_over(0) == 0) {
    __atomic_store_n(&h->unpark, 0, __ATOMIC_RELAXED);
    uint64_t t0 = rdtime();
    folded = exec_fold_lanes(&kexec, h->index) == 0;
    if (folded)
      count_fold(rdtime() - t0);
  }
  spin_unlock(&park_lock);
  return folded;
}

static void print_stats(stats_out_fn *out) {
  spin_lock(&park_lock);
  uint64_t n = folds, total = fold_ticks, longest = fold_ticks_max, slots = fold_slots_max;
  spin_unlock(&park_lock);
  uint64_t per_us = board.timebase_hz / 1000000 ? board.timebase_hz / 1000000 : 1;
  out("park: lanes folded %lu times (longest %lu us, mean %lu us; slot table up to %lu slots)\n",
      n, longest / per_us, n ? total / n / per_us : 0, slots);
}
STATS_SOURCE(12, "sched", print_stats);

// Wait, outside the executor, until wake_upto sets our flag. A software
// interrupt is the only one enabled, so wfi sleeps through device interrupts
// (the other harts take them) and timers; SSIP is cleared before the flag is
// read, so an IPI sent after the read ends the next wfi.
static void parked(struct hart *h) {
  uint64_t sie = csr_read(sie);
  csr_write(sie, SIE_SSIE);
  timer_idle_enter(~0ULL);
  uint64_t since = rdtime();
  h->parks++;
  __atomic_store_n(&h->parked_at, since, __ATOMIC_RELAXED);
  for (;;) {
    csr_clear(sip, SIE_SSIE);
    if (__atomic_load_n(&h->unpark, __ATOMIC_ACQUIRE))
      break;
    wfi();
  }
  h->parked_ticks += rdtime() - since;
  __atomic_store_n(&h->parked_at, 0, __ATOMIC_RELAXED);
  timer_idle_exit();
  csr_write(sie, sie);
}

int park_idle(struct hart *h, uint64_t now, int may_park, uint64_t *recheck) {
  *recheck = ~0ULL;
  if (!park_ticks || h->index == 0)
    return 0;
  if (h->dispatches != h->park_dispatches) {
    // Work since the last look: idle from now on.
    h->park_dispatches = h->dispatches;
    h->idle_since = now;
  }
  if (now - h->idle_since < park_ticks) {
    *recheck = h->idle_since + park_ticks;
    return 0;
  }
  if (!may_park) {
    *recheck = now + park_ticks;   // (whatever looked ready may be gone by the wfi)
    return 0;
  }
  uvm_activate(0);
  if (!fold_self(h)) {
    // A higher hart still runs, work came, or hart 0's heap could not grow:
    // look again a period later.
    *recheck = now + park_ticks;
    return 0;
  }
  parked(h);
  h->idle_since = rdtime();     // not straight back: a full period first
  return 1;
}

// (park_lock held) Start every parked hart up to index.
static void wake_upto(uint32_t index) {
  uint32_t n = park_harts_awake();
  if (index < n || index >= nharts_online)
    return;
  exec_set_lanes(&kexec, index + 1);
  for (uint32_t i = n; i <= index; i++) {
    harts[i].unparks++;
    __atomic_store_n(&harts[i].unpark, 1, __ATOMIC_RELEASE);
    hart_ipi(i, IPI_UNPARK);    // (sent at the unlock)
  }
}

int64_t park_hold_awake(uint32_t index, int64_t (*fn)(void *), void *arg) {
  spin_lock(&park_lock);
  wake_upto(index);
  int64_t r = fn(arg);
  spin_unlock(&park_lock);
  return r;
}

void park_tick(void) {
  if (park_harts_awake() >= nharts_online)
    return;
  spin_lock(&park_lock);
  wake_upto(park_harts_awake());
  spin_unlock(&park_lock);
}
