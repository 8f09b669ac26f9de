// Host unit tests of the COPS executor (vdso/executor.c), under ASan + UBSan.
#include "check.h"
#include "executor.h"
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <stdint.h>

static char why[160];

// A coroutine body that records the order in which coroutines run.
struct rec { int id; int *log; int *n; int result; };
static int rec_poll(void *arg) {
  struct rec *r = arg;
  r->log[(*r->n)++] = r->id;
  return r->result;
}

// Drive the executor single-threaded until nothing is ready.
static int drain(struct executor *ex, int limit) {
  struct co *prev = 0;
  int res = 0, n = 0;
  struct co *c;
  while ((c = exec_next(ex, prev, res)) && n < limit) {
    res = c->poll(c->arg);
    prev = c;
    n++;
  }
  if (c) {   // stopped by the limit: settle the one we took as if it yielded
    exec_next(ex, c, CO_YIELD);
  }
  return n;
}

// Spawn k recording coroutines with ids 0..k-1 at priority prio, each
// returning result; their cids in cid (if not 0).
static void spawn_recs(struct executor *ex, struct rec *r, cid_t *cid, int k, int *log, int *n,
                       uint32_t prio, int result) {
  for (int i = 0; i < k; i++) {
    r[i] = (struct rec){ i, log, n, result };
    int64_t id = exec_spawn(ex, rec_poll, &r[i], prio, CO_STACKLESS);
    CHECK(id > 0);
    if (cid)
      cid[i] = (cid_t)id;
  }
}

static void test_init_rejects_bad_args(void) {
  struct executor ex;
  CHECK_EQ(exec_init(&ex, 0, malloc, free), EXEC_EINVAL);
  CHECK_EQ(exec_init(&ex, NPRIO_MAX + 1, malloc, free), EXEC_EINVAL);
  CHECK_EQ(exec_init(&ex, NPRIO_MAX, malloc, free), 0);
  CHECK_EQ(exec_spawn(&ex, rec_poll, 0, NPRIO_MAX, CO_STACKLESS), EXEC_EINVAL);
  CHECK_EQ(exec_spawn(&ex, 0, 0, 0, CO_STACKLESS), EXEC_EINVAL);
  CHECK_EQ(exec_best_prio(&ex), NPRIO_MAX);
  exec_destroy(&ex);
}

static void test_priority_order_and_fifo(void) {
  struct executor ex;
  exec_init(&ex, 8, malloc, free);
  int log[64], n = 0;
  struct rec r[24];
  // Spawn in the worst order: low priorities first, three per priority.
  for (int i = 0; i < 24; i++) {
    int prio = 7 - i / 3;
    r[i] = (struct rec){ .id = prio * 10 + i % 3, .log = log, .n = &n, .result = CO_DONE };
    CHECK(exec_spawn(&ex, rec_poll, &r[i], (uint32_t)prio, CO_STACKLESS) > 0);
  }
  CHECK_EQ(exec_best_prio(&ex), 0);
  CHECK_EQ(drain(&ex, 100), 24);
  for (int i = 0; i < 24; i++)
    CHECK_EQ(log[i], (i / 3) * 10 + i % 3);   // priority 0 first, FIFO inside
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  CHECK_EQ(ex.st.live, 0);
  exec_destroy(&ex);
}

static void test_yield_goes_to_tail(void) {
  struct executor ex;
  exec_init(&ex, 4, malloc, free);
  int log[16], n = 0;
  struct rec a = { 1, log, &n, CO_YIELD }, b = { 2, log, &n, CO_YIELD };
  exec_spawn(&ex, rec_poll, &a, 2, CO_STACKLESS);
  exec_spawn(&ex, rec_poll, &b, 2, CO_STACKLESS);
  drain(&ex, 6);
  int want[6] = { 1, 2, 1, 2, 1, 2 };
  for (int i = 0; i < 6; i++)
    CHECK_EQ(log[i], want[i]);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  a.result = b.result = CO_DONE;
  drain(&ex, 6);
  exec_destroy(&ex);
}

// A coroutine that wakes itself before returning PENDING must run again:
// the wake came before the block and must not be lost.
struct selfwake { struct executor *ex; cid_t cid; int runs; };
static int selfwake_poll(void *arg) {
  struct selfwake *s = arg;
  if (++s->runs == 1) {
    CHECK_EQ(exec_wake(s->ex, s->cid), 0);   // remembered, not queued
    return CO_PENDING;
  }
  return CO_DONE;
}

// A lone coroutine that yields keeps the hart (fast path), but one that yields
// while an equal-priority coroutine is ready goes behind it.
static void test_yield_fast_path(void) {
  struct executor ex;
  exec_init(&ex, 8, malloc, free);
  int log[16], n = 0;
  struct rec a = { 1, log, &n, CO_YIELD };
  exec_spawn(&ex, rec_poll, &a, 4, CO_STACKLESS);
  struct co *c = exec_next(&ex, 0, 0);
  CHECK(exec_next(&ex, c, CO_YIELD) == c);        // nothing else ready: same one
  struct rec b = { 2, log, &n, CO_YIELD };
  exec_spawn(&ex, rec_poll, &b, 6, CO_STACKLESS);  // worse priority: still a
  CHECK(exec_next(&ex, c, CO_YIELD) == c);
  struct rec d = { 3, log, &n, CO_YIELD };
  exec_spawn(&ex, rec_poll, &d, 4, CO_STACKLESS);  // equal priority: d goes next
  struct co *e = exec_next(&ex, c, CO_YIELD);
  CHECK(e != c && e->arg == &d);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  a.result = b.result = d.result = CO_DONE;
  struct co *f = exec_next(&ex, e, CO_DONE);       // settle d, take the next one
  while (f) {
    int r = f->poll(f->arg);
    f = exec_next(&ex, f, r);
  }
  CHECK_EQ(ex.st.live, 0);
  exec_destroy(&ex);
}

static void test_wake_before_block(void) {
  struct executor ex;
  exec_init(&ex, 8, malloc, free);
  struct selfwake s = { &ex, 0, 0 };
  s.cid = (cid_t)exec_spawn(&ex, selfwake_poll, &s, 3, CO_STACKLESS);
  drain(&ex, 10);
  CHECK_EQ(s.runs, 2);
  struct exec_stats st;
  exec_get_stats(&ex, &st);
  CHECK_EQ(st.live, 0);
  CHECK_EQ(st.wakes_remembered, 1);
  exec_destroy(&ex);
}

static void test_block_and_wake(void) {
  struct executor ex;
  exec_init(&ex, 8, malloc, free);
  int log[8], n = 0;
  struct rec r = { 7, log, &n, CO_PENDING };
  cid_t cid = (cid_t)exec_spawn(&ex, rec_poll, &r, 5, CO_STACKLESS);
  CHECK_EQ(drain(&ex, 10), 1);
  struct exec_stats st;
  exec_get_stats(&ex, &st);
  CHECK_EQ(st.blocked, 1);
  CHECK_EQ(exec_best_prio(&ex), NPRIO_MAX);
  CHECK_EQ(exec_wake(&ex, cid), 1);
  CHECK_EQ(exec_wake(&ex, cid), 0);        // already ready: absorbed
  CHECK_EQ(exec_best_prio(&ex), 5);
  r.result = CO_DONE;
  CHECK_EQ(drain(&ex, 10), 1);             // ran once, not twice
  CHECK_EQ(n, 2);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  exec_destroy(&ex);
}

static void test_stale_and_bad_cids(void) {
  struct executor ex;
  exec_init(&ex, 8, malloc, free);
  int log[8], n = 0;
  struct rec r = { 1, log, &n, CO_DONE };
  cid_t old = (cid_t)exec_spawn(&ex, rec_poll, &r, 0, CO_STACKLESS);
  drain(&ex, 10);
  CHECK_EQ(exec_wake(&ex, old), EXEC_ESTALE);
  CHECK_EQ(exec_reprio(&ex, old, 1), EXEC_ESTALE);
  r.result = CO_PENDING;
  cid_t fresh = (cid_t)exec_spawn(&ex, rec_poll, &r, 0, CO_STACKLESS);
  CHECK_EQ((uint32_t)fresh, (uint32_t)old);   // the slot is reused ...
  CHECK(fresh != old);                         // ... under a new generation
  drain(&ex, 10);
  CHECK_EQ(exec_wake(&ex, old), EXEC_ESTALE);
  CHECK_EQ(exec_wake(&ex, CID_NONE), EXEC_ESTALE);
  CHECK_EQ(exec_wake(&ex, (cid_t)1 << 32 | 0xffffffffu), EXEC_ESTALE);
  CHECK_EQ(exec_wake(&ex, ~(cid_t)0), EXEC_ESTALE);
  CHECK(exec_lookup(&ex, old) == 0);
  CHECK(exec_lookup(&ex, fresh) != 0);
  CHECK_EQ(exec_wake(&ex, fresh), 1);
  struct exec_stats st;
  exec_get_stats(&ex, &st);
  CHECK(st.stale_wakes >= 4);
  r.result = CO_DONE;
  drain(&ex, 10);
  exec_destroy(&ex);
}

static void test_reprio(void) {
  struct executor ex;
  exec_init(&ex, 8, malloc, free);
  int log[8], n = 0;
  struct rec a = { 1, log, &n, CO_DONE }, b = { 2, log, &n, CO_DONE };
  exec_spawn(&ex, rec_poll, &a, 1, CO_STACKLESS);
  cid_t cb = (cid_t)exec_spawn(&ex, rec_poll, &b, 6, CO_STACKLESS);
  CHECK_EQ(exec_reprio(&ex, cb, 0), 0);
  CHECK_EQ(exec_reprio(&ex, cb, 8), EXEC_EINVAL);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  CHECK_EQ(ex.bitmap, 0x3);
  drain(&ex, 10);
  CHECK_EQ(log[0], 2);
  CHECK_EQ(log[1], 1);
  exec_destroy(&ex);
}

// The round robin among equals (a yield whose queue is the lane's best:
// rotated in place, the head taken as the resident), with wakes remembered
// while running, and reprio taking coroutines out of the head (just after the
// resident), the middle and the tail of a ring (heads keep no prev link): the
// order stays FIFO, and the lane's cached best queue follows its bitmap
// (exec_check compares them).
static void test_rotate_and_unlink(void) {
  struct executor ex;
  exec_init(&ex, 8, malloc, free);
  int log[64], n = 0;
  struct rec r[5];
  cid_t cid[5];
  spawn_recs(&ex, r, cid, 5, log, &n, 3, CO_YIELD);
  // Run 0 and 1 (each yields: rotated behind the rest); 1 is woken while it
  // runs, which a yield absorbs.
  struct co *c = exec_next(&ex, 0, 0);
  CHECK(c->arg == &r[0]);
  c = exec_next(&ex, c, c->poll(c->arg));
  CHECK(c->arg == &r[1]);
  CHECK_EQ(exec_wake(&ex, cid[1]), 0);
  c = exec_next(&ex, c, c->poll(c->arg));   // queue now 3 4 0 1, 2 running
  CHECK(c->arg == &r[2]);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  // The inline form (the user runtime's): 2 yields, 3 runs, 2 goes last.
  // (2 is the resident: exec_next's rotation took it.)
  CHECK_EQ(c->flags, CO_RESIDENT);
  struct co_queue *q = exec_rotation_queue((struct exec_lane *)ex.lanes, c);
  CHECK(q != 0);
  c = exec_rotate(q, c);
  CHECK(c->arg == &r[3]);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  c = exec_next(&ex, c, CO_YIELD);          // and back through exec_next: 3 4 0 1 2 -> 4 runs
  CHECK(c->arg == &r[4]);
  c = exec_next(&ex, c, CO_YIELD);          // 0 1 2 3 4: 0 runs
  c = exec_next(&ex, c, CO_YIELD);          // 1 runs
  c = exec_next(&ex, c, CO_YIELD);          // 2 runs; queue 3 4 0 1
  CHECK(c->arg == &r[2]);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  // 3 is the head, 0 in the middle, 1 the tail: move each elsewhere.
  CHECK_EQ(exec_reprio(&ex, cid[3], 5), 0);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  CHECK_EQ(exec_reprio(&ex, cid[0], 5), 0);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  CHECK_EQ(exec_reprio(&ex, cid[1], 1), 0);  // better than the running one
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  CHECK_EQ(ex.bitmap, (1u << 1) | (1u << 3) | (1u << 5));
  // 2 yields: 1 (priority 1) runs first, then 4 and 2 at 3, then 3 and 0 at 5.
  n = 0;
  for (int i = 0; i < 5; i++)
    r[i].result = CO_DONE;
  c = exec_next(&ex, c, CO_YIELD);
  while (c) {
    int res = c->poll(c->arg);
    c = exec_next(&ex, c, res);
    CHECK(exec_check(&ex, why, sizeof why) == 0);
  }
  int want[5] = { 1, 4, 2, 3, 0 };
  CHECK_EQ(n, 5);
  for (int i = 0; i < 5; i++)
    CHECK_EQ(log[i], want[i]);
  CHECK_EQ(ex.st.live, 0);
  CHECK_EQ(exec_best_prio(&ex), NPRIO_MAX);
  exec_destroy(&ex);
}

// The inline rotation between two equals, where the ring holds one ready
// coroutine, the head and the tail at once, and the resident (the user
// runtime's ping-pong): the two swap roles and no link moves.
static void test_rotate_two(void) {
  struct executor ex;
  exec_init(&ex, 8, malloc, free);
  int log[4], n = 0;
  struct rec a = { 1, log, &n, CO_YIELD }, b = { 2, log, &n, CO_YIELD };
  exec_spawn(&ex, rec_poll, &a, 2, CO_STACKLESS);
  exec_spawn(&ex, rec_poll, &b, 2, CO_STACKLESS);
  struct co *c = exec_next(&ex, 0, 0);
  CHECK(c->arg == &a);
  CHECK_EQ(c->flags, 0);                      // a pop unlinks what it takes
  c = exec_next(&ex, c, CO_YIELD);            // a linked as the tail, b the resident
  CHECK(c->arg == &b);
  CHECK_EQ(c->flags, CO_RESIDENT);
  struct co_queue *q = exec_rotation_queue((struct exec_lane *)ex.lanes, c);
  CHECK(q != 0);
  for (int i = 0; i < 5; i++) {
    struct co *prev = c;
    c = exec_rotate(q, prev);
    CHECK(c->arg == (i % 2 ? (void *)&b : (void *)&a));
    CHECK(q->tail == prev && prev->next == c && c->next == prev);
    CHECK_EQ(c->state, CO_RUNNING);
    CHECK_EQ(c->flags, CO_RESIDENT);
    CHECK_EQ(prev->state, CO_READY);
    CHECK_EQ(prev->flags, 0);
    CHECK(exec_check(&ex, why, sizeof why) == 0);
  }
  c = exec_next(&ex, c, CO_DONE);             // the resident ends: unlinked, b popped
  CHECK(c->arg == (void *)&b);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  CHECK(exec_next(&ex, c, CO_DONE) == 0);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  exec_destroy(&ex);
}

// Step the executor with prev's result, check the invariants, and return
// the next one's record id (-1: none).
static struct co *step(struct executor *ex, struct co *prev, int res) {
  struct co *c = exec_next(ex, prev, res);
  CHECK(exec_check(ex, why, sizeof why) == 0);
  return c;
}
static int id_of(const struct co *c) { return c ? ((struct rec *)c->arg)->id : -1; }

// The resident leaves its ring when it blocks or ends, and comes back as any
// blocked coroutine does; a coroutine woken while the resident runs goes
// before it, as if the resident had been appended when it yielded (FIFO).
static void test_resident_blocks_ends_and_order(void) {
  struct executor ex;
  exec_init(&ex, 8, malloc, free);
  int log[16], n = 0;
  struct rec r[4];
  cid_t cid[4];
  spawn_recs(&ex, r, cid, 4, log, &n, 3, CO_YIELD);
  struct co *c = step(&ex, 0, 0);                 // 0 (popped)
  c = step(&ex, c, CO_YIELD);                     // 1 resident; ring 2 3 0
  CHECK_EQ(id_of(c), 1);
  CHECK_EQ(c->flags, CO_RESIDENT);
  c = step(&ex, c, CO_PENDING);                   // 1 blocks: unlinked; 2 popped
  CHECK_EQ(id_of(c), 2);
  CHECK_EQ(exec_lookup(&ex, cid[1])->state, CO_BLOCKED);
  CHECK_EQ(exec_lookup(&ex, cid[1])->flags, 0);
  c = step(&ex, c, CO_YIELD);                     // 2 appended; 3 resident; ring 0 2
  CHECK_EQ(id_of(c), 3);
  CHECK_EQ(exec_wake(&ex, cid[1]), 1);            // ring 0 2 1, before the resident
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  CHECK_EQ(exec_wake(&ex, cid[0]), 0);            // ready already: absorbed
  c = step(&ex, c, CO_YIELD);                     // 3 the tail: 0 2 1 3
  CHECK_EQ(id_of(c), 0);
  c = step(&ex, c, CO_DONE);                      // the resident 0 ends; 2 popped
  CHECK_EQ(id_of(c), 2);
  c = step(&ex, c, CO_YIELD);                     // 1 resident; ring 3 2
  CHECK_EQ(id_of(c), 1);
  c = step(&ex, c, CO_YIELD);
  CHECK_EQ(id_of(c), 3);
  c = step(&ex, c, CO_YIELD);
  CHECK_EQ(id_of(c), 2);
  // The resident woken while it runs, then blocking: it is requeued where it
  // is, the tail, and the others run first.
  CHECK_EQ(exec_wake(&ex, cid[2]), 0);
  CHECK_EQ(c->flags, CO_RESIDENT | CO_WAKE_PENDING);
  c = step(&ex, c, CO_PENDING);
  CHECK_EQ(id_of(c), 1);
  c = step(&ex, c, CO_YIELD);
  CHECK_EQ(id_of(c), 3);
  c = step(&ex, c, CO_YIELD);
  CHECK_EQ(id_of(c), 2);
  n = 0;
  for (int i = 0; i < 4; i++)
    r[i].result = CO_DONE;
  while (c)
    c = step(&ex, c, c->poll(c->arg));
  CHECK_EQ(n, 3);
  CHECK_EQ(ex.st.live, 0);
  exec_destroy(&ex);
}

// Priority changes while coroutines rotate: of the resident itself (it
// leaves the ring and is queued at its new priority when it yields), and of
// the ring's last ready coroutine (the resident may not stay alone: it is
// unlinked too, and a later yield links it again as any running coroutine).
static void test_reprio_while_rotating(void) {
  struct executor ex;
  exec_init(&ex, 8, malloc, free);
  int log[16], n = 0;
  struct rec r[3];
  cid_t cid[3];
  spawn_recs(&ex, r, cid, 3, log, &n, 4, CO_YIELD);
  struct co *c = step(&ex, 0, 0);
  c = step(&ex, c, CO_YIELD);                     // 1 resident; ring 2 0
  CHECK_EQ(id_of(c), 1);
  CHECK_EQ(exec_reprio(&ex, cid[1], 2), 0);       // the resident moves to 2
  CHECK_EQ(c->flags, 0);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  c = step(&ex, c, CO_YIELD);                     // nothing else at 2: it goes on
  CHECK_EQ(id_of(c), 1);
  CHECK_EQ(exec_reprio(&ex, cid[1], 4), 0);
  c = step(&ex, c, CO_YIELD);                     // back at 4: behind 2 0; 2 resident
  CHECK_EQ(id_of(c), 2);
  CHECK_EQ(c->flags, CO_RESIDENT);
  CHECK_EQ(exec_reprio(&ex, cid[0], 6), 0);       // ring 1 (0 moved to 6)
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  CHECK_EQ(exec_reprio(&ex, cid[1], 6), 0);       // ring empty: the resident unlinked
  CHECK_EQ(c->flags, 0);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  CHECK_EQ(exec_best_prio(&ex), 6);
  CHECK_EQ(exec_reprio(&ex, cid[0], 4), 0);       // 0 back at 4, alone in its ring
  c = step(&ex, c, CO_YIELD);                     // 2 linked behind 0; 0 resident
  CHECK_EQ(id_of(c), 0);
  CHECK_EQ(c->flags, CO_RESIDENT);
  c = step(&ex, c, CO_YIELD);
  CHECK_EQ(id_of(c), 2);
  n = 0;
  for (int i = 0; i < 3; i++)
    r[i].result = CO_DONE;
  while (c)
    c = step(&ex, c, c->poll(c->arg));
  int want[3] = { 2, 0, 1 };
  CHECK_EQ(n, 3);
  for (int i = 0; i < 3; i++)
    CHECK_EQ(log[i], want[i]);
  CHECK_EQ(ex.st.live, 0);
  exec_destroy(&ex);
}

// exec_take_stackless called by a running resident (the kernel's switching
// coroutines): it takes the head after the resident, never the resident, and
// unlinks the resident when it takes the ring's last ready coroutine.
static void test_take_stackless_beside_resident(void) {
  struct executor ex;
  exec_init(&ex, 8, malloc, free);
  int log[16], n = 0;
  struct rec r[3];
  spawn_recs(&ex, r, 0, 3, log, &n, 5, CO_DONE);
  struct co *c = step(&ex, 0, 0);
  c = step(&ex, c, CO_YIELD);                     // 1 resident; ring 2 0
  CHECK_EQ(id_of(c), 1);
  struct co *t = exec_take_stackless(&ex, 0, 7);
  CHECK_EQ(id_of(t), 2);
  CHECK_EQ(c->flags, CO_RESIDENT);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  exec_settle_one(&ex, t, t->poll(t->arg));
  CHECK(exec_take_stackless(&ex, 0, 4) == 0);     // 0 is at 5: not good enough
  t = exec_take_stackless(&ex, 0, 5);
  CHECK_EQ(id_of(t), 0);
  CHECK_EQ(c->flags, 0);                          // its ring's last: the resident unlinked
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  CHECK(exec_take_stackless(&ex, 0, 7) == 0);
  exec_settle_one(&ex, t, t->poll(t->arg));
  CHECK(step(&ex, c, CO_DONE) == 0);
  CHECK_EQ(ex.st.live, 0);
  exec_destroy(&ex);
}

// A second lane while a resident runs (the user runtime's alloc_cpu, called
// by a coroutine): the several-lane steps know no residents, so it is
// unlinked, and a steal takes the ready one, not the running one.
static void test_set_lanes_drops_resident(void) {
  struct executor ex;
  exec_init(&ex, 8, malloc, free);
  int log[8], n = 0;
  struct rec a = { 1, log, &n, CO_YIELD }, b = { 2, log, &n, CO_DONE };
  exec_spawn(&ex, rec_poll, &a, 2, CO_STACKLESS);
  exec_spawn(&ex, rec_poll, &b, 2, CO_STACKLESS);
  struct co *c = step(&ex, 0, 0);
  c = step(&ex, c, CO_YIELD);                     // b resident, a ready
  CHECK_EQ(id_of(c), 2);
  CHECK_EQ(exec_set_lanes(&ex, 2), 0);
  CHECK_EQ(c->flags, 0);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  struct co *e = exec_next_on(&ex, 1, 0, 0);      // lane 1 steals a
  CHECK_EQ(id_of(e), 1);
  CHECK(exec_next_on(&ex, 0, c, CO_YIELD) == c);  // nothing else at 2: b goes on
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  a.result = CO_DONE;
  CHECK(exec_next_on(&ex, 1, e, CO_DONE) == 0);
  CHECK(exec_next_on(&ex, 0, c, CO_DONE) == 0);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  CHECK_EQ(ex.st.live, 0);
  exec_destroy(&ex);
}

// An executor that starts with one lane (the one-lane steps) and gets a
// second while coroutines are queued, as the user runtime's alloc_cpu does:
// from then on the several-lane steps run, and lane 1 steals lane 0's work.
static void test_one_lane_grows(void) {
  struct executor ex;
  exec_init(&ex, 8, malloc, free);
  CHECK_EQ(ex.multi, 0);
  int log[16], n = 0;
  struct rec a = { 1, log, &n, CO_YIELD }, b = { 2, log, &n, CO_DONE }, d = { 3, log, &n, CO_DONE };
  exec_spawn(&ex, rec_poll, &a, 2, CO_STACKLESS);
  exec_spawn(&ex, rec_poll, &b, 2, CO_STACKLESS);
  exec_spawn(&ex, rec_poll, &d, 6, CO_STACKLESS);
  struct co *c = exec_next(&ex, 0, 0);
  CHECK(c->arg == &a);
  CHECK(exec_rotation_queue((struct exec_lane *)ex.lanes, c) != 0);   // b waits at a's priority
  CHECK_EQ(exec_set_lanes(&ex, 2), 0);
  CHECK_EQ(ex.multi, 1);           // (the inline rotation is for one lane only: its caller,
                                   // the user runtime, stops using it: cops_alloc_cpu)
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  struct co *e = exec_next_on(&ex, 1, 0, 0);   // lane 1 is empty: it steals b
  CHECK(e && e->arg == &b && e->lane == 1);
  c = exec_next_on(&ex, 0, c, CO_YIELD);       // nothing else at 2 anywhere: a goes on
  CHECK(c->arg == &a);
  e = exec_next_on(&ex, 1, e, CO_DONE);        // b done: lane 1 steals d too
  CHECK(e && e->arg == &d && e->lane == 1);
  CHECK(exec_next_on(&ex, 0, c, CO_DONE) == 0);   // a done: nothing left anywhere
  CHECK(exec_next_on(&ex, 1, e, CO_DONE) == 0);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  CHECK_EQ(ex.st.live, 0);
  CHECK_EQ(exec_best_prio(&ex), NPRIO_MAX);
  exec_destroy(&ex);
}

static void test_ten_thousand_alive(void) {
  enum { N = 10000 };
  struct executor ex;
  exec_init(&ex, 8, malloc, free);
  static int log[2 * N];
  int n = 0;
  static struct rec r[N];
  static cid_t cid[N];
  for (int i = 0; i < N; i++) {
    r[i] = (struct rec){ i, log, &n, CO_PENDING };
    int64_t c = exec_spawn(&ex, rec_poll, &r[i], (uint32_t)(i % 8), CO_STACKLESS);
    CHECK(c > 0);
    cid[i] = (cid_t)c;
  }
  CHECK_EQ(drain(&ex, 2 * N), N);
  struct exec_stats st;
  exec_get_stats(&ex, &st);
  CHECK_EQ(st.live, N);
  CHECK_EQ(st.blocked, N);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  for (int i = N - 1; i >= 0; i--) {
    r[i].result = CO_DONE;
    CHECK_EQ(exec_wake(&ex, cid[i]), 1);
  }
  CHECK_EQ(drain(&ex, 2 * N), N);
  exec_get_stats(&ex, &st);
  CHECK_EQ(st.live, 0);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  exec_destroy(&ex);
}

static void test_ctz_soft(void) {
  for (int b = 1; b < 256; b++)
    CHECK_EQ(exec_ctz8[b], __builtin_ctz((unsigned)b));
  for (int i = 0; i < 64; i++) {
    CHECK_EQ(exec_ctz64_soft(1ULL << i), i);
    CHECK_EQ(exec_ctz64_soft(~0ULL << i), i);
  }
  uint64_t x = 88172645463325252ULL;
  for (int i = 0; i < 100000; i++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    if (x)
      CHECK_EQ(exec_ctz64_soft(x), __builtin_ctzll(x));
  }
}

// ---- multi-threaded stress: several "harts" run the loop at once ----
enum { S_THREADS = 4, S_COS = 200, S_STEPS = 400 };
struct stress {
  struct executor *ex;
  cid_t cid[S_COS];
  int steps[S_COS];
  uint64_t seed[S_COS];
  volatile int done;
  uint32_t wake_to_lanes;      // nonzero: some wakes are exec_wake_to a lane below this
  int want_park[S_THREADS];    // the fold stress: main asks lane i's worker to step out,
  int is_out[S_THREADS];       // and it says when it has
  uint32_t folds, grows, refused;   // over the fold stress's runs
};
static struct stress st_g;
struct stress_arg { int i; };
static struct stress_arg st_args[S_COS];

static uint64_t rnd(uint64_t *s) { *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17; return *s; }

static int stress_poll(void *arg) {
  int i = ((struct stress_arg *)arg)->i;
  if (++st_g.steps[i] >= S_STEPS)
    return CO_DONE;
  uint64_t r = rnd(&st_g.seed[i]);
  int other = (int)(r % S_COS);
  if (st_g.wake_to_lanes && (r & 0x800))     // (the lane may be folded)
    exec_wake_to(st_g.ex, st_g.cid[other], (uint32_t)(r >> 20) % st_g.wake_to_lanes);
  else
    exec_wake(st_g.ex, st_g.cid[other]);      // may be stale, blocked, ready or running
  if (r & 0x100)
    exec_reprio(st_g.ex, st_g.cid[other], (uint32_t)((r >> 12) % 8));
  if (r & 0x200)
    exec_wake(st_g.ex, st_g.cid[i]);          // wake-before-block on itself
  return (r & 0x400) ? CO_YIELD : CO_PENDING;
}

static void *stress_worker(void *arg) {
  uint32_t lane = (uint32_t)(uintptr_t)arg;
  struct co *prev = 0;
  int res = 0;
  while (!st_g.done) {
    if (__atomic_load_n(&st_g.want_park[lane], __ATOMIC_ACQUIRE)) {
      // Step out of the executor, as a parking hart does: settle what ran,
      // take nothing, and wait until main lets us back in.
      if (prev)
        exec_settle_one(st_g.ex, prev, res);
      prev = 0;
      __atomic_store_n(&st_g.is_out[lane], 1, __ATOMIC_RELEASE);
      while (__atomic_load_n(&st_g.want_park[lane], __ATOMIC_ACQUIRE) && !st_g.done)
        sched_yield();
      __atomic_store_n(&st_g.is_out[lane], 0, __ATOMIC_RELEASE);
      continue;
    }
    struct co *c = exec_next_on(st_g.ex, lane, prev, res);
    prev = c;
    if (c)
      res = c->poll(c->arg);
    else
      sched_yield();
  }
  if (prev)
    exec_next_on(st_g.ex, lane, prev, res);   // settle the last one
  return 0;
}

// nlanes 1: one worker, as every environment runs an executor with one lane
// (one thread or hart steps it: its running coroutine may stay linked in its
// ring, the lane's resident, and two loops would each have one), while this
// thread checks, counts and wakes beside it; S_THREADS: one lane each, so
// they steal from each other whenever a better coroutine waits in another
// lane.
// fold: main also folds the top lane away and grows it back, again and
// again, as kernel/park.c does with a parking hart's (its worker steps out
// first), and a quarter of the wakes are exec_wake_to a random lane, folded
// or not.
static void stress_run(uint32_t nlanes, int fold) {
  uint32_t nthreads = nlanes;
  struct executor ex;
  exec_init_lanes(&ex, 8, nlanes, malloc, free);
  st_g.ex = &ex;
  st_g.done = 0;
  st_g.wake_to_lanes = fold ? nlanes : 0;
  for (uint32_t i = 0; i < S_THREADS; i++)
    st_g.want_park[i] = st_g.is_out[i] = 0;
  uint32_t folds = 0, grows = 0, refused = 0;
  uint64_t fseed = 0x2545f4914f6cdd1dULL;
  for (int i = 0; i < S_COS; i++) {
    st_g.steps[i] = 0;
    st_g.seed[i] = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
    st_args[i].i = i;
    st_g.cid[i] = 0;
  }
  // Publish cids before anything runs: spawn under no contention, then start threads.
  for (int i = 0; i < S_COS; i++)
    st_g.cid[i] = (cid_t)exec_spawn_on(&ex, (uint32_t)i, stress_poll, &st_args[i], (uint32_t)(i % 8),
                                       CO_STACKLESS);
  pthread_t t[S_THREADS];
  for (uint32_t i = 0; i < nthreads; i++)
    pthread_create(&t[i], 0, stress_worker, (void *)(uintptr_t)i);
  int bad = 0;
  // Until every coroutine is done, with a safety net in time (60 s) that no
  // healthy run comes near, however loaded the host: the walks below take
  // every lock, so on a busy machine the workers may get little done between
  // two of them (a limit in rounds once failed that way, all 200 still live).
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    if (exec_check(&ex, why, sizeof why) != 0) { bad = 1; break; }
    struct exec_stats s;
    exec_get_stats(&ex, &s);
    if (s.live == 0)
      break;
    // Blocked coroutines with nobody left to wake them: wake them all.
    if (s.ready == 0 && s.running == 0)
      for (int i = 0; i < S_COS; i++)
        exec_wake(&ex, st_g.cid[i]);
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - t0.tv_sec > 60) {
      printf("  still live after 60 s: %u (ready %u, running %u, blocked %u)\n", s.live, s.ready,
             s.running, s.blocked);
      break;
    }
    if (fold) {
      uint32_t n = ex.nlanes;
      if (n < nlanes && (n == 1 || (rnd(&fseed) & 1))) {
        // Grow the top lane back, then let its worker in.
        CHECK_EQ(exec_set_lanes(&ex, n + 1), 0);
        __atomic_store_n(&st_g.want_park[n], 0, __ATOMIC_RELEASE);
        grows++;
      } else if (n > 1) {
        uint32_t top = n - 1;
        __atomic_store_n(&st_g.want_park[top], 1, __ATOMIC_RELEASE);
        while (!__atomic_load_n(&st_g.is_out[top], __ATOMIC_ACQUIRE))
          sched_yield();
        int r = exec_fold_lanes(&ex, top);
        if (r == 0) {
          folds++;
        } else {
          CHECK_EQ(r, EXEC_EBUSY);   // something was queued there: let it run
          __atomic_store_n(&st_g.want_park[top], 0, __ATOMIC_RELEASE);
          refused++;
        }
      }
    }
    usleep(200);                  // let the workers run between two walks
  }
  st_g.done = 1;
  for (uint32_t i = 0; i < nthreads; i++)
    pthread_join(t[i], 0);
  if (bad)
    printf("  invariant: %s\n", why);
  CHECK(!bad);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  struct exec_stats fin;
  exec_get_stats(&ex, &fin);
  CHECK_EQ(fin.live, 0);
  CHECK_EQ(fin.exited, S_COS);
  CHECK_EQ(exec_best_prio(&ex), NPRIO_MAX);   // the union holds nothing stale at rest
  if (nlanes > 1)
    CHECK(fin.steals > 0);
  if (fold) {
    st_g.folds += folds;
    st_g.grows += grows;
    st_g.refused += refused;
  }
  for (int i = 0; i < S_COS; i++)
    CHECK_EQ(st_g.steps[i], S_STEPS);
  exec_destroy(&ex);
}

static void test_threaded_stress_invariants(void) { stress_run(1, 0); }
static void test_threaded_stress_lanes(void) { stress_run(S_THREADS, 0); }
// (Twenty runs: one run folds a dozen times or so, too few for the races.)
static void test_threaded_stress_fold_and_grow(void) {
  st_g.folds = st_g.grows = st_g.refused = 0;
  for (int run = 0; run < 20 && !check_failed_; run++)
    stress_run(S_THREADS, 1);
  printf("  lanes folded %u times (%u refused), grown %u times\n", st_g.folds, st_g.refused,
         st_g.grows);
  CHECK(st_g.folds > 0 && st_g.grows > 0);
}

// ---- lanes, one thread: the rules, step by step ----

static void test_lanes_own_first_then_steal_better(void) {
  struct executor ex;
  CHECK_EQ(exec_init_lanes(&ex, 8, 0, malloc, free), EXEC_EINVAL);
  CHECK_EQ(exec_init_lanes(&ex, 8, EXEC_MAX_LANES + 1, malloc, free), EXEC_EINVAL);
  CHECK_EQ(exec_init_lanes(&ex, 8, 2, malloc, free), 0);
  int log[8], n = 0;
  struct rec a = { 1, log, &n, CO_PENDING }, b = { 2, log, &n, CO_PENDING }, c = { 3, log, &n, CO_DONE };
  cid_t ca = (cid_t)exec_spawn_on(&ex, 0, rec_poll, &a, 4, CO_STACKLESS);
  exec_spawn_on(&ex, 1, rec_poll, &b, 4, CO_STACKLESS);
  exec_spawn_on(&ex, 1, rec_poll, &c, 2, CO_STACKLESS);
  CHECK_EQ(exec_best_prio(&ex), 2);
  // Lane 0's best (4) is worse than lane 1's (2): lane 0 steals c.
  struct co *x = exec_next_on(&ex, 0, 0, 0);
  CHECK(x && x->arg == &c && x->lane == 0);
  // Now equal priorities: each lane runs its own coroutine.
  struct co *y = exec_next_on(&ex, 0, x, x->poll(x->arg));
  CHECK(y && y->arg == &a);
  struct co *z = exec_next_on(&ex, 1, 0, 0);
  CHECK(z && z->arg == &b && z->lane == 1);
  CHECK(exec_next_on(&ex, 0, y, y->poll(y->arg)) == 0);   // a blocks in lane 0
  CHECK(exec_next_on(&ex, 1, z, z->poll(z->arg)) == 0);   // b blocks in lane 1
  // A wake queues a coroutine in its home lane, and says which.
  uint32_t lane = 9;
  CHECK_EQ(exec_wake_lane(&ex, ca, &lane), 1);
  CHECK_EQ(lane, 0);
  // Lane 1 has nothing: it takes anything, and the coroutine moves.
  x = exec_next_on(&ex, 1, 0, 0);
  CHECK(x && x->arg == &a && x->lane == 1);
  a.result = CO_DONE;
  CHECK(exec_next_on(&ex, 1, x, x->poll(x->arg)) == 0);
  struct exec_stats st;
  exec_get_stats(&ex, &st);
  CHECK_EQ(st.steals, 2);
  CHECK_EQ(st.live, 1);
  CHECK_EQ(st.blocked, 1);
  CHECK_EQ(n, 4);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  exec_destroy(&ex);
}

static void test_wake_to_another_lane(void) {
  struct executor ex;
  exec_init_lanes(&ex, 8, 3, malloc, free);
  int log[8], n = 0;
  struct rec a = { 1, log, &n, CO_PENDING };
  cid_t ca = (cid_t)exec_spawn_on(&ex, 0, rec_poll, &a, 4, CO_STACKLESS);
  struct co *x = exec_next_on(&ex, 0, 0, 0);
  CHECK(x && x->arg == &a);
  CHECK_EQ(exec_wake_to(&ex, ca, 2), 0);          // running: remembered, stays home
  CHECK_EQ(x->lane, 0);
  CHECK(exec_next_on(&ex, 0, x, CO_PENDING) == x);  // the remembered wake requeues it
  CHECK(exec_next_on(&ex, 0, x, CO_PENDING) == 0);  // now it blocks in lane 0
  CHECK_EQ(exec_wake_to(&ex, ca, 2), 1);          // blocked: queued in lane 2
  CHECK_EQ(x->lane, 2);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  CHECK(exec_next_on(&ex, 2, 0, 0) == x);         // lane 2's own, no steal
  struct exec_stats st;
  exec_get_stats(&ex, &st);
  CHECK_EQ(st.steals, 0);
  CHECK_EQ(exec_wake_to(&ex, ca, 2), 0);
  a.result = CO_DONE;
  CHECK(exec_next_on(&ex, 2, x, x->poll(x->arg)) == 0);
  CHECK_EQ(exec_wake_to(&ex, ca, 1), EXEC_ESTALE);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  exec_destroy(&ex);
}

static void test_lanes_yield_and_union(void) {
  struct executor ex;
  exec_init_lanes(&ex, 8, 3, malloc, free);
  int log[8], n = 0;
  struct rec a = { 1, log, &n, CO_YIELD }, b = { 2, log, &n, CO_YIELD };
  exec_spawn_on(&ex, 0, rec_poll, &a, 5, CO_STACKLESS);
  struct co *x = exec_next_on(&ex, 0, 0, 0);
  CHECK(x && x->arg == &a);
  // A yield gives way to an equal priority, also in another lane: the
  // yielder's lane takes it (round robin among equals), and the yielder waits
  // in its own lane.
  exec_spawn_on(&ex, 2, rec_poll, &b, 5, CO_STACKLESS);
  struct co *y = exec_next_on(&ex, 0, x, CO_YIELD);
  CHECK(y && y->arg == &b && y->lane == 0);
  CHECK_EQ(exec_best_prio(&ex), 5);           // x, queued in lane 0
  CHECK(exec_next_on(&ex, 2, 0, 0) == x);     // lane 2 has nothing: it takes x
  CHECK_EQ(x->lane, 2);
  CHECK_EQ(exec_best_prio(&ex), NPRIO_MAX);   // both running: the union is empty
  CHECK_EQ(exec_reprio(&ex, co_cid(y), 3), 0);
  CHECK(exec_next_on(&ex, 0, y, CO_YIELD) == y);
  CHECK_EQ(exec_reprio(&ex, co_cid(x), 7), 0);
  struct co *z = exec_next_on(&ex, 2, x, CO_YIELD);   // x queued at 7, the only one ready
  CHECK(z == x);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  CHECK_EQ(exec_set_lanes(&ex, EXEC_MAX_LANES + 1), EXEC_EINVAL);
  CHECK_EQ(exec_set_lanes(&ex, 5), 0);
  CHECK_EQ(ex.nlanes, 5);
  CHECK_EQ(exec_set_lanes(&ex, 2), 0);        // never shrinks
  CHECK_EQ(ex.nlanes, 5);
  exec_next_on(&ex, 2, z, CO_DONE);
  exec_next_on(&ex, 0, y, CO_DONE);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  exec_destroy(&ex);
}

// Folding lanes (kernel/park.c parks the harts that own them): refused while
// a lane to fold has a ready coroutine; the counters and free slots go to
// lane 0, and one lane left means the one-lane steps. A blocked coroutine
// keeps its home: woken while that lane is folded, it runs in lane 0 (which
// becomes its home); woken after the lane came back, it runs there. A wake
// aimed at a folded lane is a plain wake.
static void test_fold_lanes(void) {
  struct executor ex;
  CHECK_EQ(exec_init_lanes(&ex, 8, 3, malloc, free), 0);
  int log[16], n = 0;
  struct rec r[4];
  cid_t cid[4];
  CHECK_EQ(exec_fold_lanes(&ex, 0), EXEC_EINVAL);
  CHECK_EQ(exec_fold_lanes(&ex, 3), EXEC_EINVAL);       // not fewer
  // Lane 2's two (cid 1 and 3), then lane 1's (0 and 2): each spawned, a
  // fold refused while they are ready, and run in its lane until it blocks
  // there (with nothing ready elsewhere, so no lane steals another's).
  for (uint32_t lane = 2; lane >= 1; lane--) {
    for (int i = (int)lane - 1; i < 4; i += 2) {
      r[i] = (struct rec){ i, log, &n, CO_PENDING };
      cid[i] = (cid_t)exec_spawn_on(&ex, lane, rec_poll, &r[i], 3, CO_STACKLESS);
    }
    CHECK_EQ(exec_fold_lanes(&ex, lane), EXEC_EBUSY);
    CHECK_EQ(ex.nlanes, 3);
    struct co *c = exec_next_on(&ex, lane, 0, 0);
    while (c) {
      CHECK_EQ(c->lane, lane);
      c = exec_next_on(&ex, lane, c, c->poll(c->arg));
    }
  }
  struct exec_stats before, after;
  exec_get_stats(&ex, &before);
  CHECK_EQ(before.blocked, 4);
  CHECK_EQ(exec_fold_lanes(&ex, 2), 0);                 // lane 2 goes
  CHECK_EQ(ex.nlanes, 2);
  CHECK_EQ(ex.multi, 1);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  CHECK_EQ(exec_fold_lanes(&ex, 1), 0);                 // and lane 1
  CHECK_EQ(ex.nlanes, 1);
  CHECK_EQ(ex.multi, 1);             // until lane 0's thread comes by (back_to_one_lane)
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  CHECK(exec_next_on(&ex, 0, 0, 0) == 0);               // it does: the one-lane steps
  CHECK_EQ(ex.multi, 0);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  exec_get_stats(&ex, &after);
  CHECK_EQ(after.spawned, before.spawned);
  CHECK_EQ(after.wakes, before.wakes);
  CHECK_EQ(after.blocked, 4);
  CHECK_EQ(exec_lookup(&ex, cid[0])->lane, 1);          // homes kept
  CHECK_EQ(exec_lookup(&ex, cid[1])->lane, 2);
  // Woken now, it runs in lane 0 (the one-lane step), its new home.
  CHECK_EQ(exec_wake_to(&ex, cid[0], 2), 1);            // a folded lane: a plain wake
  CHECK_EQ(exec_lookup(&ex, cid[0])->lane, 0);
  CHECK_EQ(exec_best_prio(&ex), 3);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  n = 0;
  r[0].result = CO_DONE;
  CHECK_EQ(drain(&ex, 10), 1);
  CHECK_EQ(n, 1);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  // Lane 1 back: what still sleeps there wakes there; cid[1]'s home, lane 2,
  // is still folded, so it wakes in lane 0, and a wake aimed at lane 1 from
  // a folded home is a plain wake too.
  CHECK_EQ(exec_set_lanes(&ex, 2), 0);
  CHECK_EQ(ex.multi, 1);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  uint32_t lane = 9;
  CHECK_EQ(exec_wake_lane(&ex, cid[2], &lane), 1);
  CHECK_EQ(lane, 1);
  CHECK_EQ(exec_wake_to(&ex, cid[1], 1), 1);
  CHECK_EQ(exec_lookup(&ex, cid[1])->lane, 0);
  CHECK(exec_lane_has_ready(&ex, 0) && exec_lane_has_ready(&ex, 1));
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  r[1].result = r[2].result = r[3].result = CO_DONE;
  struct co *d = exec_next_on(&ex, 1, 0, 0);
  CHECK(d && d->arg == &r[2] && d->lane == 1);
  struct co *e = exec_next_on(&ex, 0, 0, 0);
  CHECK(e && e->arg == &r[1] && e->lane == 0);
  CHECK(exec_next_on(&ex, 0, e, e->poll(e->arg)) == 0);
  CHECK(exec_next_on(&ex, 1, d, d->poll(d->arg)) == 0);
  // Lane 2 back too: the last, homed there all along, wakes there, and lane
  // 0, with nothing of its own, steals it.
  CHECK_EQ(exec_lookup(&ex, cid[3])->lane, 2);
  CHECK_EQ(exec_set_lanes(&ex, 3), 0);
  CHECK_EQ(exec_wake_lane(&ex, cid[3], &lane), 1);
  CHECK_EQ(lane, 2);
  CHECK(exec_lane_has_ready(&ex, 2) && !exec_lane_has_ready(&ex, 0));
  struct co *f = exec_next_on(&ex, 0, 0, 0);
  CHECK(f && f->arg == &r[3] && f->lane == 0);
  CHECK(exec_next_on(&ex, 0, f, f->poll(f->arg)) == 0);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  exec_get_stats(&ex, &after);
  CHECK_EQ(after.live, 0);
  exec_destroy(&ex);
}

// exec_check tells a running coroutine whose home is a folded lane (the
// fold's caller promised none) from a blocked one (allowed).
static void test_fold_check_running(void) {
  struct executor ex;
  CHECK_EQ(exec_init_lanes(&ex, 8, 2, malloc, free), 0);
  int log[4], n = 0;
  struct rec r = { 0, log, &n, CO_PENDING };
  exec_spawn_on(&ex, 1, rec_poll, &r, 3, CO_STACKLESS);
  struct co *x = exec_next_on(&ex, 1, 0, 0);
  CHECK(x != 0);
  CHECK_EQ(exec_fold_lanes(&ex, 1), 0);                 // the caller's bug: x runs there
  CHECK(exec_check(&ex, why, sizeof why) != 0);
  CHECK(strstr(why, "corrupt slot") != 0);
  CHECK_EQ(exec_set_lanes(&ex, 2), 0);
  CHECK(exec_next_on(&ex, 1, x, x->poll(x->arg)) == 0);
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  CHECK_EQ(exec_fold_lanes(&ex, 1), 0);                 // blocked there: allowed
  CHECK(exec_check(&ex, why, sizeof why) == 0);
  exec_destroy(&ex);
}

CHECK_MAIN_BEGIN("test_executor")
  RUN_TEST(test_init_rejects_bad_args);
  RUN_TEST(test_priority_order_and_fifo);
  RUN_TEST(test_yield_goes_to_tail);
  RUN_TEST(test_yield_fast_path);
  RUN_TEST(test_wake_before_block);
  RUN_TEST(test_block_and_wake);
  RUN_TEST(test_stale_and_bad_cids);
  RUN_TEST(test_reprio);
  RUN_TEST(test_rotate_and_unlink);
  RUN_TEST(test_rotate_two);
  RUN_TEST(test_resident_blocks_ends_and_order);
  RUN_TEST(test_reprio_while_rotating);
  RUN_TEST(test_take_stackless_beside_resident);
  RUN_TEST(test_set_lanes_drops_resident);
  RUN_TEST(test_one_lane_grows);
  RUN_TEST(test_ten_thousand_alive);
  RUN_TEST(test_ctz_soft);
  RUN_TEST(test_threaded_stress_invariants);
  RUN_TEST(test_threaded_stress_lanes);
  RUN_TEST(test_threaded_stress_fold_and_grow);
  RUN_TEST(test_lanes_own_first_then_steal_better);
  RUN_TEST(test_lanes_yield_and_union);
  RUN_TEST(test_wake_to_another_lane);
  RUN_TEST(test_fold_lanes);
  RUN_TEST(test_fold_check_running);
CHECK_MAIN_END
