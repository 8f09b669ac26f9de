// threadtest: user threads (thread_create / thread_exit / thread_join).
// Threads of one process share its memory and run in parallel on several harts;
// exit() from any thread ends the whole process; a fault in any thread kills it;
// nothing is left behind.
#include "ulib.h"
#include "utest.h"

#define NT 3
static volatile long sums[NT];
static volatile int started;

static int summer(void *arg) {
  long id = (long)arg, s = 0;
  __atomic_fetch_add(&started, 1, __ATOMIC_SEQ_CST);
  for (long i = 0; i < 200000; i++)
    s += i % (id + 2);
  sums[id] = s;
  return (int)(100 + id);
}

static long expected(long id) {
  long s = 0;
  for (long i = 0; i < 200000; i++)
    s += i % (id + 2);
  return s;
}

static int spinner(void *arg) {
  (void)arg;
  for (;;)
    ;
  return 0;
}

// ulock (user/uthread.c): LOCKERS threads wait for a lock main holds while
// main sleeps in a system call. They must give the hart back to main when its
// sleep ends (a lock that only spins keeps each waiter on the hart for a whole
// time slice, one after another: about LOCKERS / harts ticks of 10 ms); then
// they take it in turn, a counter changed without atomics under it, with a
// yield inside the section now and then, must come out exact.
#define LOCKERS 32
#define LOCK_ROUNDS 100
static volatile int ulk;
static volatile long locked_count;
static volatile int lockers_in;

static int locker(void *arg) {
  (void)arg;
  __atomic_fetch_add(&lockers_in, 1, __ATOMIC_SEQ_CST);
  for (int i = 0; i < LOCK_ROUNDS; i++) {
    ulock_acquire(&ulk);
    long v = locked_count;
    if (i % 16 == 0)
      yield();                                // the holder leaves the hart
    locked_count = v + 1;
    ulock_release(&ulk);
  }
  return 0;
}

// timed: whether to check how long main's sleep took. Only under -icount,
// where guest time is counted in instructions (scripts/test.sh runs
// `threadtest --ulock-timed` so): on the wall clock a loaded host made a
// 20 ms sleep take 145 ms with a lock that does yield, more than the two-hart
// spinning lock's 179 is above it, so no bound tells the two apart there.
static void test_ulock(int timed) {
  int tids[LOCKERS], made = 1;
  ulock_acquire(&ulk);
  for (int i = 0; i < LOCKERS; i++)
    made &= (tids[i] = uthread_create(locker, 0)) > 0;
  check("ulock-threads", made, 1);
  if (!made)
    exit(1);
  while (__atomic_load_n(&lockers_in, __ATOMIC_SEQ_CST) < LOCKERS)
    yield();
  long t0 = uptime();
  sleep(20);
  long held = uptime() - t0;
  ulock_release(&ulk);
  for (int i = 0; i < LOCKERS; i++)
    uthread_join(tids[i], 0);
  check("ulock-mutual-exclusion", locked_count, (long)LOCKERS * LOCK_ROUNDS);
  // 20 ms asked: 21-26 ms measured; a lock that only spins made it 340 ms
  // on one hart (32 waiters, each keeping the hart for its 10 ms slice).
  if (timed)
    check("ulock-waiters-yield-to-holder", held < 20 + 80, 1);
  if (held >= 100)
    printf("threadtest: a 20 ms sleep under the lock took %ld ms\n", held);
}

static int exiter(void *arg) {
  (void)arg;
  exit(7);                                   // ends the whole process
  return 0;
}

static int faulter(void *arg) {
  (void)arg;
  return *(volatile int *)0;                 // kills the whole process
}

// One thread writes and reads a pipe through descriptors the other thread
// keeps closing and re-creating (pipe() reuses the lowest numbers): each call
// finds the old pipe, the new one, or nothing (-EBADF), never a freed file.
// (The kernel holds a file for the whole of a call when another thread could
// close it. Without that hold the window is a few dozen instructions: this
// stress did not hit it in six runs at 2 and 4 harts, so it checks the answers,
// and with the leak check around it that nothing is lost, not that window.)
#define RACE_ROUNDS 3000
static int race_fds[2];
static volatile int race_over;

static volatile int race_calls;

static int race_user(void *arg) {
  (void)arg;
  char c;
  while (!race_over) {
    long w = write(race_fds[1], "x", 1), r = read(race_fds[0], &c, 1);
    if ((w != 1 && w != -EBADF && w != -EPIPE) || (r != 1 && r != 0 && r != -EBADF))
      return 1;                              // only these answers make sense
    race_calls++;
  }
  return 0;
}

static int close_race(void) {
  if (pipe(race_fds) != 0)
    return 3;
  int tid = uthread_create(race_user, 0), st = -1;
  while (race_calls == 0)                    // (it runs, also on one hart)
    yield();
  for (int i = 0; i < RACE_ROUNDS; i++) {
    if (i % 16 == 0)
      yield();                               // on one hart: let it in between

    close(race_fds[0]);
    close(race_fds[1]);
    if (pipe(race_fds) != 0)
      return 4;
  }
  race_over = 1;
  close(race_fds[0]);                        // (a read or write still blocked ends:
  close(race_fds[1]);                        //  its other end is gone)
  return uthread_join(tid, &st) == 0 ? st : 5;
}

// Threads blocked in read() on one pipe: a synchronous call that waits on a
// pipe parks its thread on the pipe's queue (kernel/syswork.c, syswork_park),
// and a write wakes every parked reader. Each must end with exactly one byte
// (the one that finds the pipe empty again parks again), or 0 at end of file.
static int park_fds[2];
static volatile char park_got[2];

static int park_reader(void *arg) {
  long i = (long)arg;
  char c = 0;
  long r = read(park_fds[0], &c, 1);
  park_got[i] = c;
  return (int)r;
}

static void parked_readers(void) {
  int r = pipe(park_fds);
  check("parked-pipe", r, 0);
  if (r != 0)
    return;
  int a = uthread_create(park_reader, (void *)0), b = uthread_create(park_reader, (void *)1);
  yield();                                   // (whether they wait yet or not, the same outcome)
  check("parked-write-1", write(park_fds[1], "a", 1), 1);
  check("parked-write-2", write(park_fds[1], "b", 1), 1);
  int sa = -1, sb = -1;
  check("parked-join-a", uthread_join(a, &sa), 0);
  check("parked-join-b", uthread_join(b, &sb), 0);
  check("parked-one-byte-each", sa == 1 && sb == 1, 1);
  check("parked-both-bytes", park_got[0] + park_got[1], 'a' + 'b');
  // End of file wakes every parked reader for good.
  a = uthread_create(park_reader, (void *)0);
  b = uthread_create(park_reader, (void *)1);
  yield();
  close(park_fds[1]);
  check("parked-eof-join-a", uthread_join(a, &sa), 0);
  check("parked-eof-join-b", uthread_join(b, &sb), 0);
  check("parked-eof-both", sa == 0 && sb == 0, 1);
  close(park_fds[0]);
}

// A thread that spends its time in system calls gives its hart up at a tick
// like one that computes, though it takes most of its ticks in the kernel,
// during a call (kernel/switcher.c, tick_seen). On one hart main yields
// CALLER_TURNS times while a sibling loops on a pipe (a byte written, a byte
// read): each time it must get the hart back. Before the fix, main got a few
// turns and then none: on QEMU each tick came to be raised while the vCPU
// handled an ecall, and so was taken in the kernel, never in U-mode. The
// caller gives up after 60 s (a safety net only: 200 ticks are 2 s, and a
// loaded host that coalesces ticks still brings 200 well within it).
#define CALLER_TURNS 200
static volatile int caller_in, caller_stop;
static int caller_fds[2];

static int caller(void *arg) {
  (void)arg;
  long t0 = uptime(), calls = 0;
  char c;
  caller_in = 1;
  while (!caller_stop) {
    if (write(caller_fds[1], "x", 1) != 1 || read(caller_fds[0], &c, 1) != 1)
      return 2;
    if (++calls % 64 == 0 && uptime() - t0 > 60000)
      return 1;
  }
  return 0;
}

static void test_caller_preempted(void) {
  check("caller-pipe", pipe(caller_fds), 0);
  int tid = uthread_create(caller, 0), st = -1;
  check("caller-thread", tid > 0, 1);
  if (tid <= 0)
    return;
  while (!caller_in)
    yield();
  for (int i = 0; i < CALLER_TURNS; i++)
    yield();                                 // (on one hart: back only through a tick)
  caller_stop = 1;
  check("caller-join", uthread_join(tid, &st), 0);
  check("calls-give-the-hart-up-at-each-tick", st, 0);
  close(caller_fds[0]);
  close(caller_fds[1]);
}

static int child_mode(const char *mode) {
  if (strcmp(mode, "--close-race") == 0)
    return close_race();
  if (strcmp(mode, "--exit-while-parked") == 0) {
    // Threads parked in read() when the process ends: the calls give their
    // pipe back (the leak check below counts it).
    if (pipe(park_fds) != 0)
      return 3;
    uthread_create(park_reader, (void *)0);
    uthread_create(park_reader, (void *)1);
    for (int i = 0; i < 4; i++)
      yield();
    exit(9);
  }
  if (strcmp(mode, "--exit-from-thread") == 0) {
    uthread_create(spinner, 0);
    uthread_create(exiter, 0);
    for (;;)
      ;                                      // main spins too: exit must stop it
  }
  if (strcmp(mode, "--fault-in-thread") == 0) {
    uthread_create(spinner, 0);
    uthread_create(faulter, 0);
    for (;;)
      ;
  }
  return 100;
}

static int run_child(const char *mode) {
  char *argv[] = { "threadtest", (char *)mode, 0 };
  int pid = spawn("threadtest", (const char *const *)argv), status = -99;
  if (pid < 0 || wait(pid, &status) != pid)
    return -1000;
  return status;
}

int main(int argc, char **argv) {
  utest_prog = "threadtest";
  if (argc > 1 && strcmp(argv[1], "--ulock-timed") == 0) {
    test_ulock(1);               // (alone, under -icount: scripts/test.sh)
    return utest_summary();
  }
  if (argc > 1)
    return child_mode(argv[1]);
  int tids[NT];
  for (long i = 0; i < NT; i++)
    tids[i] = uthread_create(summer, (void *)i);
  for (int i = 0; i < NT; i++)
    check("create", tids[i] > 0, 1);
  for (int i = 0; i < NT; i++) {
    int status = -1;
    check("join", uthread_join(tids[i], &status), 0);
    check("join-status", status, 100 + i);
    check("shared-memory-result", sums[i] == expected(i), 1);
  }
  check("all-started", started, NT);
  int st;
  check("join-again", thread_join(tids[0], &st), -ESRCH);
  check("join-self", thread_join(0, &st), -EINVAL);
  check("join-bad-tid", thread_join(99, &st), -ESRCH);
  check("join-negative-tid", thread_join(-1, &st), -ESRCH);
  int t = uthread_create(summer, (void *)0);
  check("join-bad-status-pointer", thread_join(t, (int *)0x10), -EFAULT);
  check("join-after-bad-pointer", uthread_join(t, &st), 0);
  check("create-bad-stack", thread_create((void (*)(void *))0x10000, 0, (void *)0x80000000UL), -EINVAL);
  parked_readers();
  check("create-misaligned-stack", thread_create((void (*)(void *))0x10000, 0, (void *)0x7fee0008UL), -EINVAL);
  test_ulock(0);
  test_caller_preempted();

  // Leak check across processes whose threads end in every way. (Baseline here:
  // this process's own heap has grown for thread stacks and stays grown.)
  // Every sample is taken with the machine at rest (KSTAT_QUIET): the kernel
  // coroutine of this thread's last call that blocked may still be freeing
  // its stack on another hart, and init may not have blocked in wait yet.
  long free0 = kstat(KSTAT_FREE_PAGES | KSTAT_QUIET), objs0 = kstat(KSTAT_KMALLOC_OBJECTS | KSTAT_QUIET);
  check("exit-from-thread-ends-process", run_child("--exit-from-thread"), 7);
  check("fault-in-thread-kills-process", run_child("--fault-in-thread"), -1);
  check("close-while-another-thread-reads-and-writes", run_child("--close-race"), 0);
  check("exit-while-threads-wait-in-read", run_child("--exit-while-parked"), 9);

  int same = 0;
  for (int i = 0; i < 3000 && !same; i++) {   // 30 s at most: a safety net
    same = kstat(KSTAT_FREE_PAGES | KSTAT_QUIET) == free0 &&
           kstat(KSTAT_KMALLOC_OBJECTS | KSTAT_QUIET) == objs0;
    if (!same)
      sleep(10);
  }
  check("children-left-nothing", same, 1);
  if (!same)
    printf("threadtest: free pages %ld (was %ld), kmalloc objects %ld (was %ld)\n",
           kstat(KSTAT_FREE_PAGES), free0, kstat(KSTAT_KMALLOC_OBJECTS), objs0);
  return utest_summary();
}
