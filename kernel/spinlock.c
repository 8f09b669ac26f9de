// Spinlocks that mask interrupts on the holding hart (nesting, as in xv6), so an
// interrupt handler never spins on a lock held by the code it interrupted.
#include "spinlock.h"
#include "hart.h"
#include "riscv.h"
#include "printf.h"
#include "sbi.h"
#include "stats.h"

// The checks below catch misuse (a lock taken twice, released by a hart that
// does not hold it, unbalanced masking); their reports live out of line so the
// common path stays short (no stack frame).
static __attribute__((noinline, cold, noreturn)) void misuse(const char *what, struct spinlock *lk) {
  kpanic("spinlock %s: %s", lk && lk->name ? lk->name : "-", what);
}

static void push_off(struct hart *h) {
  uint64_t old;
  __asm__ volatile("csrrc %0, sstatus, %1" : "=r"(old) : "r"(SSTATUS_SIE) : "memory");
  if (h->noff++ == 0)
    h->intena = (int)(old & SSTATUS_SIE);   // (nonzero if they were on: not normalised, one shift less)
}

void spin_init(struct spinlock *lk, const char *name) {
  lk->locked = 0;
  lk->holder = -1;
  lk->name = name;
}

// ---- contention: the console's `locks` table ----
// A lock found held is counted under its name (all sockets' locks in one
// row, say): how often a hart had to wait, how many times it polled the
// lock meanwhile, and the longest such wait in polls. Polls, not time: the
// kernel reads no clock here, and under an emulator a poll is what a waiting
// hart burns. Only the contended path counts, out of line, so an uncontended
// lock costs what it did. Rows are claimed by name pointer with a
// compare-and-swap and never freed (names are string constants); names
// beyond the table's size go uncounted and are themselves counted.
#define CONTENDED_ROWS 32
struct contended {
  const char *name;             // 0: a free row
  uint64_t waits, polls, longest;
};
static struct contended contended[CONTENDED_ROWS];
static uint64_t contended_lost;

static void count_wait(const char *name, uint64_t polls) {
  for (int i = 0; i < CONTENDED_ROWS; i++) {
    struct contended *c = &contended[i];
    const char *had = __atomic_load_n(&c->name, __ATOMIC_ACQUIRE);
    // A free row: claim it. If another hart claims it first, `had` becomes
    // the name that hart put there.
    if (!had && __atomic_compare_exchange_n(&c->name, &had, name, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))
      had = name;
    if (had != name)
      continue;
    __atomic_fetch_add(&c->waits, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->polls, polls, __ATOMIC_RELAXED);
    uint64_t old = __atomic_load_n(&c->longest, __ATOMIC_RELAXED);
    while (polls > old &&
           !__atomic_compare_exchange_n(&c->longest, &old, polls, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
      ;
    return;
  }
  __atomic_fetch_add(&contended_lost, 1, __ATOMIC_RELAXED);
}

// The lock was held at the first try: wait for it, polling with plain loads
// (an exchange writes the line, which the holder's hart then has to fetch
// back), and take it for hart h. (spin_lock's last act, a tail call, so that
// spin_lock itself needs no stack frame: with a plain call it had one, which
// cost every lock 5 instructions.)
static __attribute__((noinline)) void spin_wait(struct spinlock *lk, struct hart *h) {
  uint64_t polls = 0;
  do
    while (__atomic_load_n(&lk->locked, __ATOMIC_RELAXED))
      polls++;
  while (__atomic_exchange_n(&lk->locked, 1, __ATOMIC_ACQUIRE));
  lk->holder = (int)h->index;
  count_wait(lk->name ? lk->name : "-", polls);
}

static void print_contended(stats_out_fn *out) {
  int any = 0;
  for (int i = 0; i < CONTENDED_ROWS; i++) {
    const struct contended *c = &contended[i];
    const char *name = __atomic_load_n(&c->name, __ATOMIC_ACQUIRE);
    if (!name)
      break;
    if (!any)
      out("locks: spinlocks found held, by name:\n");
    any = 1;
    out("  %s: waits %lu, polls %lu (longest wait %lu)\n", name,
        __atomic_load_n(&c->waits, __ATOMIC_RELAXED), __atomic_load_n(&c->polls, __ATOMIC_RELAXED),
        __atomic_load_n(&c->longest, __ATOMIC_RELAXED));
  }
  if (!any)
    out("locks: no spinlock has been found held\n");
  if (contended_lost)
    out("  (%lu waits of locks beyond the table's %d names not counted)\n", contended_lost,
        CONTENDED_ROWS);
}
STATS_SOURCE(85, "locks", print_contended);

uint64_t spin_waits(const char *name) {
  for (int i = 0; i < CONTENDED_ROWS; i++)
    if (__atomic_load_n(&contended[i].name, __ATOMIC_ACQUIRE) == name)
      return __atomic_load_n(&contended[i].waits, __ATOMIC_RELAXED);
  return 0;
}

void spin_lock(struct spinlock *lk) {
  struct hart *h = this_hart();
  push_off(h);
  if (lk->locked && lk->holder == (int)h->index)
    misuse("already held by this hart", lk);
  if (__builtin_expect(__atomic_exchange_n(&lk->locked, 1, __ATOMIC_ACQUIRE), 0)) {
    spin_wait(lk, h);
    return;
  }
  lk->holder = (int)h->index;
}

// The checks of spin_unlock and pop_off, out of line and cold: with them
// inline, spin_unlock needed a stack frame on every release.
static __attribute__((noinline, cold, noreturn)) void bad_release(struct spinlock *lk, struct hart *h) {
  if (!lk->locked || lk->holder != (int)h->index)
    misuse("released by a hart that does not hold it", lk);
  if (intr_get())
    misuse("interrupts enabled while held", 0);
  misuse("unbalanced release", 0);
}

// ---- interprocessor interrupts wait for the last unlock ----
// An IPI goes through SBI, and OpenSBI raises it with a store to the CLINT.
// Under QEMU a device register access takes the emulator's global lock, which
// its main loop holds while it moves packets, so one IPI can take
// milliseconds. Sent with a spinlock held -- a wait queue's, whose wake kicks
// an idle hart, or the run queue's -- it kept that lock held as long, and
// every other hart that wanted it spun meanwhile: in KTUT's light load on two
// harts the console's `locks` showed waits of over 3 million polls on the run
// queue's, sockets' and pipes' wait queues. So with a lock held the target
// is only noted, and spin_unlock sends the noted IPIs once this hart holds no
// spinlock. (Late by the rest of the critical section: the woken hart then
// finds the work the section published, which it would have had to wait for
// the lock to see anyway.)
//
// send_pending_ipis is spin_unlock's last act when IPIs wait, a tail call,
// so that spin_unlock needs no stack frame (with a plain call it had one: 8
// instructions on every release); so it also turns interrupts back on.
static __attribute__((noinline)) void send_pending_ipis(struct hart *h) {
  uint64_t pending = h->ipi_pending;
  h->ipi_pending = 0;
  for (uint32_t i = 0; pending; i++, pending >>= 1)
    if (pending & 1)
      sbi_send_ipi(1, harts[i].hartid);
  if (h->intena)
    intr_on();
}

static int ipi_at_once;          // bootargs ipi=now: the old way, for comparison

void hart_ipi_at_once(int on) { ipi_at_once = on; }

void hart_ipi(uint32_t index, enum ipi_reason why) {
  __atomic_fetch_add(&harts[index].ipis_asked[why], 1, __ATOMIC_RELAXED);
  struct hart *h = this_hart();
  if (h->noff > 0 && !ipi_at_once) {   // (only this hart changes its noff)
    h->ipi_pending |= 1ULL << index;
    return;
  }
  sbi_send_ipi(1, harts[index].hartid);
}

void spin_unlock(struct spinlock *lk) {
  struct hart *h = this_hart();
  // (noff read once: nothing else on this hart runs while interrupts are
  // masked, and after the release's fence GCC would load it again)
  int noff = h->noff;
  if (__builtin_expect(!lk->locked || lk->holder != (int)h->index || intr_get() || noff <= 0, 0))
    bad_release(lk, h);
  lk->holder = -1;
  // The release is `fence rw,w` and a plain store: the RISC-V memory model's
  // own mapping of a release store (as Linux's smp_store_release). GCC 12
  // compiles any __atomic_store_n, relaxed too, to an amoswap, and under QEMU
  // with more than one vCPU an AMO is a call to an atomic helper, about 10 ns
  // more than a store on this project's host (docs/results/light-stalls.md,
  // "What a fence costs"), at every release.
  __asm__ volatile("fence rw, w" ::: "memory");
  lk->locked = 0;
  h->noff = --noff;
  if (noff == 0) {
    if (__builtin_expect(h->ipi_pending != 0, 0)) {
      send_pending_ipis(h);
      return;
    }
    if (h->intena)
      intr_on();
  }
}

unsigned spin_this_cpu(void) { return this_hart()->index; }

int spin_holding(struct spinlock *lk) {
  return lk->locked && lk->holder == (int)this_hart()->index;
}
