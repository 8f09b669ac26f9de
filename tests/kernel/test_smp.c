// Executor lanes on several harts: migration of each coroutine kind, the bound
// on how long a better coroutine waits in another hart's lane, and no lost
// wakeup while coroutines are stolen. On one hart these tests have nothing to
// check and pass trivially (make test runs them at 1, 2, 4 and 8 harts).
#include "ktest.h"
#include "hart.h"
#include "kco.h"
#include "printf.h"
#include "riscv.h"
#include "timer.h"
#include "board.h"
#include "spinlock.h"
#include "uvm.h"
#include "palloc.h"

// ---- a hog: keeps one hart busy without yielding until released ----
static volatile uint32_t hog_on;        // hart index + 1 the hog runs on; 0: not yet
static volatile int hog_release;

static void hog(void *arg) {
  (void)arg;
  __atomic_store_n(&hog_on, this_hart()->index + 1, __ATOMIC_SEQ_CST);
  while (!__atomic_load_n(&hog_release, __ATOMIC_SEQ_CST))
    ;
  __atomic_store_n(&hog_on, 0, __ATOMIC_SEQ_CST);
}

// Occupy hart `h` with a priority-0 hog. The hog is queued in h's lane, but
// an idle hart may steal it first: then try again. Returns 1 once the hog
// runs on h. For another hart than this one, this hart waits holding itself:
// asleep, it would be the first idle hart to find the hog, and beside a host
// busy-loop it stole it from h at all 50 tries (CI, 8 harts).
static int occupy(uint32_t h) {
  for (int attempt = 0; attempt < 50; attempt++) {
    hog_release = 0;
    hog_on = 0;
    if (kco_spawn_stackful_on(h, hog, 0, 0, 0) < 0)
      return 0;
    if (h != this_hart()->index)
      ktest_spin_count(&hog_on, 1, KTEST_PATIENCE_MS);
    else
      ktest_wait_count(&hog_on, 1, KTEST_PATIENCE_MS);
    if (__atomic_load_n(&hog_on, __ATOMIC_SEQ_CST) == h + 1)
      return 1;
    __atomic_store_n(&hog_release, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&hog_on, __ATOMIC_SEQ_CST))
      kco_sleep_ms(1);
  }
  return 0;
}

static void release(void) {
  __atomic_store_n(&hog_release, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&hog_on, __ATOMIC_SEQ_CST))
    kco_sleep_ms(1);
  kco_sleep_ms(5);          // let the hog's coroutine finish and be freed
}

static uint64_t steals(void) {
  struct exec_stats es;
  exec_get_stats(&kexec, &es);
  return es.steals;
}

// ---- migration: block on one hart, resume on another ----
struct mover {
  cid_t cid;
  volatile uint32_t runs;
  volatile uint32_t hart[2];       // where it ran before and after the block
  volatile uint32_t canary;        // a stack value that must survive the move
  uint32_t home;                   // the hart it blocked on, kept busy by the hog
  int ready;                       // blocked, and home occupied
};

static void stackful_mover(void *arg) {
  struct mover *m = arg;
  uint32_t local = 0xc0ffee;       // lives on this coroutine's stack
  m->hart[0] = this_hart()->index;
  __atomic_store_n(&m->runs, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&m->runs, __ATOMIC_SEQ_CST) < 2)
    kco_block();                   // (spurious wakes just look again)
  m->hart[1] = this_hart()->index;  // this_hart() again: never kept across a block
  m->canary = local;
  __atomic_store_n(&m->runs, 3, __ATOMIC_SEQ_CST);
}

static int stackless_mover(void *arg) {
  struct mover *m = arg;
  uint32_t r = __atomic_load_n(&m->runs, __ATOMIC_SEQ_CST);
  if (r == 0) {
    m->hart[0] = this_hart()->index;
    __atomic_store_n(&m->runs, 1, __ATOMIC_SEQ_CST);
    return CO_PENDING;
  }
  if (r < 2)
    return CO_PENDING;
  m->hart[1] = this_hart()->index;
  m->canary = 0xc0ffee;
  __atomic_store_n(&m->runs, 3, __ATOMIC_SEQ_CST);
  return CO_DONE;
}

// Spawn a mover, let it block at home, and occupy home with the hog: on
// success m->home is set and m->ready is 1 (the caller sets runs to 2, wakes
// it, then calls mover_done).
static void mover_blocked_at_busy_home(struct mover *m, int stackful) {
  *m = (struct mover){0};
  int64_t cid = stackful ? kco_spawn_stackful(stackful_mover, m, 2, 0)
                         : kco_spawn(stackless_mover, m, 2);
  KREQUIRE(cid > 0);
  m->cid = (cid_t)cid;
  KREQUIRE(ktest_wait_count(&m->runs, 1, KTEST_PATIENCE_MS));
  kco_sleep_ms(2);                 // it has blocked (a stackful one right after runs = 1)
  m->home = m->hart[0];
  KREQUIRE(occupy(m->home));
  m->ready = 1;
}

// The woken mover ran, away from its busy home, with its stack intact.
static void mover_done(struct mover *m) {
  int ok = ktest_wait_count(&m->runs, 3, KTEST_PATIENCE_MS);
  release();
  KREQUIRE(ok);
  KCHECK(m->hart[1] != m->home);
  KCHECK_EQ(m->canary, 0xc0ffee);
}

static void migrate(int stackful) {
  if (nharts_online < 2)
    return;
  static struct mover m;
  mover_blocked_at_busy_home(&m, stackful);
  KREQUIRE(m.ready);
  // Its home hart is busy with a hog that never yields: the wake queues it
  // there and kicks an idle hart, which steals it. (kco_wake_home: kco_wake
  // from this hart, which has nothing else ready, would bring it here instead;
  // smp_wake_affine tests that.)
  uint64_t before = steals();
  __atomic_store_n(&m.runs, 2, __ATOMIC_SEQ_CST);
  kco_wake_home(m.cid);
  mover_done(&m);
  KCHECK(steals() > before);
}

KTEST(smp_migrate_stackful) { migrate(1); }
KTEST(smp_migrate_stackless) { migrate(0); }

// Let a blocked mover go on (runs = 2) and wake it with kco_wake from this
// hart; returns how many wakes that moved to this hart's lane (wake-affine).
static uint64_t release_mover_here(struct mover *m) {
  __atomic_store_n(&m->runs, 2, __ATOMIC_SEQ_CST);
  intr_off();                      // (no interrupt on this hart wakes anything in between)
  struct hart *h = this_hart();
  uint64_t here0 = h->wakes_here;
  kco_wake(m->cid);
  uint64_t here = h->wakes_here - here0;
  intr_on();
  return here;
}

// ---- wake-affine: a hart with nothing else ready takes what it wakes ----
// A coroutine blocked at home on a hart a hog keeps busy, woken by kco_wake
// from this coroutine's hart (whose lane is empty: this coroutine is running,
// not queued): the wake moves it to this hart's lane (counted in wakes_here)
// and it runs away from home. Without the rule it would wait at home for a
// kicked hart to steal it (smp_migrate_* test that path, with kco_wake_home).
static void wake_affine(int stackful) {
  if (nharts_online < 2)
    return;
  static struct mover m;
  mover_blocked_at_busy_home(&m, stackful);
  KREQUIRE(m.ready);
  KCHECK_EQ(release_mover_here(&m), 1);
  mover_done(&m);
}

KTEST(smp_wake_affine_stackful) { wake_affine(1); }
KTEST(smp_wake_affine_stackless) { wake_affine(0); }

// ---- a busy hart's tick hands on what waits behind it ----
// This hart wakes a blocked mover (wake-affine: into this hart's own lane,
// with no kick) and then keeps the hart, interrupts on, without yielding.
// Only this hart's tick sends an idle hart to steal the mover (sched_tick,
// once the hart has not slept since its last tick: the second tick at most);
// without it the mover would wait for this coroutine to give the hart up.
KTEST(smp_tick_hands_on_work_behind_a_long_coroutine) {
  if (nharts_online < 2)
    return;
  static struct mover m;
  // The wake is wake-affine only if this hart's lane is empty just then (on
  // four harts or more, another test's leftovers or a stolen coroutine may
  // sit in it); a wake that went home kicked a hart itself, which proves
  // nothing here, so that attempt is let finish and made again.
  for (int attempt = 0; attempt < 20; attempt++) {
    m = (struct mover){0};
    int64_t cid = kco_spawn(stackless_mover, &m, 2);
    KREQUIRE(cid > 0);
    m.cid = (cid_t)cid;
    KREQUIRE(ktest_wait_count(&m.runs, 1, KTEST_PATIENCE_MS));
    kco_sleep_ms(2);               // it has blocked
    uint64_t here = release_mover_here(&m);
    uint32_t self = this_hart()->index;   // (this coroutine keeps its hart from here on)
    if (here != 1) {
      KREQUIRE(ktest_wait_count(&m.runs, 3, KTEST_PATIENCE_MS));
      kco_sleep_ms(2);             // let it be freed before m is reused
      continue;
    }
    int ran = ktest_spin_count(&m.runs, 3, KTEST_PATIENCE_MS);   // hold the hart: only ticks come
    if (!ran)
      ktest_wait_count(&m.runs, 3, KTEST_PATIENCE_MS);   // let it finish before m goes
    KCHECK(ran);
    KCHECK(!ran || m.hart[1] != self);
    kco_sleep_ms(2);
    return;
  }
  KCHECK(!"no wake was wake-affine in 20 attempts");
}

// ---- the steal bound ----
// Hart A runs a priority-6 coroutine that yields in a loop; a priority-1
// coroutine is queued in the lane of hart B, which a hog keeps busy. A's next
// dispatch sees the better bit in the union and steals it (or an idle hart
// does first). So the yielder may start at most one turn -- the one in
// progress when the better coroutine was queued -- while that coroutine is
// still READY. The yielder checks it itself at the start of each turn, by the
// better coroutine's state, so a host that stalls a vCPU thread for a while
// cannot make the test fail (or pass) by timing. The wait, in timebase
// ticks, is printed.
static volatile uint32_t low_running, high_ran, late_turns;
static volatile int low_stop;
static volatile cid_t high_cid;
static volatile uint64_t queued_at, ran_at;

static void low_yielder(void *arg) {
  (void)arg;
  __atomic_store_n(&low_running, this_hart()->index + 1, __ATOMIC_SEQ_CST);
  while (!__atomic_load_n(&low_stop, __ATOMIC_SEQ_CST)) {
    cid_t h = __atomic_load_n(&high_cid, __ATOMIC_SEQ_CST);
    struct co *c = h ? exec_lookup(&kexec, h) : 0;
    if (c && __atomic_load_n(&c->state, __ATOMIC_SEQ_CST) == CO_READY)
      __atomic_fetch_add(&late_turns, 1, __ATOMIC_SEQ_CST);
    kco_yield();
  }
  __atomic_store_n(&low_running, 0, __ATOMIC_SEQ_CST);
}

static int high_once(void *arg) {
  (void)arg;
  ran_at = rdtime();
  __atomic_store_n(&high_ran, 1, __ATOMIC_SEQ_CST);
  return CO_DONE;
}

KTEST(smp_steal_bound) {
  if (nharts_online < 2)
    return;
  // B: some hart other than this one; the hog holds it.
  uint32_t b = (this_hart()->index + 1) % nharts_online;
  KREQUIRE(occupy(b));
  low_running = high_ran = late_turns = 0;
  low_stop = 0;
  high_cid = 0;
  int64_t y = kco_spawn_stackful(low_yielder, 0, 6, 0);
  if (y < 0) {
    release();
    KREQUIRE(y > 0);
  }
  int started = ktest_wait_count(&low_running, 1, KTEST_PATIENCE_MS);
  kco_sleep_ms(2);                 // the yielder is in its loop
  queued_at = rdtime();
  int64_t h = kco_spawn_on(b, high_once, 0, 1);
  if (h > 0)
    __atomic_store_n(&high_cid, (cid_t)h, __ATOMIC_SEQ_CST);
  int ran = h > 0 && ktest_wait_count(&high_ran, 1, KTEST_PATIENCE_MS);
  __atomic_store_n(&low_stop, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&low_running, __ATOMIC_SEQ_CST))
    kco_sleep_ms(1);
  release();
  KREQUIRE(started);
  KREQUIRE(ran);
  KCHECK(late_turns <= 1);
  kprintf("smp_steal_bound: waited %lu timebase ticks, %u yielder turns while it was ready\n",
          (unsigned long)(ran_at - queued_at), late_turns);
}

// ---- no lost wakeup while coroutines move between lanes ----
// Pairs of stackless coroutines hand a token back and forth by waking each
// other, spread over every hart's lane. Harts steal them (a wake queues one in
// its home lane, an idle hart takes it), so wakes race with steals; every
// pair must finish all its rounds.
#define PAIRS 8
#define ROUNDS 400
struct pp {
  cid_t peer;
  volatile uint32_t *token;        // shared by the pair: whose turn, and how far
  uint32_t side;
};
static struct pp pps[PAIRS * 2];
static volatile uint32_t tokens[PAIRS];
static volatile uint32_t pairs_done, pp_exited;

static int pp_poll(void *arg) {
  struct pp *p = arg;
  uint32_t t = __atomic_load_n(p->token, __ATOMIC_SEQ_CST);
  if (t >= 2 * ROUNDS) {
    kco_wake(p->peer);             // let the other side see the end too
    __atomic_fetch_add(&pp_exited, 1, __ATOMIC_SEQ_CST);
    return CO_DONE;
  }
  if (t % 2 != p->side)
    return CO_PENDING;             // not our turn: the peer wakes us
  __atomic_store_n(p->token, t + 1, __ATOMIC_SEQ_CST);
  if (t + 1 == 2 * ROUNDS)
    __atomic_fetch_add(&pairs_done, 1, __ATOMIC_SEQ_CST);
  kco_wake(p->peer);
  if (t + 1 < 2 * ROUNDS)
    return CO_PENDING;
  __atomic_fetch_add(&pp_exited, 1, __ATOMIC_SEQ_CST);
  return CO_DONE;
}

KTEST(smp_no_lost_wakeup_under_steals) {
  pairs_done = pp_exited = 0;
  uint64_t before = steals();
  for (int i = 0; i < PAIRS; i++) {
    tokens[i] = 0;
    for (int s = 0; s < 2; s++) {
      pps[2 * i + s].token = &tokens[i];
      pps[2 * i + s].side = (uint32_t)s;
    }
  }
  // Spawn both sides before either can run: hold the hart (no block) while
  // spawning, and give each side its peer's cid before anything runs.
  cid_t cids[PAIRS * 2];
  uint32_t n = nharts_online;
  for (int i = 0; i < PAIRS * 2; i++) {
    int64_t c = kco_spawn_on((uint32_t)i % n, pp_poll, &pps[i], 3);
    KREQUIRE(c > 0);
    cids[i] = (cid_t)c;
  }
  for (int i = 0; i < PAIRS; i++) {
    pps[2 * i].peer = cids[2 * i + 1];
    pps[2 * i + 1].peer = cids[2 * i];
  }
  // A side that ran before its peer's cid was set returned PENDING having
  // woken cid 0 (stale): start every pair again now that both are known.
  for (int i = 0; i < PAIRS * 2; i++)
    kco_wake(cids[i]);
  KCHECK(ktest_wait_count(&pairs_done, PAIRS, KTEST_PATIENCE_MS));
  KCHECK(ktest_wait_count(&pp_exited, 2 * PAIRS, KTEST_PATIENCE_MS));
  kco_sleep_ms(5);                 // the last ones return from poll and are freed
  if (n > 1)
    kprintf("smp_no_lost_wakeup_under_steals: %lu steals\n", (unsigned long)(steals() - before));
}

// ---- the console's `locks` table counts a spinlock found held ----
// This coroutine holds a lock (interrupts masked on its hart) while a
// coroutine on another hart asks for it, then lets go; the asker's wait must
// be counted under the lock's name. The asker is started before the lock is
// taken and waits for the word to go: a hart's IPIs wait for its last
// spin_unlock (kernel/spinlock.c), so an asker spawned with the lock held
// would not even be started on an idle hart before the unlock. The asker
// says when it is about to take the lock, and this side holds on a
// millisecond past that; a host that stalls the asker's vCPU across that
// millisecond makes one round count nothing, so the test tries up to 20
// rounds and needs one counted wait.
static const char held_name[] = "ktest-held";
static struct spinlock held_lock = SPINLOCK_INIT(held_name);
static volatile uint32_t asker_started, asker_go, asker_ready, asker_done;

static void asker(void *arg) {
  (void)arg;
  __atomic_store_n(&asker_started, 1, __ATOMIC_SEQ_CST);
  while (!__atomic_load_n(&asker_go, __ATOMIC_SEQ_CST))
    ;
  __atomic_store_n(&asker_ready, 1, __ATOMIC_SEQ_CST);
  spin_lock(&held_lock);
  spin_unlock(&held_lock);
  __atomic_store_n(&asker_done, 1, __ATOMIC_SEQ_CST);
}

KTEST(smp_spinlock_found_held_is_counted) {
  if (nharts_online < 2)
    return;
  uint64_t waits0 = spin_waits(held_name);
  int counted = 0;
  for (int round = 0; round < 20 && !counted; round++) {
    asker_started = asker_go = asker_ready = asker_done = 0;
    uint32_t other = (this_hart()->index + 1) % nharts_online;
    KREQUIRE(kco_spawn_stackful_on(other, asker, 0, 0, 0) >= 0);
    // Wait on the clock, not by sleeping: a sleep would leave this hart idle,
    // and it might steal the asker, which would then spin where this side
    // could never run again. (With the lock held, interrupts are masked too.)
    uint64_t ms = board.timebase_hz / 1000, give_up = rdtime() + KTEST_PATIENCE_MS * ms;
    while (!__atomic_load_n(&asker_started, __ATOMIC_SEQ_CST) && rdtime() < give_up)
      ;
    KREQUIRE(asker_started);
    spin_lock(&held_lock);
    __atomic_store_n(&asker_go, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&asker_ready, __ATOMIC_SEQ_CST) && rdtime() < give_up)
      ;
    for (uint64_t until = rdtime() + ms; rdtime() < until;)
      ;
    spin_unlock(&held_lock);
    KREQUIRE(ktest_wait_count(&asker_done, 1, KTEST_PATIENCE_MS));
    counted = spin_waits(held_name) > waits0;
  }
  KCHECK(counted);
}

// ---- a heap shrink waits for a copy to user memory in flight elsewhere ----
// A copier on another hart enters a user copy (uvm_copy_enter, as copyout
// does after its walk found the page mapped), sees the page's leaf go
// invalid (the shrink has begun), and stays in the copy for 20 ms more. The
// shrink (uvm_dealloc) must not return, and free the page, before the copy
// is over. Without the wait (wait_for_user_copies in kernel/uvm.c) it
// returned at once. As above, this side waits on the clock, so that its hart
// never sleeps and steals the copier.
static pte_t *volatile copy_root;
static volatile uint32_t copier_in, copier_done;
static volatile int shrink_returned, freed_during_copy;

static void copier(void *arg) {
  uint64_t va = (uint64_t)arg, ms = board.timebase_hz / 1000;
  uvm_copy_enter();
  __atomic_store_n(&copier_in, 1, __ATOMIC_SEQ_CST);
  volatile pte_t *leaf = pt_leaf(copy_root, va);
  uint64_t give_up = rdtime() + KTEST_PATIENCE_MS * ms;
  while ((*leaf & PTE_V) && rdtime() < give_up)
    ;
  for (uint64_t until = rdtime() + 20 * ms; rdtime() < until;)
    if (__atomic_load_n(&shrink_returned, __ATOMIC_SEQ_CST))
      freed_during_copy = 1;
  uvm_copy_exit();
  __atomic_store_n(&copier_done, 1, __ATOMIC_SEQ_CST);
}

KTEST(smp_shrink_waits_for_user_copy) {
  if (nharts_online < 2)
    return;
  const uint64_t va = 0x100000;
  copy_root = uvm_create();
  KREQUIRE(copy_root != 0);
  KREQUIRE(uvm_alloc(copy_root, va, va + PAGE_SIZE, PTE_R | PTE_W) == 0);
  copier_in = copier_done = 0;
  shrink_returned = freed_during_copy = 0;
  uint32_t other = (this_hart()->index + 1) % nharts_online;
  KREQUIRE(kco_spawn_stackful_on(other, copier, (void *)va, 0, 0) >= 0);
  uint64_t ms = board.timebase_hz / 1000, give_up = rdtime() + KTEST_PATIENCE_MS * ms;
  while (!__atomic_load_n(&copier_in, __ATOMIC_SEQ_CST) && rdtime() < give_up)
    ;
  KREQUIRE(copier_in);
  uvm_dealloc(copy_root, va, va + PAGE_SIZE);
  __atomic_store_n(&shrink_returned, 1, __ATOMIC_SEQ_CST);
  KREQUIRE(ktest_wait_count(&copier_done, 1, KTEST_PATIENCE_MS));
  KCHECK(!freed_during_copy);
  uvm_free(copy_root);
}
