// ubench: user-level microbenchmarks, run by `make bench-micro` with bootargs
// user=ubench on one hart under QEMU -icount shift=0, where rdinstret counts
// every guest instruction the hart retires -- user and kernel alike -- exactly.
// Prints BENCH lines like the kernel's benchmarks.
#include "cops.h"
#include "ulib.h"

// With -c (user=ubench,-c) the loops count clock cycles (rdcycle) instead of
// instructions: the figure of interest on a real core or its RTL (make sim).
// `ubench -c N` runs N iterations instead of 2000 (the simulated Rocket is slow),
// and `ubench --only NAME ROUNDS` runs one benchmark with its own count
// (scripts/profile.sh runs it twice and subtracts).
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
// Two coroutines of one priority take turns through the runtime's loop until
// 2N turns are used up; each turn ends with a yield, so the row is the loop's
// switch plus the least a coroutine can do around a yield: count a shared
// turn down and say whether to go on (the poll function, or the stackful
// coroutine's loop around cops_yield).
static int turns;
static int poll_yield(void *arg) {
  (void)arg;
  return --turns > 0 ? CO_YIELD : CO_DONE;
}

static void bench_stackless_switch(void) {
  turns = 2 * N;
  cops_spawn(poll_yield, 0, 2);
  cops_spawn(poll_yield, 0, 2);
  uint64_t t0 = instret();
  cops_yield();                      // both run (priority 2 beats main's 4) until done
  report("user_switch_stackless", instret() - t0, 2 * N);
}

static void yielder(void *arg) {
  (void)arg;
  while (--turns > 0)
    cops_yield();
}

static void bench_stackful_switch(void) {
  turns = 2 * N;
  cops_spawn_stackful(yielder, 0, 2);
  cops_spawn_stackful(yielder, 0, 2);
  uint64_t t0 = instret();
  cops_yield();
  report("user_switch_stackful_cacs", instret() - t0, 2 * N);
}

// ---- the async round trip ----
// A reader submits an async read on an empty pipe (it parks on the pipe); main
// then writes one byte, which completes it: the write's copy into the reader's
// buffer -> ring -> user interrupt -> handler -> wake -> the reader resumes.
// The whole hart is counted, so the total includes main's write; the cost of a
// plain one-byte pipe write (nobody waiting) is measured separately and
// subtracted. (Subtracting the triggering write itself would be wrong: the
// completion is done inside that write.)
static int p[2];
static volatile int got;
static uint64_t rt_total;
static cid_t main_cid;

static uint64_t delivery_total;
static uint64_t first_rt;

static void async_reader(void *arg) {
  (void)arg;
  char c;
  // Round trip 0 is the thread's first async call: the runtime turns on user
  // interrupts and makes the call's entry in its operation table
  // (cops.c, async_first), about 17,000 instructions once. Its cost is a row
  // of its own, so that the round trip's row is the steady state.
  for (int i = 0; i <= N / 4; i++) {
    uint64_t t0 = instret();
    cops_async(SYS_read, p[0], (long)&c, 1);
    uint64_t t = instret() - t0;
    // One hart: the post (by the write that completed the read) and
    // the handler's first C instruction are on the same instret scale.
    uint64_t d = cops_uintr_entry_instret() - (uint64_t)kstat(KSTAT_UINTR_POST_INSTRET);
    if (i == 0) {
      first_rt = t;
    } else {
      rt_total += t;
      delivery_total += d;
    }
    got++;
    cops_wake(main_cid);
  }
}

// calibrate 0 (async_roundtrip_span, for scripts/profile.sh): no calibration
// writes, so that a profile's repetition is the round trip and what the
// benchmark does around it, and nothing else.
static void async_roundtrip(int calibrate) {
  pipe(p);
  got = 0;
  rt_total = delivery_total = 0;
  uint64_t plain = 0;
  char c;
  for (int i = 0; calibrate && i < N / 4; i++) {
    uint64_t w0 = instret();
    write(p[1], "x", 1);             // nobody waits: just the write
    plain += instret() - w0;
    read(p[0], &c, 1);
  }
  cops_spawn_stackful(async_reader, 0, 2);
  for (int i = 0; i <= N / 4; i++) {
    cops_yield();                    // the reader submits and blocks
    write(p[1], "x", 1);
    while (got <= i)
      cops_block();
  }
  if (!calibrate) {
    report("user_async_roundtrip_span", rt_total, N / 4);   // (the write not subtracted)
    close(p[0]);
    close(p[1]);
    return;
  }
  report("user_pipe_write_1byte", plain, N / 4);
  report("user_async_roundtrip", rt_total - plain, N / 4);
  report("user_async_first_roundtrip", first_rt - plain / (N / 4), 1);
  // Both ends of the delivery read instret (the kernel's post, cops.c's
  // handler entry), with -c too.
  report_in("uintr_delivery_local", delivery_total, N / 4, 0);
  close(p[0]);
  close(p[1]);
}

// ---- user-interrupt delivery to a thread running on another hart ----
// Needs two harts (bench-micro runs it alone with -smp 2). A second thread of
// this process (cops_alloc_cpu) runs a spinner coroutine that keeps reading
// instret; before each round it lets a reader coroutine, on the same thread,
// submit an async read of an empty pipe (so the interrupt is that thread's).
// Main, on the first thread and so the other hart, writes the byte: its write
// completes the parked read on main's hart and posts the interrupt to the
// spinning thread. The row is the latency from the post
// (the sender's instret as uintr_post starts) to the handler's first C
// instruction on the receiver. Two harts' readings can be subtracted here
// because under -icount QEMU's instret is one global instruction count, the
// same for every hart (target/riscv/csr.c, get_ticks); QEMU runs the harts in
// turn, so the latency also holds what the sender's hart runs after its post
// until it stops (finishing the call, blocking, idling) and the receiver
// resumes. uintr_post_remote is the sender's own part, counted on the sender
// with nothing else in between. Also printed: the older composite (the
// receiver's last reading in its loop to its handler, plus the post), which
// holds the sender's wake-up and write too. Minimum over the rounds (median
// and maximum beside it).
#define REMOTE_ROUNDS (N / 20 + 1)   // odd: a middle value
static int rp2[2], go[2], done[2];
static volatile int remote_rounds;
static uint64_t remote_sample[8192 / 20 + 1];
static uint64_t remote_latency[8192 / 20 + 1];   // post -> handler on the global clock
static uint64_t remote_post;          // the sender's share (the same every round)

static void remote_reader(void *arg) {
  (void)arg;
  char c;
  cops_async(SYS_read, rp2[0], (long)&c, 1);
}

static void remote_spinner(void *arg) {
  (void)arg;
  while (remote_rounds < REMOTE_ROUNDS) {
    cops_spawn_stackful(remote_reader, 0, 1);
    cops_yield();                    // the reader (better priority) submits and blocks
    uint64_t before = cops_uintr_count(), last, now;
    write(go[1], "g", 1);            // main may write now
    __asm__ volatile("rdinstret %0" : "=r"(now));
    do {                             // the handler comes after `last` (and before
      last = now;                    // or after `now`): one loop turn of slack
      __asm__ volatile("rdinstret %0" : "=r"(now));
    } while (cops_uintr_count() == before);
    remote_post = (uint64_t)kstat(KSTAT_UINTR_POST_COST);
    remote_sample[remote_rounds] = (cops_uintr_entry_instret() - last) + remote_post;
    remote_latency[remote_rounds] = cops_uintr_entry_instret() - (uint64_t)kstat(KSTAT_UINTR_POST_INSTRET);
    remote_rounds++;
    cops_yield();                    // let the woken reader finish
    write(done[1], "d", 1);
  }
}

static void bench_remote_delivery(void) {
  if (REMOTE_ROUNDS > (int)(sizeof remote_sample / sizeof remote_sample[0])) {
    printf("ubench: remote_delivery: at most %d rounds\n", (int)(sizeof remote_sample / sizeof remote_sample[0]) * 20);
    return;
  }
  if (cops_alloc_cpu(1) != 1) {
    printf("ubench: remote_delivery needs a second thread\n");
    return;
  }
  pipe(rp2);
  pipe(go);
  pipe(done);
  remote_rounds = 0;
  // The spinner must run on the second thread: main keeps the first (its
  // reads below block the thread, not just the coroutine), so only the second
  // takes new work.
  cops_spawn_stackful(remote_spinner, 0, 3);
  char c;
  for (int i = 0; i < REMOTE_ROUNDS; i++) {
    read(go[0], &c, 1);
    write(rp2[1], "x", 1);
    read(done[0], &c, 1);
  }
  sort_u64(remote_sample, REMOTE_ROUNDS);
  sort_u64(remote_latency, REMOTE_ROUNDS);
  printf("ubench: remote delivery over %d rounds (sender's post %lu): post -> handler min %lu, "
         "median %lu, max %lu; receiver's last reading -> handler, plus the post: min %lu, "
         "median %lu, max %lu\n",
         REMOTE_ROUNDS, (unsigned long)remote_post, (unsigned long)remote_latency[0],
         (unsigned long)remote_latency[REMOTE_ROUNDS / 2],
         (unsigned long)remote_latency[REMOTE_ROUNDS - 1], (unsigned long)remote_sample[0],
         (unsigned long)remote_sample[REMOTE_ROUNDS / 2],
         (unsigned long)remote_sample[REMOTE_ROUNDS - 1]);
  report("uintr_delivery_remote", remote_latency[0], 1);
  report("uintr_post_remote", remote_post, 1);
  for (int i = 0; i < 2; i++) {
    close(rp2[i]);
    close(go[i]);
    close(done[i]);
  }
}

// ---- a process switch: two processes yield() to each other ----
static void bench_process_switch(void) {
  snprintf(n_arg, sizeof n_arg, "%d", N);
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

// ---- one-byte pipe ping-pong between two processes ----
// A child (ubench --ponger) echoes each byte from its stdin to its stdout; we
// give it pipe a's read end and pipe b's write end as those (dup), then send
// one byte and wait for it to come back, N times. Each round trip is two
// writes, two reads, and two process switches, whole machine counted.
static void ponger(void) {
  char c;
  while (read(0, &c, 1) == 1)
    write(1, &c, 1);
}

static void bench_pipe_pingpong(void) {
  int a[2], b[2], st;
  if (pipe(a) < 0 || pipe(b) < 0)
    return;
  int in = dup(0), out = dup(1);     // our own console, kept aside
  close(0);
  dup(a[0]);                         // -> 0: the child's stdin
  close(1);
  dup(b[1]);                         // -> 1: the child's stdout
  char *argv[] = { "ubench", "--ponger", 0 };
  int child = spawn("ubench", (const char *const *)argv);
  close(0);
  dup(in);
  close(1);
  dup(out);
  close(in);
  close(out);
  close(a[0]);
  close(b[1]);
  char c = 'x';
  write(a[1], &c, 1);                // the first round starts the child
  read(b[0], &c, 1);
  uint64_t t0 = instret();
  for (int i = 0; i < N; i++) {
    write(a[1], &c, 1);
    read(b[0], &c, 1);
  }
  uint64_t t = instret() - t0;
  close(a[1]);                       // the child reads end of file and exits
  close(b[0]);
  wait(child, &st);
  report("pipe_pingpong_roundtrip", t, N);
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

static void bench_async_roundtrip(void) { async_roundtrip(1); }
static void bench_async_roundtrip_span(void) { async_roundtrip(0); }

// alone: run only when named (ubench --only NAME), not in the full run.
static const struct { const char *name; void (*run)(void); int alone; } benches[] = {
  { "sync_syscall", bench_sync_syscall, 0 },
  { "emulated_csr", bench_emulated_csr, 0 },
  { "stackless_switch", bench_stackless_switch, 0 },
  { "stackful_switch", bench_stackful_switch, 0 },
  { "async_roundtrip", bench_async_roundtrip, 0 },
  { "async_roundtrip_span", bench_async_roundtrip_span, 1 },   // for scripts/profile.sh
  { "process_switch", bench_process_switch, 0 },
  { "thread_switch", bench_thread_switch, 0 },
  { "pipe_pingpong", bench_pipe_pingpong, 0 },
  { "remote_delivery", bench_remote_delivery, 1 },   // two harts: bench-micro runs it alone
};
#define NBENCH (sizeof benches / sizeof benches[0])

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--ponger") == 0) {
    ponger();
    return 0;
  }
  int yielder = argc > 1 && strcmp(argv[1], "--yielder") == 0;
  if (yielder) {                     // ubench --yielder -c|-i N
    argv++;
    argc--;
  }
  count_cycles = argc > 1 && strcmp(argv[1], "-c") == 0;
  if (count_cycles && argc > 2 && atoi(argv[2]) >= 4)
    N = atoi(argv[2]);
  if (yielder && argc > 2)
    N = atoi(argv[2]);
  if (yielder) {
    yielder_process();
    return 0;
  }
  main_cid = cops_current();
  if (argc > 1 && strcmp(argv[1], "--only") == 0) {
    if (argc > 3)
      N = atoi(argv[3]);
    for (unsigned i = 0; argc > 2 && N >= 4 && i < NBENCH; i++)   // (N / 4 round trips)
      if (strcmp(argv[2], benches[i].name) == 0) {
        benches[i].run();
        printf("BENCH USER DONE\n");
        return 0;
      }
    fprintf(STDERR, "usage: ubench [-c] | ubench --only NAME [ROUNDS >= 4]; NAME is one of");
    for (unsigned i = 0; i < NBENCH; i++)
      fprintf(STDERR, " %s", benches[i].name);
    fprintf(STDERR, "\n");
    return 1;
  }
  for (unsigned i = 0; i < NBENCH; i++)
    if (!benches[i].alone)
      benches[i].run();
  printf("BENCH USER DONE\n");
  return 0;
}
