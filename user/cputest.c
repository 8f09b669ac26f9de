// cputest: alloc_cpu. One more thread runs this process's executor, so its
// coroutines run on two harts at once (run with 2 harts or more): both threads
// must execute coroutines, results must be right, an async call made on the
// other thread than the one main is blocking must complete through that
// thread's interrupt, many async calls from both threads at once must each get
// their own results, and the executor's invariants must hold afterwards.
// (Coroutines move between threads freely: main itself may run on either.)
// Last, an idle thread must come back for work that appears with no system
// call: the kernel wakes it from uwait when its sibling enters the kernel
// (here: its timer ticks) while the executor has ready coroutines.
#include "cops.h"
#include "ulib.h"
#include "utest.h"

#define NCO 8
static volatile long results[NCO];
static volatile int ran_on[2], done;
static cid_t main_cid;

static void count_thread(void) {
  __atomic_fetch_add(&ran_on[cops_thread_index() ? 1 : 0], 1, __ATOMIC_SEQ_CST);
}

// Computes in segments; each segment counts for the thread that runs it (a
// coroutine may continue on either thread after a yield).
static long work(long seed) {
  long x = seed;
  for (long i = 0; i < 400000; i++) {
    x = x * 6364136223846793005L + 1442695040888963407L;
    if (i % 50000 == 0) {
      count_thread();
      cops_yield();
    }
  }
  return x;
}

static void worker(void *arg) {
  long id = (long)arg;
  results[id] = work(id);
  // A worker ends only once both threads have run coroutines: how soon the
  // added thread's hart gets going depends on the host, so wait for that event
  // (with a safety net) rather than hoping the work outlasts it.
  long until = uptime() + 30000;
  while ((ran_on[0] == 0 || ran_on[1] == 0) && uptime() < until) {
    count_thread();
    cops_yield();
  }
  if (__atomic_add_fetch(&done, 1, __ATOMIC_SEQ_CST) == NCO)
    cops_wake(main_cid);
}

static volatile long async_result = -1;
static volatile int async_thread = -1;
static void async_on_helper(void *arg) {
  (void)arg;
  async_thread = cops_thread_index();
  async_result = cops_async(SYS_sleep, 5, 0, 0);
  cops_wake(main_cid);
}

// Async calls from both threads at once. NREAD readers (more than a chunk of
// the runtime's operation table: EXEC_CHUNK_SLOTS, so coroutines on both
// threads make chunks at about the same time) each read 1 + i % 8 bytes from
// a pipe of their own, ASYNC_ROUNDS times. Each round main waits until every
// reader is about to submit, then writes each one the bytes it asked for,
// its own byte value: the results differ by reader, and one handed to the
// wrong call shows. Completions arrive for both threads' calls in the one
// ring, and both threads' handlers drain it at once. The readers run at a
// worse priority than main, which starts each round.
#define NREAD 300
#define ASYNC_ROUNDS 20
static int apipe[NREAD][2];
static volatile int a_round, a_submitting, a_done, a_wrong, a_threads[2];

static void areader(void *arg) {
  long i = (long)arg, len = 1 + i % 8;
  char buf[8];
  for (int r = 0; r < ASYNC_ROUNDS; r++) {
    while (a_round <= r)
      cops_yield();                  // (main has not started this round yet)
    __atomic_fetch_add(&a_threads[cops_thread_index() ? 1 : 0], 1, __ATOMIC_SEQ_CST);
    if (__atomic_add_fetch(&a_submitting, 1, __ATOMIC_SEQ_CST) == (r + 1) * NREAD)
      cops_wake(main_cid);
    memset(buf, 0, sizeof buf);
    int right = cops_async(SYS_read, apipe[i][0], (long)buf, len) == len;
    for (long k = 0; k < len; k++)
      right &= buf[k] == (char)i;
    if (!right)
      __atomic_fetch_add(&a_wrong, 1, __ATOMIC_SEQ_CST);
    if (__atomic_add_fetch(&a_done, 1, __ATOMIC_SEQ_CST) == (r + 1) * NREAD)
      cops_wake(main_cid);
  }
}

static void async_two_threads(void) {
  int piped = 0;
  for (long i = 0; i < NREAD; i++)
    piped += pipe(apipe[i]) == 0;
  check("async-two-threads-pipes", piped, NREAD);
  for (long i = 0; i < NREAD; i++)
    cops_spawn_stackful(areader, (void *)i, COPS_MAIN_PRIO + 1);
  int rounds = 0;
  for (int r = 0; r < ASYNC_ROUNDS; r++) {
    a_round = r + 1;
    while (a_submitting < (r + 1) * NREAD)
      cops_block();                  // the round's last reader to submit wakes main
    for (long i = 0; i < NREAD; i++) {
      char bytes[8];
      memset(bytes, (char)i, sizeof bytes);
      write(apipe[i][1], bytes, 1 + i % 8);
    }
    while (a_done < (r + 1) * NREAD)
      cops_block();                  // the round's last reader to finish wakes main
    rounds++;
  }
  check("async-two-threads-all-completed", rounds, ASYNC_ROUNDS);
  check("async-two-threads-own-results", a_wrong, 0);
  check("async-two-threads-both-submitted", a_threads[0] > 0 && a_threads[1] > 0, 1);
  char why[128] = "";
  int checked = cops_check(why, sizeof why);
  check("async-two-threads-invariants", checked, 0);
  if (checked)
    printf("cputest: %s\n", why);
  for (long i = 0; i < NREAD; i++) {
    close(apipe[i][0]);
    close(apipe[i][1]);
  }
}

static volatile int kicked_ran, kicked_thread = -1;
static void kicked(void *arg) {
  (void)arg;
  kicked_thread = cops_thread_index();
  kicked_ran = 1;
}

// cputest --exit-idle: three more executor threads, idle, and main returns
// at once: the exit's own trap wakes the idle threads (uwait's kick), which
// go back to sleep while the process is being ended. An exit that raced one
// of those sleeps used to leave the thread asleep and the process alive.
static void nop(void *arg) { (void)arg; }

static int exit_with_idle_threads(void) {
  cops_alloc_cpu(3);
  sleep(2);                          // (let them start and go idle)
  // Churn: each spawn makes work with no system call, and each yield enters
  // the kernel, which wakes an idle thread; it finds the work gone (or takes
  // it) and goes back to sleep, a new wait in the kernel each time.
  for (int i = 0; i < 200; i++) {
    cops_spawn_stackful(nop, 0, 3);
    yield();
  }
  return 0;
}

#define EXIT_ROUNDS 100

// Ready work that this thread runs at once must not wake the other one: the
// kernel kicks an idle sibling only for work that stays ready for the kick
// delay (kernel/syscall.c, uwait_kick_siblings). Each round makes a
// coroutine ready with no system call, enters the kernel (kstat: a call that
// takes the full trap, where the kick is decided) while it waits, runs it
// here, and enters again with nothing ready, which starts the delay again.
// With eager kicks (bootargs kick_us=0) nearly every round's first entry
// woke the other thread. -> kicks in FRESH_ROUNDS rounds
#define FRESH_ROUNDS 200

// A thread that blocks in a synchronous call hands what its executor has
// ready to an idle sibling at once: the coroutine that writes what main's
// read waits for is made ready with no system call, and main reads at once.
// Left to the kick delay, nothing of the process would enter the kernel again
// to kick (main blocked, the other thread asleep), and the read would never
// return (the test harness's timeout).
static int handoff_pipe[2];
static void handoff_writer(void *arg) {
  (void)arg;
  write(handoff_pipe[1], "k", 1);
}

static int blocked_thread_hands_work_over(void) {
  if (pipe(handoff_pipe) != 0)
    return 0;
  cops_spawn_stackful(handoff_writer, 0, 3);
  char ch = 0;
  int ok = read(handoff_pipe[0], &ch, 1) == 1 && ch == 'k';
  close(handoff_pipe[0]);
  close(handoff_pipe[1]);
  return ok;
}

static long fresh_work_kicks(void) {
  long k0 = kstat(KSTAT_UWAIT_KICKS);
  for (int i = 0; i < FRESH_ROUNDS; i++) {
    sleep(1);                        // (the other thread back asleep in uwait)
    cops_spawn_stackful(nop, 0, 3);  // (better than main's priority: runs at the yield)
    kstat(KSTAT_HARTS);
    cops_yield();
    kstat(KSTAT_HARTS);
  }
  return kstat(KSTAT_UWAIT_KICKS) - k0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--exit-idle") == 0)
    return exit_with_idle_threads();
  utest_prog = "cputest";
  main_cid = cops_current();
  check("alloc-cpu-1", cops_alloc_cpu(1), 1);
  for (long i = 0; i < NCO; i++)
    cops_spawn_stackful(worker, (void *)i, 3);
  while (done < NCO)
    cops_block();
  int right = 1;
  for (long i = 0; i < NCO; i++) {
    long x = i;
    for (long k = 0; k < 400000; k++)
      x = x * 6364136223846793005L + 1442695040888963407L;
    right &= results[i] == x;
  }
  check("results-right", right, 1);
  check("main-thread-ran-coroutines", ran_on[0] > 0, 1);
  check("added-thread-ran-coroutines", ran_on[1] > 0, 1);
  cops_spawn_stackful(async_on_helper, 0, 3);
  int blocked_thread = cops_thread_index();
  // Synchronous sleeps: the thread running main stays blocked in the kernel or
  // in this loop, never in its executor, so only the other thread can run the
  // new coroutine. Wait for its result (the event), 30 s at most.
  for (int i = 0; i < 3000 && async_result == -1; i++)
    sleep(10);
  while (async_result == -1)
    cops_block();
  check("async-on-the-other-thread", async_thread != blocked_thread, 1);
  check("async-on-the-other-thread-result", async_result, 0);
  async_two_threads();
  // The other thread has nothing to do now: it sleeps in uwait. Make a
  // coroutine ready (a spawn: no system call) and keep this thread busy in
  // U-mode, so that only the other one can run it.
  int busy_thread = cops_thread_index();
  cops_spawn_stackful(kicked, 0, 3);
  long until = uptime() + 10000;     // (uptime reads the clock in user mode: the kernel entries are the ticks)
  while (!kicked_ran && uptime() < until)
    ;
  check("idle-thread-kicked", kicked_ran, 1);
  check("idle-thread-kicked-other-thread", kicked_thread != busy_thread, 1);
  // A timer tick between a round's spawn and its first kstat, and the vCPU
  // held up for the whole delay before that kstat, is a kick: a few are
  // possible on a loaded host, where eager kicks are one a round.
  long kicks = fresh_work_kicks();
  if (argc > 1 && strcmp(argv[1], "--eager") == 0)
    check("eager-kicks-for-fresh-work", kicks > 0, 1);
  else
    check("no-kicks-for-fresh-work", kicks <= FRESH_ROUNDS / 20, 1);
  printf("cputest: %ld kicks in %d rounds of fresh work\n", kicks, FRESH_ROUNDS);
  check("blocked-thread-hands-ready-work-over", blocked_thread_hands_work_over(), 1);
  // Processes that end while their other executor threads sleep in uwait:
  // each must exit (a hang here is the test harness's timeout).
  int exited = 0;
  for (int i = 0; i < EXIT_ROUNDS; i++) {
    static const char *const args[] = { "cputest", "--exit-idle", 0 };
    int pid = spawn("cputest", args), status = -1;
    if (pid > 0 && wait(pid, &status) == pid && status == 0)
      exited++;
  }
  check("exit-with-idle-threads", exited, EXIT_ROUNDS);
  char why[128];
  check("invariants", cops_check(why, sizeof why), 0);
  return utest_summary();
}
