// The network lock (net/netlock.c) under every kind of caller it has, on every
// hart the test runs with: stackful coroutines that sleep (NET_BLOCK), that
// spin on their request (NET_SPIN), that try first (NET_TRY, and NET_BLOCK
// if the lock was held) and that spin for the lock itself
// (net_lock/net_unlock); stackless ones through
// net_submit/net_poll and through a spinning net_run. The stack's own
// coroutines (receive, timer, loopback) may take the lock meanwhile. Waits
// for counts, never for time.
#include "ktest.h"
#include "hart.h"
#include "kco.h"
#include "klib.h"
#include "net.h"
#include "printf.h"
#include "../ces_check.h"

#define N_FUL 24                             // stackful
#define N_SL 8                               // stackless: half submit/poll, half spin
#define N_OPS 300
static struct ces_check chk;
static volatile uint32_t n_done, n_started;
static uint8_t ran[N_FUL + N_SL][N_OPS];
static uint64_t ticket[BOARD_MAX_HARTS];     // per hart: requests queued from it

_Static_assert(N_FUL + N_SL <= CES_CHECK_COS && BOARD_MAX_HARTS <= CES_CHECK_QUEUES,
               "ces_check.h sizes");

// A few hundred instructions, like a short lwIP call; and every 16th section
// on several harts holds on until another request has queued behind it (or a
// bounded number of polls has passed), so that requests are combined and the
// lock handed over even when the host runs the harts in turns.
static void section(void *arg) {
  struct ces_check_req *r = arg;
  ces_check_section(&chk, r);
  ran[r->co][r->seq]++;
  for (volatile int k = 0; k < 100; k++)
    ;
  if (r->seq % 16 == 0 && nharts_online > 1)
    for (uint64_t q = net_lock_queued(), k = 0; k < 10000 && net_lock_queued() == q; k++)
      ;
}

// The ticket is taken on the hart that queues the request just before it is
// queued: nothing else is queued from that hart in between (a caller that
// spins keeps the hart; one that sleeps has queued already).
static struct ces_check_req req(int co, int seq) {
  uint32_t q = this_hart()->index;
  return (struct ces_check_req){ .co = co, .seq = seq, .queue = q, .ticket = ++ticket[q] };
}

// Every worker waits for all to have started, so that the harts run them at
// the same time (otherwise the first hart could steal and finish most of them).
static int all_started(void) { return n_started == N_FUL + N_SL; }

static void stackful(void *arg) {
  int co = (int)(uintptr_t)arg;
  __atomic_fetch_add(&n_started, 1, __ATOMIC_SEQ_CST);
  while (!all_started())
    kco_yield();
  for (int i = 0; i < N_OPS; i++) {
    struct ces_check_req r = req(co, i);
    switch ((i + co) % 4) {
    case 0: net_run(section, &r, NET_BLOCK); break;
    case 1: net_run(section, &r, NET_SPIN); break;
    case 2:                       // (a failed try queues nothing: the order holds)
      if (!net_run(section, &r, NET_TRY))
        net_run(section, &r, NET_BLOCK);
      break;
    default:
      net_lock();
      section(&r);
      net_unlock();
    }
  }
  __atomic_fetch_add(&n_done, 1, __ATOMIC_SEQ_CST);
}

struct sl { int co, i, queued, spin, started; struct net_req nr; struct ces_check_req r; };
static struct sl sls[N_SL];

static int stackless(void *arg) {
  struct sl *w = arg;
  if (!w->started) {
    w->started = 1;
    __atomic_fetch_add(&n_started, 1, __ATOMIC_SEQ_CST);
  }
  if (!all_started())
    return CO_YIELD;
  for (;;) {
    if (w->queued) {
      if (!net_poll(&w->nr))
        return CO_PENDING;                  // woken early: still queued
      w->queued = 0;
      w->i++;
    }
    if (w->i == N_OPS) {
      __atomic_fetch_add(&n_done, 1, __ATOMIC_SEQ_CST);
      return CO_DONE;
    }
    w->r = req(w->co, w->i);
    if (w->spin)
      net_run(section, &w->r, NET_SPIN);
    else if (!net_submit(&w->nr, section, &w->r)) {
      w->queued = 1;
      return CO_PENDING;
    }
    if (++w->i % 8 == 0)
      return CO_YIELD;
  }
}

// Checks: no two sections overlap (the lock's own check would stop the
// kernel first), the counter equals the requests, each request ran exactly
// once, in its coroutine's order, and each hart's requests in the order that
// hart queued them (FIFO).
KTEST(netlock_exclusion_fifo_every_caller_kind) {
  struct net_stats before, after;
  net_get_stats(&before);
  n_done = n_started = 0;
  ces_check_reset(&chk);
  memset(ran, 0, sizeof ran);
  memset(ticket, 0, sizeof ticket);
  for (int i = 0; i < N_FUL; i++)
    KREQUIRE(kco_spawn_stackful_on(i % nharts_online, stackful, (void *)(uintptr_t)i,
                                   KTEST_PRIO, 0) > 0);
  for (int i = 0; i < N_SL; i++) {
    sls[i] = (struct sl){ .co = N_FUL + i, .spin = i % 2 };
    KREQUIRE(kco_spawn_on(i % nharts_online, stackless, &sls[i], KTEST_PRIO) > 0);
  }
  KREQUIRE(ktest_wait_count(&n_done, N_FUL + N_SL, KTEST_PATIENCE_MS));
  net_get_stats(&after);
  KCHECK_EQ(chk.counter, (N_FUL + N_SL) * N_OPS);
  KCHECK_EQ(chk.overlaps, 0);
  KCHECK_EQ(chk.order_errors, 0);
  KCHECK_EQ(chk.queue_order_errors, 0);
  int bad = 0;
  for (int i = 0; i < N_FUL + N_SL; i++)
    for (int k = 0; k < N_OPS; k++)
      bad += ran[i][k] != 1;
  KCHECK_EQ(bad, 0);
  // The stack's own sections may add to these, never take away.
  KCHECK(after.lock_sections - before.lock_sections >= (uint64_t)(N_FUL + N_SL) * N_OPS);
  kprintf("netlock stress: %u harts, %s, %lu sections, %lu found it held, %lu combined, "
          "%lu hand-offs\n", nharts_online, net_lock_is_spinlock() ? "spinlock" : "CES",
          after.lock_sections - before.lock_sections, after.lock_queued - before.lock_queued,
          after.lock_combined - before.lock_combined,
          after.lock_handoffs - before.lock_handoffs);
}

// A try never waits and never queues: with the lock held (here, by this very
// coroutine, so that a wait could only end in a deadlock) it returns 0 with
// the section not run and counts itself; with the lock free it runs the
// section at once. The way back (netlock=spin, the old spinlock) has no tries.
static int tried;
static void try_section(void *arg) { (*(int *)arg)++; }
KTEST(netlock_try_does_nothing_while_held) {
  if (net_lock_is_spinlock())
    return;
  tried = 0;
  uint64_t busy = net_lock_tries_busy();
  net_lock();
  int r = net_run(try_section, &tried, NET_TRY);
  net_unlock();
  KCHECK_EQ(r, 0);
  KCHECK_EQ(tried, 0);
  KCHECK(net_lock_tries_busy() >= busy + 1);
  // Free now, unless the stack's own coroutines take it meanwhile: then the
  // try fails as it should, and one more attempt is made later.
  for (int k = 0; k < 1000 && !net_run(try_section, &tried, NET_TRY); k++)
    kco_yield();
  KCHECK_EQ(tried, 1);
}
