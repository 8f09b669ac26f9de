// lbench: the system-call and switch microbenchmarks of user/ubench.c, as
// Linux programs, so that micro.md sets Coral's figures beside Linux's
// measured on the same QEMU under -icount (scripts/bench-micro.sh boots the
// Linux baseline of scripts/linux/build.sh with "-- bench": init runs this).
// One hart, and rdinstret counts the whole hart, kernel included, as in
// ubench; the measured loops are ubench's, on purpose, so that the two
// kernels run the same user code. Prints "BENCH name=linux_<id> value=<instructions> unit=instructions".
//
// The switches count hand-offs, not yields: two processes (or threads) take
// turns through a shared word, each yielding until it is its turn, so a
// yield that comes back to its caller (Linux's scheduler does not promise
// to switch, and often does not) is paid for in the figure instead of
// counted as a switch. The *_sched_yield_call rows divide the same span by
// the yields made on both sides instead.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 2000

static inline uint64_t instret(void) {
  uint64_t v;
  __asm__ volatile("rdinstret %0" : "=r"(v));
  return v;
}

static void report(const char *name, uint64_t total, int count) {
  printf("BENCH name=linux_%s value=%.1f unit=instructions\n", name, (double)total / count);
  fflush(stdout);
}

static void bench_getpid(void) {
  syscall(SYS_getpid);
  uint64_t t0 = instret();
  for (int i = 0; i < N; i++)
    syscall(SYS_getpid);
  report("getpid", instret() - t0, N);
}

// Take N turns with the other side through *turn (0 or 1: whose turn);
// returns how many times it yielded.
static long take_turns(volatile int *turn, int me) {
  long yields = 0;
  for (int i = 0; i < N; i++) {
    while (__atomic_load_n(turn, __ATOMIC_ACQUIRE) != me) {
      sched_yield();
      yields++;
    }
    __atomic_store_n(turn, !me, __ATOMIC_RELEASE);
  }
  return yields;
}

static void bench_process_switch(void) {
  volatile int *turn = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (turn == MAP_FAILED)
    return;
  *turn = 0;
  volatile long *child_yields = (volatile long *)(turn + 16);
  pid_t child = fork();
  if (child == 0) {
    *child_yields = take_turns(turn, 1);
    _exit(0);
  }
  uint64_t t0 = instret();
  long yields = take_turns(turn, 0);
  uint64_t t = instret() - t0;
  waitpid(child, 0, 0);
  report("process_switch_yield", t, 2 * N);   // 2N hand-offs, both sides counted
  report("process_sched_yield_call", t, (int)(yields + *child_yields));
  munmap((void *)turn, 4096);
}

static volatile int thread_turn;
static volatile long other_yields;
static void *other_thread(void *arg) {
  (void)arg;
  other_yields = take_turns(&thread_turn, 1);
  return 0;
}

static void bench_thread_switch(void) {
  pthread_t th;
  thread_turn = 0;
  if (pthread_create(&th, 0, other_thread, 0) != 0)
    return;
  uint64_t t0 = instret();
  long yields = take_turns(&thread_turn, 0);
  uint64_t t = instret() - t0;
  pthread_join(th, 0);
  report("thread_switch_yield", t, 2 * N);
  report("thread_sched_yield_call", t, (int)(yields + other_yields));
}

// One byte to a child through a pipe and back through another: two writes,
// two reads and two switches a round trip.
static void bench_pipe_pingpong(void) {
  int a[2], b[2];
  char c = 'x';
  if (pipe(a) < 0 || pipe(b) < 0)
    return;
  pid_t child = fork();
  if (child == 0) {
    close(a[1]);                     // (or its read would never see the end)
    close(b[0]);
    while (read(a[0], &c, 1) == 1)
      write(b[1], &c, 1);
    _exit(0);
  }
  close(a[0]);
  close(b[1]);
  write(a[1], &c, 1);                // the first round starts the child
  read(b[0], &c, 1);
  uint64_t t0 = instret();
  for (int i = 0; i < N; i++) {
    write(a[1], &c, 1);
    read(b[0], &c, 1);
  }
  uint64_t t = instret() - t0;
  close(a[1]);
  waitpid(child, 0, 0);
  report("pipe_pingpong_roundtrip", t, N);
}

int main(void) {
  bench_getpid();
  bench_process_switch();
  bench_thread_switch();
  bench_pipe_pingpong();
  printf("BENCH LINUX DONE\n");
  fflush(stdout);
  return 0;
}
