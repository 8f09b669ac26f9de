// coptest: the COPS API inside a user process, on the executor shared through
// the vDSO. Checks priority order, FIFO within a priority, wake before block
// (both kinds), stale and foreign cids, reprio (also of a coroutine that
// yields to an equal), 10,000 live coroutines, and
// stackful coroutines that block deep in a call chain. One line per check, then
// "coptest: N passed, M failed"; the exit status is M.
#include "cops.h"
#include "stackful.h"
#include "ulib.h"
#include "utest.h"


static char why[128];
static void check_invariants(const char *name) {
  int r = cops_check(why, sizeof why);
  if (r)
    printf("coptest: invariant broken: %s\n", why);
  check(name, r, 0);
}

// ---- order: main blocks, the spawned coroutines run best priority first ----
#define ORDER_N 24
static int order_log[ORDER_N], order_len;
static cid_t main_cid;
struct id { int id; };
static struct id ids[ORDER_N];

static int order_poll(void *arg) {
  order_log[order_len++] = ((struct id *)arg)->id;
  if (order_len == ORDER_N)
    cops_wake(main_cid);
  return CO_DONE;
}

static void test_order(void) {
  order_len = 0;
  for (int i = 0; i < ORDER_N; i++) {
    int prio = 7 - i / 3;
    ids[i].id = prio * 10 + i % 3;
    cops_spawn(order_poll, &ids[i], (uint32_t)prio);
  }
  while (order_len < ORDER_N)
    cops_block();
  int ok = 1;
  for (int i = 0; i < ORDER_N; i++)
    ok &= order_log[i] == (i / 3) * 10 + i % 3;
  check("priority-order-and-fifo", ok, 1);
}

// ---- wake before block ----
static int selfwake_runs;
static int selfwake_poll(void *arg) {
  (void)arg;
  if (++selfwake_runs == 1) {
    cops_wake(cops_current());
    return CO_PENDING;
  }
  cops_wake(main_cid);
  return CO_DONE;
}

static void test_wake_before_block(void) {
  check("self-wake-remembered", cops_wake(cops_current()), 0);
  cops_block();                      // returns at once: the wake was remembered
  check("stackful-wake-before-block", 1, 1);
  selfwake_runs = 0;
  cops_spawn(selfwake_poll, 0, 3);
  while (selfwake_runs < 2)
    cops_block();
  check("stackless-wake-before-block", selfwake_runs, 2);
}

// ---- cids ----
static int quick_poll(void *arg) { (void)arg; return CO_DONE; }

static void test_cids(void) {
  int64_t old = cops_spawn(quick_poll, 0, 2);
  cops_yield();                      // main is priority 4: the new one runs first
  check("stale-cid-wake", cops_wake((cid_t)old), EXEC_ESTALE);
  check("stale-cid-reprio", cops_reprio((cid_t)old, 1), EXEC_ESTALE);
  check("cid-zero", cops_wake(CID_NONE), EXEC_ESTALE);
  check("cid-garbage", cops_wake(~(cid_t)0), EXEC_ESTALE);
  check("cid-huge-slot", cops_wake(((cid_t)1 << 32) | 0x7fffffff), EXEC_ESTALE);
  check("reprio-bad-priority", cops_reprio(cops_current(), COPS_NPRIO), EXEC_EINVAL);
  check("spawn-bad-priority", cops_spawn(quick_poll, 0, COPS_NPRIO), EXEC_EINVAL);
  // The loop takes stackful_poll to mean a stackful coroutine (its kind test):
  // a stackless one with that poll function would be switched into as one.
  check("spawn-stackful-poll-refused", cops_spawn(stackful_poll, 0, 2), EXEC_EINVAL);
  int64_t fresh = cops_spawn(quick_poll, 0, 2);
  check("slot-reused", (long)(uint32_t)fresh, (long)(uint32_t)old);
  check("reused-slot-new-cid", fresh != old, 1);
  cops_yield();
}

// ---- reprio ----
static int rp_log[2], rp_len;
static int rp_poll(void *arg) { rp_log[rp_len++] = ((struct id *)arg)->id; return CO_DONE; }

static void test_reprio(void) {
  static struct id a = { 1 }, b = { 2 };
  rp_len = 0;
  cops_spawn(rp_poll, &a, 6);
  int64_t cb = cops_spawn(rp_poll, &b, 7);
  check("reprio-ready", cops_reprio((cid_t)cb, 5), 0);
  cops_reprio(cops_current(), 7);    // let both run before main
  cops_yield();
  cops_reprio(cops_current(), COPS_MAIN_PRIO);
  check("reprio-moves-queue", rp_log[0] * 10 + rp_log[1], 21);
}

// ---- reprio of the running coroutine while the loop rotates two equals ----
// A and B at priority 2 yield to each other (run_loop's inline rotation). On
// its second turn A moves itself to 6 and yields: it must leave priority 2's
// queue for 6's, so that B finishes its turns, then main (4) runs before A's
// last turn. A loop that went on rotating A in the queue it had would run A
// again before B is done, and break the invariants.
static char rr_log[16];
static int rr_len, rr_a_runs, rr_b_runs;
static int rr_a_poll(void *arg) {
  (void)arg;
  rr_log[rr_len++] = 'a';
  if (++rr_a_runs == 2)
    cops_reprio(cops_current(), 6);
  return rr_a_runs == 3 ? CO_DONE : CO_YIELD;
}
static void rr_a_body(void *arg) {
  (void)arg;
  rr_log[rr_len++] = 'a';
  cops_yield();
  rr_log[rr_len++] = 'a';
  cops_reprio(cops_current(), 6);
  cops_yield();
  rr_log[rr_len++] = 'a';
}
static int rr_b_poll(void *arg) {
  (void)arg;
  rr_log[rr_len++] = 'b';
  return ++rr_b_runs == 3 ? CO_DONE : CO_YIELD;
}

static void test_reprio_rotating(int stackful) {
  rr_len = rr_a_runs = rr_b_runs = 0;
  if (stackful)
    cops_spawn_stackful(rr_a_body, 0, 2);
  else
    cops_spawn(rr_a_poll, 0, 2);
  cops_spawn(rr_b_poll, 0, 2);
  cops_yield();                      // A and B run (2 is better than main's 4)
  rr_log[rr_len] = 0;
  check(stackful ? "reprio-while-rotating-stackful" : "reprio-while-rotating",
        strcmp(rr_log, "ababb"), 0);
  check_invariants(stackful ? "reprio-while-rotating-stackful-invariants"
                            : "reprio-while-rotating-invariants");
  cops_reprio(cops_current(), 7);    // A's last turn, at 6
  cops_yield();
  cops_reprio(cops_current(), COPS_MAIN_PRIO);
  rr_log[rr_len] = 0;
  check(stackful ? "reprio-while-rotating-stackful-last" : "reprio-while-rotating-last",
        strcmp(rr_log, "ababba"), 0);
}

// ---- 10,000 coroutines alive at once ----
#define MANY 10000
static int many_go, many_done;
static int many_poll(void *arg) {
  (void)arg;
  if (!many_go)
    return CO_PENDING;
  if (++many_done == MANY)
    cops_wake(main_cid);
  return CO_DONE;
}

static void test_many(void) {
  static cid_t cids[MANY];
  many_go = many_done = 0;
  int spawned = 0;
  for (int i = 0; i < MANY; i++) {
    int64_t c = cops_spawn(many_poll, 0, (uint32_t)(i % COPS_NPRIO));
    if (c > 0)
      cids[spawned++] = (cid_t)c;
  }
  check("many-spawned", spawned, MANY);
  cops_reprio(cops_current(), 7);
  cops_yield();                      // all of them run once and block
  cops_reprio(cops_current(), COPS_MAIN_PRIO);
  struct exec_stats st;
  cops_stats(&st);
  check("many-blocked", st.blocked, MANY);
  check_invariants("many-invariants");
  many_go = 1;
  for (int i = 0; i < spawned; i++)
    cops_wake(cids[i]);
  while (many_done < MANY)
    cops_block();
  check("many-finished", many_done, MANY);
  cops_stats(&st);
  check("many-none-left", st.live, 1);   // main
}

// ---- stackful coroutines blocking deep in a call chain ----
#define DEPTH 40
static int deep_parked, deep_go, deep_ok;
static cid_t deep_cid[4];

static long descend(int level, long seed) {
  volatile long local[3] = { seed, seed * 7, level };
  long below;
  if (level == DEPTH) {
    deep_parked++;
    while (!deep_go)
      cops_block();
    below = 1;
  } else {
    below = descend(level + 1, seed * 31 + level);
  }
  return local[0] == seed && local[1] == seed * 7 && local[2] == level ? below + 1 : 0;
}

static void deep_body(void *arg) {
  if (descend(0, (long)(uintptr_t)arg) == DEPTH + 2)
    deep_ok++;
  cops_wake(main_cid);
}

static void test_deep(void) {
  deep_parked = deep_go = deep_ok = 0;
  for (int i = 0; i < 4; i++)
    deep_cid[i] = (cid_t)cops_spawn_stackful(deep_body, (void *)(uintptr_t)(i + 1), 3);
  while (deep_parked < 4)
    cops_yield();
  deep_go = 1;
  for (int i = 0; i < 4; i++)
    cops_wake(deep_cid[i]);
  while (deep_ok < 4)
    cops_block();
  check("stackful-deep-block", deep_ok, 4);
}

int main(void) {
  utest_prog = "coptest";
  main_cid = cops_current();
  printf("coptest: pid %d, main is coroutine %lx at priority %d\n", getpid(),
         (unsigned long)main_cid, COPS_MAIN_PRIO);
  test_order();
  test_wake_before_block();
  test_cids();
  test_reprio();
  test_reprio_rotating(0);
  test_reprio_rotating(1);
  test_many();
  test_deep();
  check_invariants("final-invariants");
  return utest_summary();
}
