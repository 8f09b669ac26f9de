// Microbenchmarks of the executor and the coroutine switches, run with bootargs
// "bench" (a job this file registers) under QEMU -icount shift=0, where rdinstret
// counts guest instructions exactly. Each result is printed as
//   BENCH name=<id> value=<number> unit=<unit>
// and scripts/bench-micro.sh collects them into docs/results/micro.md.
//
// Counting method: read instret before and after a loop of N operations and
// divide; the loop's own bookkeeping (an increment and a branch) is included,
// which is what a real caller pays too. Single measurements (wake) subtract the
// cost of reading instret twice, measured the same way.
#include "hart.h"
#include "kco.h"
#include "main.h"
#include "timer.h"
#include "klib.h"
#include "kmalloc.h"
#include "palloc.h"
#include "printf.h"
#include "riscv.h"
#include "poweroff.h"
#include "stackful.h"

#define N_OPS 10000
#define N_IDLE_STACKLESS 10000
#define N_IDLE_STACKFUL 64

// What the loops count: retired instructions (rdinstret), or with bootargs
// "bench=cycles" clock cycles (rdcycle), the figure of interest on a real core
// or its RTL (make sim ARGS=bench=cycles). Byte counts are unaffected.
static bool count_cycles;
static uint64_t counter(void) { return count_cycles ? rdcycle() : rdinstret(); }

static void report(const char *name, uint64_t total, uint64_t n, const char *unit) {
  if (strcmp(unit, "instructions") == 0 && count_cycles)
    unit = "cycles";
  // value with one decimal, from integers
  uint64_t tenths = (total * 10 + n / 2) / n;
  kprintf("BENCH name=%s value=%lu.%lu unit=%s\n", name, tenths / 10, tenths % 10, unit);
}

static int poll_yield(void *arg) { (void)arg; return CO_YIELD; }
static int poll_block(void *arg) { (void)arg; return CO_PENDING; }
static int poll_exit(void *arg) { (void)arg; return CO_DONE; }

// Run a private executor until nothing is ready (settling everything).
static void drain(struct executor *ex) {
  struct co *prev = 0, *c;
  int res = 0;
  while ((c = exec_next(ex, prev, res)) != 0) {
    res = c->poll(c->arg);
    prev = c;
  }
}

static void bench_spawn(void) {
  struct executor ex;
  exec_init(&ex, NPRIO_DEFAULT, kmalloc, kfree);
  // Grow the slot table first, so the loop measures spawn, not table growth.
  for (int i = 0; i < N_OPS; i++)
    exec_spawn(&ex, poll_exit, 0, 0, CO_STACKLESS);
  drain(&ex);
  uint64_t t0 = counter();
  for (int i = 0; i < N_OPS; i++)
    exec_spawn(&ex, poll_exit, 0, (uint32_t)i & 7, CO_STACKLESS);
  uint64_t t1 = counter();
  report("spawn_stackless", t1 - t0, N_OPS, "instructions");
  drain(&ex);
  exec_destroy(&ex);
}

// One dispatch = fetch the best ready coroutine + poll it + settle it: here N
// woken coroutines each find nothing to do and block again (return PENDING),
// which is what a woken coroutine does most often.
static void bench_dispatch(void) {
  struct executor ex;
  exec_init(&ex, NPRIO_DEFAULT, kmalloc, kfree);
  for (int i = 0; i < N_OPS; i++)
    exec_spawn(&ex, poll_block, 0, (uint32_t)i & 7, CO_STACKLESS);   // all ready
  struct co *prev = 0, *c;
  int res = 0;
  uint64_t t0 = counter();
  while ((c = exec_next(&ex, prev, res)) != 0) {
    res = c->poll(c->arg);
    prev = c;
  }
  uint64_t t1 = counter();
  report("dispatch_stackless", t1 - t0, N_OPS, "instructions");
  exec_destroy(&ex);
}

// Two coroutines of one priority yield to each other: every round requeues the
// one that ran (FIFO tail) and fetches the other.
static void bench_yield_stackless(void) {
  struct executor ex;
  exec_init(&ex, NPRIO_DEFAULT, kmalloc, kfree);
  exec_spawn(&ex, poll_yield, 0, 3, CO_STACKLESS);
  exec_spawn(&ex, poll_yield, 0, 3, CO_STACKLESS);
  struct co *prev = 0, *c;
  int res = 0;
  uint64_t t0 = counter();
  for (int i = 0; i < N_OPS; i++) {
    c = exec_next(&ex, prev, res);
    res = c->poll(c->arg);
    prev = c;
  }
  uint64_t t1 = counter();
  report("yield_stackless", t1 - t0, N_OPS, "instructions");
  exec_next(&ex, prev, CO_DONE);
  c = exec_next(&ex, 0, 0);
  exec_next(&ex, c, CO_DONE);
  exec_destroy(&ex);
}

static uint64_t instret_overhead(void) {
  uint64_t best = ~0ULL;
  for (int i = 0; i < 16; i++) {
    uint64_t t0 = counter();
    uint64_t t1 = counter();
    if (t1 - t0 < best)
      best = t1 - t0;
  }
  return best;
}

static void bench_wake(void) {
  struct executor ex;
  exec_init(&ex, NPRIO_DEFAULT, kmalloc, kfree);
  cid_t cid = (cid_t)exec_spawn(&ex, poll_block, 0, 3, CO_STACKLESS);
  drain(&ex);                        // now blocked
  uint64_t over = instret_overhead(), sum = 0;
  for (int i = 0; i < N_OPS; i++) {
    uint64_t t0 = counter();
    exec_wake(&ex, cid);
    uint64_t t1 = counter();
    sum += t1 - t0 - over;
    drain(&ex);                      // it runs and blocks again
  }
  report("wake_blocked", sum, N_OPS, "instructions");
  struct co *c = exec_lookup(&ex, cid);
  c->poll = poll_exit;
  exec_wake(&ex, cid);
  drain(&ex);
  exec_destroy(&ex);
}

// ---- stackful switches ----
static struct stackful *bench_sf;
static volatile int bench_stop;

// The coroutine side of the switch benchmarks: yield at a call site that knows
// its switch kind, as CACS intends.
static void yielder_cacs(void *arg) {
  (void)arg;
  while (!bench_stop)
    stackful_suspend_cacs(bench_sf, CO_YIELD);
}

static void yielder_full(void *arg) {
  (void)arg;
  while (!bench_stop)
    stackful_suspend_full(bench_sf, CO_YIELD);
}

static void bench_switch_pair(int full_save, const char *name) {
  struct stackful *sf = kmalloc(sizeof *sf);
  void *stack = palloc(KCO_STACK_PAGES);
  stackful_init(sf, stack, KCO_STACK_PAGES * PAGE_SIZE, full_save ? yielder_full : yielder_cacs,
                0, full_save, 0);
  bench_sf = sf;
  bench_stop = 0;
  stackful_resume(sf);               // first entry: runs up to the first yield
  uint64_t t0, t1;
  if (full_save) {
    t0 = counter();
    for (int i = 0; i < N_OPS; i++)
      stackful_resume_full(sf);      // resume -> it yields back: one pair
    t1 = counter();
  } else {
    t0 = counter();
    for (int i = 0; i < N_OPS; i++)
      stackful_resume_cacs(sf);
    t1 = counter();
  }
  report(name, t1 - t0, N_OPS, "instructions");
  bench_stop = 1;
  stackful_resume(sf);               // let it finish
  pfree(stack, KCO_STACK_PAGES);
  kfree(sf);
}

// The same pair, driven by the executor: exec_next + resume per round.
static void bench_switch_exec(int full_save, const char *name) {
  struct executor ex;
  exec_init(&ex, NPRIO_DEFAULT, kmalloc, kfree);
  struct stackful *sf = kmalloc(sizeof *sf);
  void *stack = palloc(KCO_STACK_PAGES);
  stackful_init(sf, stack, KCO_STACK_PAGES * PAGE_SIZE, full_save ? yielder_full : yielder_cacs,
                0, full_save, 0);
  bench_sf = sf;
  bench_stop = 0;
  exec_spawn(&ex, stackful_poll, sf, 3, CO_STACKFUL);
  struct co *prev = 0, *c;
  int res = 0;
  c = exec_next(&ex, prev, res);     // first entry
  res = stackful_resume(c->arg);
  prev = c;
  uint64_t t0 = counter();
  for (int i = 0; i < N_OPS; i++) {
    c = exec_next(&ex, prev, res);
    res = stackful_resume(c->arg);
    prev = c;
  }
  uint64_t t1 = counter();
  report(name, t1 - t0, N_OPS, "instructions");
  bench_stop = 1;
  c = exec_next(&ex, prev, res);
  res = stackful_resume(c->arg);
  exec_next(&ex, c, res);
  exec_destroy(&ex);
  pfree(stack, KCO_STACK_PAGES);
  kfree(sf);
}

// ---- memory per idle coroutine ----
static uint64_t kernel_bytes_in_use(void) {
  struct palloc_stats ps;
  kco_drain_stacks();                // (stacks kept for reuse would be counted, then reused)
  palloc_get_stats(&ps);
  return (ps.total_pages - ps.free_pages) * PAGE_SIZE;
}

static void bench_idle_stackless(void) {
  kmalloc_reclaim();
  uint64_t before = kernel_bytes_in_use();
  struct executor *ex = kmalloc(sizeof *ex);
  exec_init(ex, NPRIO_DEFAULT, kmalloc, kfree);
  for (int i = 0; i < N_IDLE_STACKLESS; i++)
    exec_spawn(ex, poll_block, 0, (uint32_t)i & 7, CO_STACKLESS);
  drain(ex);                         // all blocked: idle
  uint64_t after = kernel_bytes_in_use();
  // The executor struct itself is per executor, not per coroutine.
  uint64_t per = after - before - kmalloc_size_class(sizeof *ex);
  report("idle_stackless_bytes", per, N_IDLE_STACKLESS, "bytes");
  exec_destroy(ex);
  kfree(ex);
}

static volatile uint32_t idle_release, idle_count;
static void idle_stackful(void *arg) {
  (void)arg;
  __atomic_fetch_add(&idle_count, 1, __ATOMIC_SEQ_CST);
  while (!idle_release)
    kco_block();
  __atomic_fetch_sub(&idle_count, 1, __ATOMIC_SEQ_CST);
}

static void bench_idle_stackful(void) {
  cid_t cids[N_IDLE_STACKFUL];
  kmalloc_reclaim();
  uint64_t before = kernel_bytes_in_use();
  for (int i = 0; i < N_IDLE_STACKFUL; i++)
    cids[i] = (cid_t)kco_spawn_stackful(idle_stackful, 0, 5, 0);
  while (idle_count < N_IDLE_STACKFUL)
    kco_sleep_ms(1);
  kco_sleep_ms(2);                   // let the last ones block
  uint64_t after = kernel_bytes_in_use();
  report("idle_stackful_bytes", after - before, N_IDLE_STACKFUL, "bytes");
  idle_release = 1;
  for (int i = 0; i < N_IDLE_STACKFUL; i++)
    kco_wake(cids[i]);
  while (idle_count > 0)
    kco_sleep_ms(1);
}

// exec_fold_lanes (kernel/park.c folds a parking hart's lane): one fold of
// lane 1 into lane 0, with n coroutines blocked in lane 1, every slot of the
// table in use. The fold runs under every lane's lock, so this is how long
// no other hart can take a step; the blocked coroutines keep their home, so
// it should not grow with n (it walked the table until 2026-12-02).
static void bench_fold(uint32_t n, const char *name) {
  struct executor ex;
  exec_init_lanes(&ex, NPRIO_DEFAULT, 2, kmalloc, kfree);
  for (uint32_t i = 0; i < n; i++)
    exec_spawn_on(&ex, 1, poll_block, 0, 3, CO_STACKLESS);
  struct co *prev = 0, *c;
  int res = 0;
  while ((c = exec_next_on(&ex, 1, prev, res)) != 0) {   // each blocks, homed in lane 1
    res = c->poll(c->arg);
    prev = c;
  }
  uint64_t over = instret_overhead();
  uint64_t t0 = counter();
  int r = exec_fold_lanes(&ex, 1);
  uint64_t t1 = counter();
  if (r != 0)
    kpanic("bench: exec_fold_lanes refused (%d)", r);
  report(name, t1 - t0 - over, 1, "instructions");
  exec_destroy(&ex);
}

static void bench_main(void *arg) {
  (void)arg;
  kprintf("BENCH START harts=%u\n", nharts_online);
  bench_spawn();
  bench_dispatch();
  bench_yield_stackless();
  bench_wake();
  bench_switch_pair(0, "yield_resume_cacs");
  bench_switch_pair(1, "yield_resume_fullsave");
  bench_switch_exec(0, "yield_resume_cacs_via_executor");
  bench_switch_exec(1, "yield_resume_fullsave_via_executor");
  bench_idle_stackless();
  bench_idle_stackful();
  bench_fold(1024, "fold_lanes_1024");
  bench_fold(10240, "fold_lanes_10240");
  kprintf("BENCH DONE\n");
  poweroff(0);
}

static void bench_start(const char *value) {
  count_cycles = strcmp(value, "cycles") == 0;
  if (kco_spawn_stackful(bench_main, 0, 1, 0) < 0)
    kpanic("bench: cannot spawn");
}
BOOT_JOB(20, "bench", bench_start);      // bootargs bench
