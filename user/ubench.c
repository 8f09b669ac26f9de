// ubench: user-level microbenchmarks, run by `make bench-micro` with bootargs
// user=ubench on one hart under QEMU -icount shift=0, where rdinstret counts
// every guest instruction the hart retires -- user and kernel alike -- exactly.
// Prints BENCH lines like the kernel's benchmarks.
#include "cops.h"
#include "ulib.h"

// With -c (user=ubench,-c) the loops count clock cycles (rdcycle) instead of
// instructions: the figure of interest on a real core or its RTL (make sim).
// `ubench -c N` runs N iterations instead of 2000 (the simulated Rocket is slow).
static int count_cycles;
static int N = 2000;
static char n_arg[12];      // N as text, for the yielder children

static inline uint64_t instret(void) {
  uint64_t x;
  if (count_cycles)
    __asm__ volatile("rdcycle %0" : "=r"(x));
  else
    __asm__ volatile("rdinstret %0" : "=r"(x));
  return x;
}

static void report_in(const char *name, uint64_t total, uint64_t n, int cycles) {
  uint64_t tenths = (total * 10 + n / 2) / n;
  printf("BENCH name=%s value=%lu.%lu unit=%s\n", name, (unsigned long)(tenths / 10),
         (unsigned long)(tenths % 10), cycles ? "cycles" : "instructions");
}

static void report(const char *name, uint64_t total, uint64_t n) {
  report_in(name, total, n, count_cycles);
}

// ---- a synchronous system call: ecall, dispatch, sret ----
static void bench_sync_syscall(void) {
  uint64_t t0 = instret();
  for (int i = 0; i < N; i++)
    getpid();
  report("user_sync_syscall", instret() - t0, N);
}

// ---- one emulated u-CSR access (illegal instruction -> OpenSBI -> kernel) ----
static void bench_emulated_csr(void) {
  uint64_t t0 = instret(), x;
  for (int i = 0; i < N; i++)
    __asm__ volatile("csrr %0, 0x040" : "=r"(x));      // uscratch
  report("user_emulated_csr_read", instret() - t0, N);
}

// ---- user coroutine switches ----
static int rounds;
static int poll_yield(void *arg) {
  (void)arg;
  return ++rounds >= 2 * N ? CO_DONE : CO_YIELD;
}

static void bench_stackless_switch(void) {
  rounds = 0;
  cops_spawn(poll_yield, 0, 2);
  cops_spawn(poll_yield, 0, 2);
  uint64_t t0 = instret();
  cops_yield();                      // both run (priority 2 beats main's 4) until done
  report("user_switch_stackless", instret() - t0, 2 * N);
}

static void yielder(void *arg) {
  (void)arg;
  while (rounds < 2 * N) {
    rounds++;
    cops_yield();
  }
}

static void bench_stackful_switch(void) {
  rounds = 0;
  cops_spawn_stackful(yielder, 0, 2);
  cops_spawn_stackful(yielder, 0, 2);
  uint64_t t0 = instret();
  cops_yield();
  report("user_switch_stackful_cacs", instret() - t0, 2 * N);
}

// ---- the async round trip ----
// A reader submits an async read on an empty pipe (-> kernel coroutine); main
// then writes one byte, which completes it: kernel coroutine -> ring -> user
// interrupt -> handler -> wake -> the reader resumes. The whole hart is counted,
// so the total includes main's write; the cost of a plain one-byte pipe write
// (nobody waiting) is measured separately and subtracted. (Subtracting the
// triggering write itself would be wrong: on one hart the kernel coroutine runs
// inside that write, because the switcher yields to better-priority kernel work.)
static int p[2];
static volatile int got;
static uint64_t rt_total;
static cid_t main_cid;

static uint64_t delivery_total;

static void async_reader(void *arg) {
  (void)arg;
  char c;
  for (int i = 0; i < N / 4; i++) {
    uint64_t t0 = instret();
    cops_async(SYS_read, p[0], (long)&c, 1);
    rt_total += instret() - t0;
    // One hart: the post (by the kernel coroutine that completed the read) and
    // the handler's first C instruction are on the same instret scale.
    delivery_total += cops_uintr_entry_instret() - (uint64_t)kstat(KSTAT_UINTR_POST_INSTRET);
    got++;
    cops_wake(main_cid);
  }
}

static void bench_async_roundtrip(void) {
  pipe(p);
  got = 0;
  rt_total = delivery_total = 0;
  uint64_t plain = 0;
  char c;
  for (int i = 0; i < N / 4; i++) {
    uint64_t w0 = instret();
    write(p[1], "x", 1);             // nobody waits: just the write
    plain += instret() - w0;
    read(p[0], &c, 1);
  }
  cops_spawn_stackful(async_reader, 0, 2);
  for (int i = 0; i < N / 4; i++) {
    cops_yield();                    // the reader submits and blocks
    write(p[1], "x", 1);
    while (got <= i)
      cops_block();
  }
  report("user_pipe_write_1byte", plain, N / 4);
  report("user_async_roundtrip", rt_total - plain, N / 4);
  // Both ends of the delivery read instret (the kernel's post, cops.c's
  // handler entry), with -c too.
  report_in("uintr_delivery_local", delivery_total, N / 4, 0);
  close(p[0]);
  close(p[1]);
}

// ---- a process switch: two processes yield() to each other ----
static void bench_process_switch(void) {
  char *argv[] = { "ubench", "--yielder", count_cycles ? "-c" : "-i", n_arg, 0 };
  int a = spawn("ubench", (const char *const *)argv);
  int b = spawn("ubench", (const char *const *)argv);
  int st;
  wait(a, &st);
  wait(b, &st);
}

static void yielder_process(void) {
  // Both children run this; with one hart their yields alternate, so the
  // instructions between the first and the last yield span 2N switches (the
  // other process's share included: instret counts the whole hart).
  yield();
  uint64_t t0 = instret();
  for (int i = 0; i < N; i++)
    yield();
  uint64_t t = instret() - t0;
  static int reported;
  if (!reported++ && getpid() % 2 == 0)
    report("process_switch_yield", t, 2 * N);
}

// ---- a thread switch: two threads of this process yield() to each other ----
static volatile uint64_t thread_t0, thread_t1;
static int thread_yielder(void *arg) {
  int first = arg != 0;
  yield();
  if (first)
    thread_t0 = instret();
  for (int i = 0; i < N; i++)
    yield();
  if (first)
    thread_t1 = instret();
  return 0;
}

static void bench_thread_switch(void) {
  int a = uthread_create(thread_yielder, (void *)1);
  int b = uthread_create(thread_yielder, 0);
  int st;
  uthread_join(a, &st);              // the main thread steps aside (it blocks in the kernel)
  uthread_join(b, &st);
  // Between the first thread's first and last yield, both threads switched
  // about 2N times (one hart: instret counts both).
  report("thread_switch_yield", thread_t1 - thread_t0, 2 * N);
}

int main(int argc, char **argv) {
  int yielder = argc > 1 && strcmp(argv[1], "--yielder") == 0;
  if (yielder) {                     // ubench --yielder -c|-i N
    argv++;
    argc--;
  }
  count_cycles = argc > 1 && strcmp(argv[1], "-c") == 0;
  if (argc > 2 && atoi(argv[2]) >= 4)
    N = atoi(argv[2]);
  snprintf(n_arg, sizeof n_arg, "%d", N);
  if (yielder) {
    yielder_process();
    return 0;
  }
  main_cid = cops_current();
  bench_sync_syscall();
  bench_emulated_csr();
  bench_stackless_switch();
  bench_stackful_switch();
  bench_async_roundtrip();
  bench_process_switch();
  bench_thread_switch();
  printf("BENCH USER DONE\n");
  return 0;
}
