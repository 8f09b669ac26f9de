// The network lock: lwIP's serialization as a CES mutex (net/net.h,
// vdso/ces.h, docs/ARCHITECTURE.md "The network lock").
//
// Every call into lwIP is a critical section of one mutex. Under contention
// the sections run back to back on the hart that holds it (the combiner), and
// a waiter that may block goes on with other work meanwhile: a stackful
// coroutine sleeps in ces_run and its continuation is woken on another hart,
// a stackless one (the receive coroutine) returns CO_PENDING. A caller that
// cannot block (the switcher's first attempt of a system call, a stackless
// worker deep in a call, anything holding a spinlock or testing a wait's
// condition) spins on its own request instead: combining without the
// exchange. Two kinds only try (NET_TRY): the first attempt of a KMODE_THREAD
// process's call, which if the lock is held goes on in a stackful kernel
// coroutine that sleeps in ces_run (kernel/sys_net.c says when, and why only
// there); and every send, which if the lock is held leaves its bytes to the
// holder when they fit (net/socket.c), and waits as its caller may if not.
// Work so left is run at a section's end, and net_later makes sure a section
// comes. The mutex is set up for spinners (m->spinners, as
// ces_init_spinning sets it): the lock is never handed to a sleeping waiter,
// so a spinner never waits for a dispatch.
//
// The bootarg netlock=spin makes it the spinlock it was before (kept for
// comparison: make bench-netlock runs both); netlock=busy makes every try
// fail, so that tests take the way around a held lock on every call; and
// netlock=nohandoff makes tries spin as they did before (for comparison).
#include "net.h"
#include "hart.h"
#include "kces.h"
#include "printf.h"
#include "spinlock.h"
#include "socket.h"

// Sections per combiner turn. A turn ends early at the first awake waiter
// past it (ces.c), so this bounds the combiner's own delay only while
// waiters spin; sleeping waiters are combined (they could not take over
// without a dispatch).
#define NET_BATCH 32

static struct ces_mutex mx = { .env = &kces_env, .batch = NET_BATCH, .spinners = 1 };
// net_lock's lock-form node, one per hart: its holder never leaves the hart
// before net_unlock (a section never blocks, and interrupt handlers never
// take the network lock).
static struct ces_node lock_node[BOARD_MAX_HARTS];

static struct spinlock spin = SPINLOCK_INIT("net");
static int use_spin;                    // netlock=spin
static uint64_t spin_sections, spin_queued;
static uint64_t tries_busy;             // NET_TRY requests that found the lock held
static int tries_fail;                  // netlock=busy
static int tries_spin;                  // netlock=nohandoff

// Mutual exclusion, checked on every section: cheap (one exchange), and a
// broken lock stops the kernel at the first overlap instead of corrupting lwIP.
static uint32_t inside;

void net_lock_use_spinlock(int on) { use_spin = on; }
void net_lock_tries_fail(int on) { tries_fail = on; }
void net_lock_tries_spin(int on) { tries_spin = on; }
int net_lock_is_spinlock(void) { return use_spin; }

static void enter(void) {
  if (__atomic_exchange_n(&inside, 1, __ATOMIC_RELAXED))
    kpanic("net: two sections of the network lock at once");
}

static void leave(void) {
  net_section_end();
  __atomic_store_n(&inside, 0, __ATOMIC_RELAXED);
}

void net_lock(void) {
  if (use_spin) {
    if (__atomic_load_n(&spin.locked, __ATOMIC_RELAXED))
      __atomic_fetch_add(&spin_queued, 1, __ATOMIC_RELAXED);
    spin_lock(&spin);
  } else
    ces_lock_spin(&mx, &lock_node[this_hart()->index]);
  enter();
}

// A function section as a CES request: the checks and the epilogue around it.
static void section(void *arg) {
  struct net_req *r = arg;
  enter();
  r->fn(r->arg);
  leave();
}

static void nothing(void *arg) { (void)arg; }

// Called after every way of letting the lock go, and by whoever has just
// listed work for it. Work listed while the lock was held and past its
// holder's last section end is seen here: the lister's look at the lock
// (ces_try_run's) and the holder's release are ordered against their
// stores by the fences, so either the lister finds the lock free and runs the
// section, or the holder, after its release, finds the work listed. Tries
// ignore netlock=busy: this is the lock's own business, not a caller's way.
void net_later(void) {
  if (use_spin)
    return;                             // (every caller takes the lock: nothing is listed for long)
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  while (sock_later_waiting()) {
    struct net_req r = { .fn = nothing, .arg = 0 };
    if (!ces_try_run(&mx, section, &r))
      return;                           // held: by one who will look
  }
}

void net_unlock(void) {
  leave();
  if (use_spin) {
    spin_sections++;
    spin_unlock(&spin);
  } else {
    ces_unlock(&mx, &lock_node[this_hart()->index]);
    net_later();
  }
}

int net_run(void (*fn)(void *), void *arg, enum net_wait how) {
  if (use_spin) {                       // (as before: every caller spins)
    net_lock();
    fn(arg);
    net_unlock();
    return 1;
  }
  struct net_req r = { .fn = fn, .arg = arg };
  if (how == NET_TRY && tries_spin)
    how = NET_SPIN;
  if (how == NET_BLOCK) {
    ces_run(&mx, section, &r);
  } else if (how == NET_TRY) {
    if (tries_fail || !ces_try_run(&mx, section, &r)) {
      __atomic_fetch_add(&tries_busy, 1, __ATOMIC_RELAXED);
      return 0;
    }
  } else {
    ces_run_spin(&mx, section, &r);
  }
  net_later();
  return 1;
}

int net_submit(struct net_req *r, void (*fn)(void *), void *arg) {
  r->fn = fn;
  r->arg = arg;
  if (use_spin) {
    net_lock();
    fn(arg);
    net_unlock();
    return 1;
  }
  if (!ces_submit(&mx, &r->node, section, r))
    return 0;
  net_later();
  return 1;
}

int net_poll(struct net_req *r) {
  if (use_spin)
    return 1;
  if (!ces_poll(&mx, &r->node))
    return 0;
  net_later();
  return 1;
}

uint64_t net_lock_queued(void) {
  return __atomic_load_n(use_spin ? &spin_queued : &mx.queued, __ATOMIC_RELAXED);
}

uint64_t net_lock_tries_busy(void) { return __atomic_load_n(&tries_busy, __ATOMIC_RELAXED); }

// With the lock held: the mutex's counters are the holder's.
void net_lock_stats(struct net_stats *st) {
  st->lock_tries_busy = net_lock_tries_busy();
  if (use_spin) {
    st->lock_sections = spin_sections;
    st->lock_queued = __atomic_load_n(&spin_queued, __ATOMIC_RELAXED);
    st->lock_combined = st->lock_handoffs = 0;
    return;
  }
  st->lock_sections = mx.sections;
  st->lock_queued = __atomic_load_n(&mx.queued, __ATOMIC_RELAXED);
  st->lock_combined = mx.combined;
  st->lock_handoffs = mx.handoffs;
}
