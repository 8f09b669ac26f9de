// Parking idle harts (kernel/park.c): a hart idle for park_ms folds its lane
// into lane 0 and waits outside the executor; a spawn aimed at it, or a busy
// hart's tick with work waiting, starts it again; coroutines keep running
// and no wake is lost while lanes fold and grow under them. Each test sets
// its own park_ms, and leaves every hart running and park_ms as it was. On
// one hart there is nothing to park: the tests pass trivially.
#include "ktest.h"
#include "hart.h"
#include "kco.h"
#include "park.h"
#include "printf.h"
#include "riscv.h"
#include "timer.h"
#include "board.h"

static int64_t nothing(void *arg) {
  (void)arg;
  return 0;
}

// Parking as the boot left it (bootargs park_ms), and every hart started.
static uint32_t boot_delay_ms;

static void all_awake(void) {
  park_set_delay_ms(boot_delay_ms);
  park_hold_awake(nharts_online - 1, nothing, 0);
}

static uint64_t total(uint64_t *(*field)(struct hart *)) {
  uint64_t n = 0;
  for (uint32_t i = 0; i < nharts_online; i++)
    n += *field(&harts[i]);
  return n;
}
static uint64_t *parks_of(struct hart *h) { return &h->parks; }
static uint64_t *unparks_of(struct hart *h) { return &h->unparks; }

// Sleep until only hart 0 is awake, or the patience runs out. In naps
// longer than the tests' park_ms: the body may have been stolen by another
// hart meanwhile (woken while hart 0 was busy), and a hart it woke every
// millisecond would never look idle; between longer naps that hart parks,
// handing the nap's deadline to hart 0, which the body then wakes on.
static int wait_all_parked(void) {
  uint64_t deadline = rdtime() + KTEST_PATIENCE_MS * board.timebase_hz / 1000;
  while (park_harts_awake() > 1 && rdtime() < deadline)
    kco_sleep_ms(20);
  if (park_harts_awake() != 1) {
    uint64_t now = rdtime();
    for (uint32_t i = 0; i < nharts_online; i++) {
      struct hart *h = &harts[i];
      kprintf("park: hart %u: dispatches %lu (%lu at idle), idle %lu ms, timers %u, idling %d, "
              "waits %lu, parks %lu, cur %p\n", i, h->dispatches, h->park_dispatches,
              (now - h->idle_since) * 1000 / board.timebase_hz, h->ntimers, h->idling,
              h->idle_wfi, h->parks, (void *)h->cur);
    }
  }
  return park_harts_awake() == 1;
}

static volatile uint32_t ran_on;   // hart index + 1

// Run body on hart 0, the one hart that never parks (the harts fold from the
// top): the test's own coroutine may run anywhere, and a hart that runs it
// never looks idle for long. This coroutine holds its hart until the body has
// started, so that only hart 0, asleep, can take it; then it blocks with no
// timer of its own (a deadline in a hart's heap keeps it from parking) until
// the body wakes it. (The runner's time limit is the safety net.)
// Another idle hart may take the body from hart 0's lane first (on eight
// harts, now and then): then it returns at once and is spawned again.
static volatile uint32_t body_started, body_done, body_elsewhere;
static volatile cid_t body_waiter;

static void body_main(void *arg) {
  __atomic_store_n(&body_started, 1, __ATOMIC_SEQ_CST);
  if (this_hart()->index == 0)
    ((void (*)(void))arg)();
  else
    __atomic_store_n(&body_elsewhere, 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&body_done, 1, __ATOMIC_SEQ_CST);
  kco_wake(body_waiter);
}

static void on_hart0(void (*body)(void)) {
  boot_delay_ms = park_delay_ms();
  for (int attempt = 0; attempt < 50; attempt++) {
    body_started = body_done = body_elsewhere = 0;
    body_waiter = kco_current();
    int64_t cid = kco_spawn_stackful_on(0, body_main, (void *)body, KTEST_PRIO, 0);
    KREQUIRE(cid > 0);
    if (this_hart()->index != 0)
      ktest_spin_count(&body_started, 1, KTEST_PATIENCE_MS);
    while (!__atomic_load_n(&body_done, __ATOMIC_SEQ_CST))
      kco_block();
    kco_sleep_ms(2);             // the body's coroutine is freed
    if (!body_elsewhere)
      return;
  }
  KCHECK(!"the body never ran on hart 0 in 50 attempts");
}

static int record_hart(void *arg) {
  (void)arg;
  __atomic_store_n(&ran_on, this_hart()->index + 1, __ATOMIC_SEQ_CST);
  return CO_DONE;
}

static void idle_harts_fold_and_a_spawn_starts_them_body(void) {
  uint64_t parks = total(parks_of), unparks = total(unparks_of);
  park_set_delay_ms(5);
  int parked = wait_all_parked();
  char why[96] = "";
  int ok = exec_check(&kexec, why, sizeof why) == 0;
  // This hart's first step after the last fold turns the one-lane steps on
  // (back_to_one_lane in vdso/executor.c); the fold may have come after its
  // last one.
  kco_yield();
  uint32_t multi = kexec.multi;
  // A spawn aimed at the highest hart starts every hart up to it; this hart
  // holds itself meanwhile (idle, it would take the coroutine first).
  ran_on = 0;
  uint32_t top = nharts_online - 1;
  int64_t cid = kco_spawn_on(top, record_hart, 0, 3);
  int ran = cid > 0 && ktest_spin_count(&ran_on, 1, KTEST_PATIENCE_MS);
  uint32_t awake = park_harts_awake();
  all_awake();
  KREQUIRE(parked);
  KCHECK(ok);
  if (!ok)
    kprintf("park: exec_check with the harts parked: %s\n", why);
  KCHECK_EQ(multi, 0);                      // one lane left: the one-lane steps
  KCHECK(total(parks_of) >= parks + top);   // every other hart parked
  KREQUIRE(ran);
  KCHECK(ran_on >= 2);                      // not on this hart (0) but a started one
  KCHECK_EQ(awake, nharts_online);
  KCHECK(total(unparks_of) >= unparks + top);
  kco_sleep_ms(2);                          // the coroutine is freed
}

KTEST(park_idle_harts_fold_and_a_spawn_starts_them) {
  if (nharts_online >= 2)
    on_hart0(idle_harts_fold_and_a_spawn_starts_them_body);
}

// ---- a busy hart's tick starts a parked hart for the work behind it ----
// Every other hart parked, this coroutine queues a stackless one in its own
// lane and keeps the hart, interrupts on, without yielding: no hart is idle
// to be kicked, so only the tick's park_tick can get the queued one run.
static void busy_tick_starts_a_parked_hart_body(void) {
  park_set_delay_ms(5);
  int parked = wait_all_parked();
  uint64_t unparks = total(unparks_of);
  ran_on = 0;
  int64_t cid = kco_spawn(record_hart, 0, 3);
  int ran = cid > 0 && ktest_spin_count(&ran_on, 1, KTEST_PATIENCE_MS);
  uint32_t self = this_hart()->index;
  if (!ran)
    ktest_wait_count(&ran_on, 1, KTEST_PATIENCE_MS);
  all_awake();
  KREQUIRE(parked);
  KCHECK(ran);
  KCHECK(ran_on != self + 1);
  KCHECK(total(unparks_of) > unparks);
  kco_sleep_ms(2);
}

KTEST(park_busy_tick_starts_a_parked_hart) {
  if (nharts_online >= 2)
    on_hart0(busy_tick_starts_a_parked_hart_body);
}

// ---- no lost wakeup while lanes fold and grow ----
// Pairs of stackful coroutines hand a token back and forth by waking each
// other, spread over the harts, in phases. At the end of a phase every
// coroutine is blocked, most in the lanes of harts that then park (park_ms
// is 1), so their lanes fold into lane 0 with them; the next phase's wakes
// find them there, and the load starts the harts again (a busy hart's tick),
// (or, if hart 0 gets through it alone first, the test itself), which
// steal them back. Within a phase, now and then one side sleeps a few
// milliseconds with the token, so that harts also park and start while the
// pairs run. This coroutine checks the executor's invariants throughout;
// every pair must finish all its rounds.
#define PAIRS 4
#define PHASES 6
#define ROUNDS_PER_PHASE 40
struct pf {
  cid_t peer;
  volatile uint32_t *token;
  uint32_t side;
};
static struct pf pfs[PAIRS * 2];
static volatile uint32_t pf_tokens[PAIRS];
static volatile uint32_t pf_done, pf_phase_end;

static void pf_main(void *arg) {
  struct pf *p = arg;
  while (!__atomic_load_n(&p->peer, __ATOMIC_SEQ_CST))
    kco_block();                   // until the peers are known (a wake says so)
  for (;;) {
    uint32_t t = __atomic_load_n(p->token, __ATOMIC_SEQ_CST);
    if (t >= 2 * ROUNDS_PER_PHASE * PHASES)
      break;
    if (t % 2 != p->side || t >= __atomic_load_n(&pf_phase_end, __ATOMIC_SEQ_CST)) {
      kco_block();                 // the peer's turn, or the phase's end: a wake says when
      continue;
    }
    if (t % 32 == p->side)
      kco_sleep_ms(3);             // a pause: the other harts go idle and park
    __atomic_store_n(p->token, t + 1, __ATOMIC_SEQ_CST);
    kco_wake(p->peer);
  }
  kco_wake(p->peer);               // the end, for a peer that blocked meanwhile
  __atomic_fetch_add(&pf_done, 1, __ATOMIC_SEQ_CST);
}

static int phase_over(uint32_t end) {
  for (int i = 0; i < PAIRS; i++)
    if (__atomic_load_n(&pf_tokens[i], __ATOMIC_SEQ_CST) < end)
      return 0;
  return 1;
}

static void no_lost_wakeup_while_lanes_fold_body(void) {
  uint64_t parks = total(parks_of), unparks = total(unparks_of);
  pf_done = 0;
  pf_phase_end = 0;
  cid_t cids[PAIRS * 2];
  for (int i = 0; i < PAIRS; i++) {
    pf_tokens[i] = 0;
    for (int s = 0; s < 2; s++)
      pfs[2 * i + s] = (struct pf){ 0, &pf_tokens[i], (uint32_t)s };
  }
  park_set_delay_ms(1);
  for (int i = 0; i < PAIRS * 2; i++) {
    int64_t c = kco_spawn_stackful_on((uint32_t)i % nharts_online, pf_main, &pfs[i], 3, 0);
    KREQUIRE(c > 0);
    cids[i] = (cid_t)c;
  }
  for (int i = 0; i < PAIRS; i++) {
    __atomic_store_n(&pfs[2 * i].peer, cids[2 * i + 1], __ATOMIC_SEQ_CST);
    __atomic_store_n(&pfs[2 * i + 1].peer, cids[2 * i], __ATOMIC_SEQ_CST);
  }
  uint64_t deadline = rdtime() + KTEST_PATIENCE_MS * board.timebase_hz / 1000;
  int bad = 0, all_parked = 0;
  char why[96] = "";
  for (uint32_t phase = 1; phase <= PHASES && rdtime() < deadline; phase++) {
    uint32_t end = 2 * ROUNDS_PER_PHASE * phase;
    __atomic_store_n(&pf_phase_end, end, __ATOMIC_SEQ_CST);
    for (int i = 0; i < PAIRS * 2; i++)
      kco_wake(cids[i]);
    // The pairs' wakes queued them all in lane 0, which this hart alone might
    // get through before a tick: start every hart, as a spawn aimed at the
    // highest would, so that they steal the pairs back while they run.
    park_hold_awake(nharts_online - 1, nothing, 0);
    while (!phase_over(end) && rdtime() < deadline) {
      if (!bad && exec_check(&kexec, why, sizeof why) != 0)
        bad = 1;
      kco_sleep_ms(1);
    }
    if (phase < PHASES) {
      all_parked += wait_all_parked();   // every pair blocked, the lanes fold
      if (!bad && exec_check(&kexec, why, sizeof why) != 0)
        bad = 1;
    }
  }
  while (__atomic_load_n(&pf_done, __ATOMIC_SEQ_CST) < PAIRS * 2 && rdtime() < deadline)
    kco_sleep_ms(1);
  uint32_t done = pf_done;
  if (done != PAIRS * 2) {
    kprintf("park: phase end %u, %u harts awake\n", pf_phase_end, park_harts_awake());
    for (int i = 0; i < PAIRS * 2; i++) {
      struct co *c = exec_lookup(&kexec, cids[i]);
      kprintf("park: pair %d side %d token %u: state %d lane %u flags %u\n", i / 2, i % 2,
              pf_tokens[i / 2], c ? c->state : -1, c ? c->lane : 0, c ? c->flags : 0);
    }
  }
  all_awake();
  KCHECK(!bad);
  if (bad)
    kprintf("park: exec_check while lanes fold: %s\n", why);
  KCHECK_EQ(done, PAIRS * 2);
  KCHECK_EQ(all_parked, PHASES - 1);
  kprintf("park_no_lost_wakeup_while_lanes_fold: %lu parks, %lu starts\n",
          (unsigned long)(total(parks_of) - parks), (unsigned long)(total(unparks_of) - unparks));
  KCHECK(total(parks_of) >= parks + (PHASES - 1) * (nharts_online - 1));
  kco_sleep_ms(5);                 // the last ones are freed
}

KTEST(park_no_lost_wakeup_while_lanes_fold) {
  if (nharts_online >= 2)
    on_hart0(no_lost_wakeup_while_lanes_fold_body);
}
