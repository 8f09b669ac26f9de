// Per-hart timers: a min-heap of (deadline, cid) plus the periodic tick, and the
// sleep of a stackful kernel coroutine built on them.
// The hardware compare register is programmed with the earlier of the heap's first
// deadline and the next tick.
// With Sstc the kernel writes stimecmp itself; without it, every reprogramming
// is an SBI call into M-mode.
#include "timer.h"
#include "hart.h"
#include "kco.h"
#include "kmalloc.h"
#include "riscv.h"
#include "sbi.h"

static int use_sstc;

int timer_uses_sstc(void) { return use_sstc; }

static void program(uint64_t when) {
  if (use_sstc)
    __asm__ volatile("csrw 0x14d, %0" :: "r"(when));   // stimecmp
  else
    sbi_set_timer(when);
}

static uint64_t tick_interval(void) { return board.timebase_hz / TICK_HZ; }

void timer_nap(uint64_t ticks) {
  program(rdtime() + ticks);
  csr_set(sie, SIE_STIE);       // wfi wakes on an enabled pending interrupt, masked or not
  __asm__ volatile("wfi");
  // The timer interrupt stays pending: the first one taken reprograms it.
}

static void reprogram(struct hart *h) {
  uint64_t next = h->next_tick;
  if (h->ntimers && h->timers[0].when < next)
    next = h->timers[0].when;
  program(next);
}

// ---- tickless idle ----
// A sleeping hart has nothing for a tick to do: nothing runs there to
// preempt, and work that comes for it brings its own wakeup (the waker's IPI,
// kernel/sched.c; a device's interrupt; a deadline in its heap). On QEMU each
// tick of a halted vCPU also wakes its host thread, which then takes QEMU's
// big lock and competes with the busy hart's device accesses: at light load
// on two harts (docs/results/smp-matrixd.md) the sleeping hart's 100 ticks a
// second were most of the tail that one hart does not have.
static int idle_tick;

void timer_set_idle_tick(int on) { idle_tick = on; }

void timer_idle_enter(uint64_t wake_by) {
  if (idle_tick)
    return;
  struct hart *h = this_hart();
  spin_lock(&h->timer_lock);
  uint64_t when = h->ntimers ? h->timers[0].when : ~0ULL;
  program(when < wake_by ? when : wake_by);
  spin_unlock(&h->timer_lock);
}

void timer_idle_exit(void) {
  if (idle_tick)
    return;
  struct hart *h = this_hart();
  spin_lock(&h->timer_lock);
  // The ticks it slept through are not owed: the next one a period from now.
  uint64_t now = rdtime();
  if (h->next_tick <= now)
    h->next_tick = now + tick_interval();
  reprogram(h);
  spin_unlock(&h->timer_lock);
}

#define TIMER_HEAP_INITIAL 16

void timer_init_hart(void) {
  struct hart *h = this_hart();
  use_sstc = board.has_sstc;
  spin_init(&h->timer_lock, "timer");
  // Allocated up front, so a first sleep does not look like a leak to tests
  // that compare kernel memory before and after.
  h->timers = kmalloc(TIMER_HEAP_INITIAL * sizeof(struct timer_entry));
  h->timer_cap = h->timers ? TIMER_HEAP_INITIAL : 0;
  // Harts tick out of phase (hart i a fraction i/n of a period later), so
  // their tick work does not collide on shared locks, and a hart's tick is not
  // due just when another hart's is (under -icount, QEMU sets a running hart
  // aside at timer deadlines: with aligned ticks every hand-off between harts
  // would bring a tick along).
  uint32_t n = board.nharts ? board.nharts : 1;
  h->next_tick = rdtime() + tick_interval() + tick_interval() * h->index / n;
  reprogram(h);
  csr_set(sie, SIE_STIE);
}

static void heap_swap(struct timer_entry *a, struct timer_entry *b) {
  struct timer_entry t = *a;
  *a = *b;
  *b = t;
}

static void sift_up(struct timer_entry *t, uint32_t i) {
  while (i > 0 && t[(i - 1) / 2].when > t[i].when) {
    heap_swap(&t[(i - 1) / 2], &t[i]);
    i = (i - 1) / 2;
  }
}

static void sift_down(struct timer_entry *t, uint32_t n, uint32_t i) {
  for (;;) {
    uint32_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && t[l].when < t[m].when)
      m = l;
    if (r < n && t[r].when < t[m].when)
      m = r;
    if (m == i)
      return;
    heap_swap(&t[m], &t[i]);
    i = m;
  }
}

// Entries are never cancelled: one whose coroutine has ended (its cid is
// stale: the process was killed in a long sleep, say) only yields a wake the
// executor rejects when its deadline comes. So that such entries cannot pile
// up until then, a full heap first drops them (an executor lookup each, under
// timer_lock then the executor's lock, the order timer_interrupt uses too),
// and grows only if it is still at least half full: the heap holds at most
// twice the live timers (or its first 16 slots). O(n), at most once per n/2
// adds.
static void drop_stale(struct hart *h) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < h->ntimers; i++)
    if (exec_lookup(&kexec, h->timers[i].cid))
      h->timers[n++] = h->timers[i];
  h->timers_dropped += h->ntimers - n;
  h->ntimers = n;
  for (uint32_t i = n / 2; i-- > 0;)
    sift_down(h->timers, n, i);
}

// (h's timer_lock held) Room for at least `need` entries: the heap doubles
// (from TIMER_HEAP_INITIAL) until they fit. 0, or -1 with nothing changed.
static int heap_grow(struct hart *h, uint32_t need) {
  if (need <= h->timer_cap)
    return 0;
  uint32_t cap = h->timer_cap ? h->timer_cap * 2 : TIMER_HEAP_INITIAL;
  while (cap < need)
    cap *= 2;
  struct timer_entry *t = kmalloc(cap * sizeof(*t));
  if (!t)
    return -1;
  for (uint32_t i = 0; i < h->ntimers; i++)
    t[i] = h->timers[i];
  kfree(h->timers);
  h->timers = t;
  h->timer_cap = cap;
  return 0;
}

int timer_add(uint64_t when, cid_t cid) {
  struct hart *h = this_hart();
  spin_lock(&h->timer_lock);
  if (h->ntimers == h->timer_cap) {
    drop_stale(h);
    // still at least half full (or no heap yet): grow
    if (h->ntimers >= h->timer_cap / 2 && heap_grow(h, h->timer_cap + 1) != 0) {
      spin_unlock(&h->timer_lock);
      return -1;
    }
  }
  h->timers[h->ntimers] = (struct timer_entry){ when, cid };
  sift_up(h->timers, h->ntimers++);
  reprogram(h);
  spin_unlock(&h->timer_lock);
  return 0;
}

// A coroutine that re-arms before its old deadline (the lwIP timer coroutine
// when a connection needs an earlier timeout, a call whose deadline moved)
// leaves its old entry in the heap until then: count each coroutine once, so
// that the figure says who waits on a timer, not how recently they re-armed.
// Every hart's lock at once (in hart order; timer_add takes only its own), so
// that an entry cannot move between harts while it is counted. O(n^2) in the
// entries: for tests and stats at rest, never on a hot path.
uint32_t timer_live(void) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < nharts_online; i++)
    spin_lock(&harts[i].timer_lock);
  for (uint32_t i = 0; i < nharts_online; i++)
    for (uint32_t j = 0; j < harts[i].ntimers; j++) {
      cid_t cid = harts[i].timers[j].cid;
      int seen = 0;
      for (uint32_t k = 0; k <= i && !seen; k++)
        for (uint32_t l = 0; l < (k < i ? harts[k].ntimers : j) && !seen; l++)
          seen = harts[k].timers[l].cid == cid;
      // then the executor's lock: drop_stale's order
      n += !seen && exec_lookup(&kexec, cid) != 0;
    }
  for (uint32_t i = nharts_online; i-- > 0;)
    spin_unlock(&harts[i].timer_lock);
  return n;
}

// (timer_lock held) The deadline the compare register was set to: the
// earlier of the next tick and the heap's first (reprogram). An idle hart
// programs only the heap, and an empty heap nothing: its late count is then
// of heap deadlines alone.
static void count_late(struct hart *h, uint64_t now) {
  uint64_t due = h->next_tick;
  if (h->ntimers && h->timers[0].when < due)
    due = h->timers[0].when;
  if (due > now || now - due <= board.timebase_hz / 1000)
    return;
  uint64_t us = (now - due) * 1000000 / board.timebase_hz;
  h->timer_late++;
  if (us > h->timer_late_max_us)
    h->timer_late_max_us = us;
}

// The hart's tick is due: count it and set the next one. Out of line (and
// never cloned) so that its first instruction runs exactly once per tick:
// make bench-flat reads the guest's clock off that instruction's count in its
// instruction profiles (inline, GCC copied the count into two paths).
static __attribute__((noinline, noclone)) void timer_tick(struct hart *h, uint64_t now) {
  h->ticks++;
  // Skip ticks missed while interrupts were off rather than replaying them.
  while (h->next_tick <= now)
    h->next_tick += tick_interval();
}

int timer_interrupt(void) {
  struct hart *h = this_hart();
  uint64_t now = rdtime();
  int ticked = 0;
  h->irq_timer++;
  spin_lock(&h->timer_lock);
  count_late(h, now);
  while (h->ntimers && h->timers[0].when <= now) {
    cid_t cid = h->timers[0].cid;
    h->timers[0] = h->timers[--h->ntimers];
    sift_down(h->timers, h->ntimers, 0);
    kco_wake(cid);
  }
  if (now >= h->next_tick) {
    timer_tick(h, now);
    ticked = 1;
  }
  reprogram(h);
  spin_unlock(&h->timer_lock);
  return ticked;
}

// Parking (kernel/park.c). Both locks in hart order (to's index is lower),
// as timer_live takes them.
int timer_hand_over(uint32_t to_index) {
  struct hart *h = this_hart(), *to = &harts[to_index];
  int r = 0, moved = 0;
  spin_lock(&to->timer_lock);
  spin_lock(&h->timer_lock);
  if (h->ntimers) {
    r = heap_grow(to, to->ntimers + h->ntimers);
    if (!r) {
      for (uint32_t i = 0; i < h->ntimers; i++) {
        to->timers[to->ntimers] = h->timers[i];
        sift_up(to->timers, to->ntimers++);
      }
      h->ntimers = 0;
      __atomic_store_n(&to->timers_moved, 1, __ATOMIC_RELEASE);
      moved = 1;
    }
  }
  spin_unlock(&h->timer_lock);
  spin_unlock(&to->timer_lock);
  if (moved)
    hart_ipi(to_index, IPI_TIMERS);
  return r;
}

void timer_take_handed(void) {
  struct hart *h = this_hart();
  if (!__atomic_load_n(&h->timers_moved, __ATOMIC_ACQUIRE))
    return;
  spin_lock(&h->timer_lock);
  h->timers_moved = 0;
  reprogram(h);
  spin_unlock(&h->timer_lock);
}

// A stackful coroutine sleeps by arming a timer for itself and blocking; a
// spurious wake just arms it again.
void kco_sleep_until(uint64_t deadline) {
  while (rdtime() < deadline) {
    timer_add(deadline, kco_current());
    kco_block();
  }
}

void kco_sleep_ms(uint64_t ms) {
  kco_sleep_until(rdtime() + ms * board.timebase_hz / 1000);
}
