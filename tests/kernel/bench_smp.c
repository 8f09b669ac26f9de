// The CES paper's mutex microbenchmark, in the kernel (bootargs "benchsmp";
// scripts/bench-smp.sh runs it at -smp 1, 2 and 4 and writes
// docs/results/smp.md). SMP_COS stackful kernel coroutines each loop
// SMP_ITERS times: a short critical section on shared data (about 30
// instructions), then independent work (about 400). Three locks guard the
// section:
//   spin     the kernel spinlock (kernel/spinlock.c): waiters spin on the hart
//   handoff  a FIFO hand-off mutex: the CES mutex's lock form (ces_lock /
//            ces_unlock), where each unlock passes the lock to the next
//            waiter, which then waits in the ready queue for a hart
//   ces      ces_run: contended sections run back to back on the holder's
//            hart and the waiters' continuations are woken elsewhere
// Throughput is iterations completed per second of guest time (the time CSR,
// which follows the host's clock when QEMU runs without -icount). Each lock
// runs SMP_ROUNDS times, interleaved, so a noisy moment of the shared host
// does not fall on one lock only. Output:
//   BENCH name=<lock>_smp<harts> value=<ops per second> unit=ops/s
//   BENCH name=<lock>_waited_smp<harts> value=<percent> unit=percent
//   BENCH name=ces_combined_smp<harts> value=<percent> unit=percent
// (for the two queue locks: the share of requests that queued behind a
// holder, and for CES the share that a combiner ran for their coroutine).
// "benchsmp=B:S" sets the queue locks' batch to B (0: CES_BATCH_DEFAULT) and
// their spin to S polls before a waiter sleeps (default 0).
#include "hart.h"
#include "kces.h"
#include "kco.h"
#include "klib.h"
#include "main.h"
#include "poweroff.h"
#include "printf.h"
#include "riscv.h"
#include "spinlock.h"

#define SMP_COS 16
#define SMP_ITERS 32000             // a run then lasts 100 ms or more, many ticks
#define SMP_ROUNDS 3
#define SMP_LOCAL_STEPS 48          // about 8 instructions each

enum { L_SPIN, L_HANDOFF, L_CES, NLOCKS };
static const char *const lock_name[NLOCKS] = { "spin", "handoff", "ces" };

static struct {
  uint64_t counter;
  uint64_t table[16];
} shared __attribute__((aligned(64)));
static struct spinlock b_spin = SPINLOCK_INIT("benchsmp");
static struct ces_mutex b_ces;
static int b_kind;
static uint32_t b_batch, b_polls;           // bootargs benchsmp=B:S (see below)
static volatile uint32_t b_done;
static cid_t b_main;
static volatile uint64_t b_sink;

// The critical section: a counter and a few table slots derived from it.
static void section(void *arg) {
  (void)arg;
  uint64_t v = shared.counter + 1;
  shared.counter = v;
  shared.table[v & 15] += v;
  shared.table[(v >> 4) & 15] ^= v * 0x9e3779b97f4a7c15ULL;
  shared.table[(v >> 8) & 15] += shared.table[v & 15] >> 3;
}

// The independent part: a dependent chain the compiler cannot shorten.
static uint64_t local_work(uint64_t x) {
  for (int i = 0; i < SMP_LOCAL_STEPS; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

static void worker(void *arg) {
  uint64_t x = (uint64_t)(uintptr_t)arg * 0x2545f4914f6cdd1dULL + 1;
  for (int i = 0; i < SMP_ITERS; i++) {
    if (b_kind == L_SPIN) {
      spin_lock(&b_spin);
      section(0);
      spin_unlock(&b_spin);
    } else if (b_kind == L_HANDOFF) {
      struct ces_node n;
      ces_lock(&b_ces, &n);
      section(0);
      ces_unlock(&b_ces, &n);
    } else {
      ces_run(&b_ces, section, 0);
    }
    x = local_work(x);
  }
  __atomic_fetch_add(&b_sink, x, __ATOMIC_RELAXED);
  if (__atomic_add_fetch(&b_done, 1, __ATOMIC_SEQ_CST) == SMP_COS)
    kco_wake(b_main);
}

// One run of one lock: iterations per second, or 0 if the result is wrong.
static uint64_t run(int kind) {
  b_kind = kind;
  b_done = 0;
  shared.counter = 0;
  ces_init(&b_ces, &kces_env, b_batch);
  b_ces.spin = b_polls;
  b_main = kco_current();
  uint64_t t0 = rdtime();
  for (int i = 0; i < SMP_COS; i++)
    if (kco_spawn_stackful(worker, (void *)(uintptr_t)i, 4, 0) < 0)
      kpanic("benchsmp: cannot spawn");
  while (__atomic_load_n(&b_done, __ATOMIC_SEQ_CST) < SMP_COS)
    kco_block();
  uint64_t dt = rdtime() - t0;
  uint64_t ops = (uint64_t)SMP_COS * SMP_ITERS;
  if (shared.counter != ops) {
    kprintf("BENCH FAIL %s: counter %lu, expected %lu\n", lock_name[kind], shared.counter, ops);
    return 0;
  }
  return dt ? ops * board.timebase_hz / dt : 0;
}

static void percent(const char *lock, const char *what, uint64_t part, uint64_t whole) {
  kprintf("BENCH name=%s_%s_smp%u value=%lu.%lu unit=percent\n", lock, what, nharts_online,
          part * 100 / whole, part * 1000 / whole % 10);
}

static void benchsmp_main(void *arg) {
  (void)arg;
  kprintf("BENCH START harts=%u coroutines=%d iterations=%d ces_batch=%u spin=%u\n", nharts_online,
          SMP_COS, SMP_ITERS, b_batch ? b_batch : CES_BATCH_DEFAULT, b_polls);
  for (int r = 0; r < SMP_ROUNDS; r++)
    for (int k = 0; k < NLOCKS; k++) {
      uint64_t v = run(k);
      kprintf("BENCH name=%s_smp%u value=%lu unit=ops/s\n", lock_name[k], nharts_online, v);
      if (k != L_SPIN && b_ces.sections) {
        // Requests that queued behind a holder: each was either run by a
        // combiner or handed the lock.
        percent(lock_name[k], "waited", b_ces.combined + b_ces.handoffs, b_ces.sections);
        if (k == L_CES)
          percent(lock_name[k], "combined", b_ces.combined, b_ces.sections);
      }
    }
  kprintf("BENCH DONE\n");
  poweroff(0);
}

static void benchsmp_start(const char *value) {
  const char *p = value;
  for (; *p >= '0' && *p <= '9'; p++)
    b_batch = b_batch * 10 + (uint32_t)(*p - '0');
  if (*p == ':')
    for (p++; *p >= '0' && *p <= '9'; p++)
      b_polls = b_polls * 10 + (uint32_t)(*p - '0');
  if (kco_spawn_stackful(benchsmp_main, 0, 1, 0) < 0)
    kpanic("benchsmp: cannot spawn");
}
BOOT_JOB(21, "benchsmp", benchsmp_start);   // bootargs benchsmp
