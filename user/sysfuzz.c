// sysfuzz: random system calls with bad and odd arguments, from fixed seeds.
//
//   sysfuzz [-n CHILDREN] [-k CALLS] [-s FIRST_SEED] [-w WATCHDOG_MS]
//   sysfuzz [-t THREADS] ...         several fuzzing threads in each child
//   sysfuzz --child SEED CALLS [THREADS]   one child alone (to repeat a failure)
//
// Each child process makes CALLS system calls drawn from its seed: every
// number the kernel knows (and some it does not), often in the asynchronous
// form, with arguments drawn from pools of values a careless or hostile
// program passes: descriptors that are closed, huge or negative; pointers to
// nothing, to the kernel, to read-only pages, to the completion ring, across
// the end of the heap; lengths of 0, -1 and 2^40; priorities and cids out of
// range; kernel modes changed under calls in flight. It keeps no state the
// kernel could wreck except what it checks:
//   - a read-only page of its own (a call that writes there breaks the rule
//     that copies into user memory honour the page's permissions): exit 99;
//   - the vvar page, which only the kernel writes: exit 98.
// A call that may wait is made in its asynchronous form, mostly, so that a
// child gets through its calls; one that waits for good (a read of its own
// empty pipe, a sleep of 2^40 ms) is ended by the parent's watchdog, a
// `sysfuzz --sleep MS` child: the parent kills the fuzzing child, which must
// then die with everything it held. A quarter of the children end on
// purpose with a call that kills them (a fault, a bad thread entry,
// SYS_uintr_ret outside a handler, kill of itself) or with exit(status).
//
// Children of odd seeds take user interrupts (an async call through the
// runtime turns them on, and a timer every eighth call keeps completions
// coming), so the runtime's handler enters them wherever they are.
//
// The parent knows from each seed how its child should end, and checks:
// every child ended so (or was killed by the watchdog), the kernel still
// answers (a pipe round trip), and, with the machine at rest again, the
// kernel's memory, processes and sockets are back where they started.
#include "ulib.h"
#include "utest.h"
#include "cops.h"

#define SCRATCH_PAGES 16

// One fuzzing thread's state: its random numbers and what the kernel gave it.
struct fz {
  uint64_t rng;
  long fds[32];
  int nfds;
  long tids[8];
  int ntids;
  int pipefds[2];                    // pipe() writes here (or wherever the pool says)
};

static uint64_t next(struct fz *f) {   // xorshift64*
  f->rng ^= f->rng >> 12;
  f->rng ^= f->rng << 25;
  f->rng ^= f->rng >> 27;
  return f->rng * 0x2545F4914F6CDD1DULL;
}

static uint64_t below(struct fz *f, uint64_t n) { return next(f) % n; }

static void seed_rng(struct fz *f, long seed) {
  f->rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(seed + 1);
  for (int i = 0; i < 4; i++)
    (void)next(f);
}

// ---- the child's state that all its threads share, and what it checks ----
static uint64_t scratch;            // SCRATCH_PAGES of heap, never touched by the child itself
static uint64_t brk_floor;          // brk never below this; 0 but in children that take
                                    // user interrupts (odd seeds: child())
static const uint64_t canary[512] __attribute__((aligned(4096))) = { 0x5afe, 0xc0ffee, 42 };
static uint64_t vvar_timebase;

extern char _start[];
void sysfuzz_thread_exit(void);      // below: exits the thread, needs no stack

__asm__(".text\n.globl sysfuzz_thread_exit\n.balign 4\nsysfuzz_thread_exit:\n"
        "  li a0, 0\n  li a7, 17\n  ecall\n  j sysfuzz_thread_exit\n");
_Static_assert(SYS_thread_exit == 17, "the stub's call number");

static void keep_fd(struct fz *f, long fd) {
  if (fd >= 0)
    f->fds[f->nfds++ % 32] = fd;
}

static long pick_fd(struct fz *f) {
  switch (below(f, 10)) {
  case 0: case 1: case 2: case 3:
    return f->nfds ? f->fds[below(f, f->nfds < 32 ? f->nfds : 32)] : 0;
  case 4: return (long)below(f, 8);
  case 5: return -1;
  case 6: return NOFILE - 1 + (long)below(f, 3);
  case 7: return (long)1 << (31 + below(f, 30));
  case 8: return -(long)below(f, 1UL << 31);
  default: return (long)(uint32_t)next(f);
  }
}

// Somewhere in user space the kernel may read from, or may not.
static long pick_src(struct fz *f) {
  switch (below(f, 14)) {
  case 0: case 1: case 2: case 3:
    return (long)(scratch + below(f, SCRATCH_PAGES * 4096));
  case 4: return 0;
  case 5: return 0x80200000L;                  // the kernel's image
  case 6: return (long)canary;
  case 7: return (long)USER_VVAR;
  case 8: return (long)_start;
  case 9: return (long)(scratch + SCRATCH_PAGES * 4096 * 64);   // past the break
  case 10: return (long)USER_RING + (long)below(f, 4096);
  case 11: return -1 - (long)below(f, 4096);
  case 12: return (long)1 << (38 + below(f, 20));
  default: return (long)(USER_STACK_TOP - below(f, 64));
  }
}

// Somewhere the kernel may write to: the scratch pages, or places it must
// refuse (read-only, unmapped, the kernel's), or the completion ring, which is
// the process's to scribble on and the kernel's to survive.
static long pick_dst(struct fz *f) {
  switch (below(f, 13)) {
  case 0: case 1: case 2: case 3: case 4:
    return (long)(scratch + below(f, SCRATCH_PAGES * 4096));
  case 5: return 0;
  case 6: return 0x80200000L;
  case 7: return (long)canary + (long)below(f, 4096);
  case 8: return (long)USER_VVAR + (long)below(f, 4096);
  case 9: return (long)_start + (long)below(f, 256);
  case 10: return (long)(scratch + SCRATCH_PAGES * 4096 * 64);
  case 11: return (long)USER_RING + (long)below(f, 4096);
  default: return -1 - (long)below(f, 4096);
  }
}

static long pick_len(struct fz *f) {
  switch (below(f, 10)) {
  case 0: return 0;
  case 1: return 1;
  case 2: case 3: return (long)below(f, 200);
  case 4: return 4095 + (long)below(f, 3);
  case 5: return 65536;
  case 6: return -1;
  case 7: return (long)1 << 40;
  case 8: return -(long)(1UL << 62);
  default: return (long)below(f, SCRATCH_PAGES * 4096);
  }
}

static long pick_int(struct fz *f) {
  static const long pool[] = {0, 1, -1, 2, 3, 7, 8, 80, 8080, 65535, 65536, 0x7fffffff,
                              -0x80000000L, 0x100000000L, -2};
  return below(f, 4) == 0 ? (long)next(f) : pool[below(f, sizeof pool / sizeof pool[0])];
}

// A pid that is nobody's: kill must never reach the parent, init or a sibling.
static long pick_foreign_pid(struct fz *f) {
  static const long pool[] = {0, -1, -7, 0x7ffffff0, 0x80000000L, (long)1 << 40, -0x80000000L};
  return pool[below(f, sizeof pool / sizeof pool[0])];
}

static long pick_port(struct fz *f) {
  static const long pool[] = {0, 80, 8080, 9000, 9001, 65535, 65536, -1};
  return pool[below(f, sizeof pool / sizeof pool[0])];
}

// The async form's extra arguments: the caller's priority and cid.
static void pick_async(struct fz *f, long *prio, long *cid) {
  static const long prios[] = {0, 1, 2, 4, 7, 8, 63, 64, -1};
  *prio = prios[below(f, sizeof prios / sizeof prios[0])];
  *cid = below(f, 4) == 0 ? 0 : below(f, 2) ? (long)below(f, 16) + 1 : (long)next(f);
}

// One call. Calls that may wait go async 7 times in 8.
static void one_call(struct fz *f) {
  long a[3] = {0, 0, 0}, prio = 0, cid = 0;   // a0-a2; the async form's a4 and a5
  uint64_t nr;
  int may_wait = 0;
  switch (below(f, 30)) {
  case 0: nr = SYS_getpid; break;
  case 1: case 2: nr = SYS_write; may_wait = 1; a[0] = pick_fd(f); a[1] = pick_src(f); a[2] = pick_len(f); break;
  case 3: case 4: nr = SYS_read; may_wait = 1; a[0] = pick_fd(f); a[1] = pick_dst(f); a[2] = pick_len(f); break;
  case 5: nr = SYS_close; a[0] = pick_fd(f); break;
  case 6: case 7:
    nr = SYS_pipe;
    a[0] = below(f, 4) ? (long)f->pipefds : pick_dst(f);
    break;
  case 8:
    nr = SYS_sleep;
    may_wait = 1;
    a[0] = below(f, 8) ? (long)below(f, 3) - 1 : pick_int(f);
    break;
  case 9: nr = SYS_yield; break;
  case 10: {
    static const char *const names[] = {"", "no-such-program", "sysfuzz-none", "a/b"};
    static const long bad[] = {0, 0x80200000L, -1, (long)USER_VVAR, (long)1 << 40};
    nr = SYS_spawn;
    // (never pick_src: just below the stack's top lie this child's own
    // argument strings, and spawn("sysfuzz") would start another fuzzer)
    a[0] = below(f, 2) ? (long)names[below(f, 4)] : bad[below(f, 5)];
    a[1] = below(f, 2) ? 0 : pick_src(f);
    break;
  }
  case 11: nr = SYS_wait; may_wait = 1; a[0] = below(f, 2) ? -1 : pick_foreign_pid(f); a[1] = pick_dst(f); break;
  case 12: nr = SYS_kill; a[0] = pick_foreign_pid(f); break;
  case 13: {
    static const long grow[] = {0, 1, 4096, 65536, 1 << 20, -4096, -(1 << 20)};
    nr = SYS_brk;
    long cur = ecall_raw(SYS_brk, 0, 0, 0, 0, 0);
    uint64_t how = below(f, 16);
    if (how < 8)
      a[0] = cur + grow[below(f, 7)];
    else if (how == 8)               // all the memory there is, then -ENOMEM (rare: slow)
      a[0] = (long)USER_HEAP_MAX - (long)below(f, 2) * 4096 + (long)below(f, 2);
    else if (how < 12)
      a[0] = (long)(scratch + SCRATCH_PAGES * 4096);   // back to where it began
    else
      a[0] = pick_src(f);
    if ((uint64_t)a[0] < brk_floor)  // (children with a handler: see child())
      a[0] = (long)brk_floor;
    break;
  }
  case 14: nr = SYS_uptime; break;
  case 15: nr = SYS_kstat; a[0] = pick_int(f) & ~(long)KSTAT_QUIET; break;
  case 16:
    nr = SYS_thread_create;
    a[0] = (long)sysfuzz_thread_exit;
    a[1] = pick_int(f);
    a[2] = pick_src(f);
    break;
  case 17: nr = SYS_thread_join; a[0] = f->ntids && below(f, 2) ? f->tids[below(f, f->ntids)] : pick_int(f); a[1] = pick_dst(f); break;
  case 18: nr = SYS_socket; break;
  case 19: nr = SYS_bind; a[0] = pick_fd(f); a[1] = pick_port(f); break;
  case 20: nr = SYS_listen; a[0] = pick_fd(f); a[1] = pick_int(f); break;
  case 21: nr = SYS_accept; may_wait = 1; a[0] = pick_fd(f); break;
  case 22: nr = SYS_recv; may_wait = 1; a[0] = pick_fd(f); a[1] = pick_dst(f); a[2] = pick_len(f); break;
  case 23: nr = SYS_send; may_wait = 1; a[0] = pick_fd(f); a[1] = pick_src(f); a[2] = pick_len(f); break;
  case 24: nr = SYS_shutdown; a[0] = pick_fd(f); a[1] = pick_int(f); break;
  case 25: nr = SYS_setkmode; a[0] = below(f, 4) ? (long)below(f, 3) : pick_int(f); break;
  case 26: nr = SYS_uintr_recv; break;
  case 27: nr = SYS_dup; a[0] = pick_fd(f); break;
  case 28: {
    static const long ips[] = {0x7f000001, 0, -1, 0x7f000002, 0x0a00020f};
    nr = SYS_connect;
    may_wait = 1;
    a[0] = pick_fd(f);
    a[1] = ips[below(f, 5)];
    a[2] = pick_port(f);
    break;
  }
  default:                          // numbers nobody gave a meaning
    nr = below(f, 2) ? 31U + below(f, 100) : next(f);
    a[0] = pick_int(f);
    a[1] = pick_src(f);
    break;
  }
  // (uwait, an async form of a call that has none, and waits for good are
  // rarer: they end a child early)
  if (may_wait ? below(f, 8) != 0 : below(f, 40) == 0) {
    nr |= SYS_ASYNC;
    pick_async(f, &prio, &cid);
  } else if (below(f, 5000) == 0) {
    nr = SYS_uwait;
  }
  long r = ecall_raw(nr, a[0], a[1], a[2], prio, cid);
  if (r < 0)
    return;
  if (nr == SYS_pipe && a[0] == (long)f->pipefds) {
    keep_fd(f, f->pipefds[0]);
    keep_fd(f, f->pipefds[1]);
  } else if (nr == SYS_socket || nr == SYS_dup || nr == SYS_accept) {
    keep_fd(f, r);
  } else if (nr == SYS_thread_create) {
    f->tids[f->ntids++ % 8] = r;
    if (f->ntids > 8)
      f->ntids = 8;
  }
}

// How child `seed` ends, decided by its seed before any call (so the parent,
// drawing the same, knows): 0 = after all its calls, with exit(0).
enum ending { END_DONE, END_EXIT, END_FAULT, END_BAD_ENTRY, END_UINTR_RET, END_KILL_SELF, NENDINGS };

static enum ending ending_of(struct fz *f, long seed, int *exit_status) {
  seed_rng(f, seed);
  enum ending e = below(f, 4) ? END_DONE : (enum ending)(1 + below(f, NENDINGS - 1));
  *exit_status = e == END_DONE ? 0 : e == END_EXIT ? 1 + (int)below(f, 50) : -1;
  return e;
}

static void finish(struct fz *f, enum ending e, int status) {
  switch (e) {
  case END_FAULT:
    *(volatile long *)(uintptr_t)pick_dst(f) = 1;   // (pick_dst may give scratch: then
    *(volatile long *)0 = 1;                        //  this one faults)
    break;
  case END_BAD_ENTRY: {
    static const long entries[] = {0, 0x80200000L, 1, (long)canary, (long)USER_VDSO + 0x800};
    if (ecall_raw(SYS_thread_create, entries[below(f, 5)], 0, (long)(scratch + 4096), 0, 0) >= 0)
      for (;;)                     // the new thread's fault takes the process down
        ecall_raw(SYS_yield, 0, 0, 0, 0, 0);
    *(volatile long *)0 = 1;       // (refused: end as a fault does)
    break;
  }
  case END_UINTR_RET:
    ecall_raw(SYS_uintr_ret, 0, 0, 0, 0, 0);
    break;
  case END_KILL_SELF:
    ecall_raw(SYS_kill, getpid(), 0, 0, 0, 0);
    break;
  default:
    break;
  }
  exit(status);
}

#define MAX_THREADS 4
static struct fz fz_main, fz_thread[MAX_THREADS - 1];
static char thread_stack[MAX_THREADS - 1][16384] __attribute__((aligned(16)));
static int calls_each;
static uint64_t canary_sum;

static uint64_t sum_canary(void) {
  uint64_t sum = 0;
  for (int j = 0; j < 512; j++)
    sum += ((const volatile uint64_t *)canary)[j] * (uint64_t)(j + 1);
  return sum;
}

// (raw exits: a thread of its own has none of the runtime's state that exit() uses)
static void fuzz_loop(struct fz *f) {
  for (int i = 0; i < calls_each; i++) {
    // In a child with a handler, a timer every eighth call besides (a 1 ms
    // async sleep for a cid nobody has), so that completions keep arriving,
    // wherever the child is by then.
    if (brk_floor && f == &fz_main && i % 8 == 0)
      ecall_raw(SYS_sleep | SYS_ASYNC, 1, 0, 0, 0, 0x7fff0000 + i);
    one_call(f);
    if (sum_canary() != canary_sum)
      ecall_raw(SYS_exit, 99, 0, 0, 0, 0);
    if (((const volatile struct vvar *)USER_VVAR)->timebase_hz != vvar_timebase)
      ecall_raw(SYS_exit, 98, 0, 0, 0, 0);
  }
}

static void fuzz_thread(void *arg) {
  fuzz_loop(arg);
  for (;;)
    ecall_raw(SYS_thread_exit, 0, 0, 0, 0, 0);
}

// threads > 1: as many fuzzing threads in the process, the others each from a
// seed of their own and a stack in .bss (brk may take the heap away). Their
// calls race with each other's (close against read, brk against copies, exit
// against everything), so such a run is not repeatable call for call.
static int child(long seed, int calls, int threads) {
  int status;
  enum ending e = ending_of(&fz_main, seed, &status);
  calls_each = calls;
  // Odd seeds take user interrupts: one async call through the runtime turns
  // them on (cops.c, uintr_first), and from then on the completions of the
  // fuzz's own async calls and of its timers (fuzz_loop) enter the runtime's
  // handler wherever the child is, which drains the ring (cids that match
  // nothing are dropped there).
  // The handler's operation table is on the heap, below the break from
  // here on: these children's brk calls go no lower (brk_floor), or they
  // would pull it away from under the handler, a fault of their own making.
  if (seed & 1) {
    (void)cops_async(SYS_sleep, 0, 0, 0);
    brk_floor = (uint64_t)brk(0);
  }
  // Nothing to the console (a write to fd 1 would print random bytes) and
  // nothing from it: the descriptors are the fuzzer's own from here on.
  for (int fd = 0; fd < 3; fd++)
    close(fd);
  long base = brk(0);
  scratch = ((uint64_t)base + 4095) & ~4095UL;
  if (brk((void *)(scratch + SCRATCH_PAGES * 4096)) < 0)
    exit(97);
  vvar_timebase = ((const volatile struct vvar *)USER_VVAR)->timebase_hz;
  canary_sum = sum_canary();
  for (int i = 0; i + 1 < threads && i + 1 < MAX_THREADS; i++) {
    seed_rng(&fz_thread[i], seed * MAX_THREADS + i + 1);
    if (thread_create(fuzz_thread, &fz_thread[i], thread_stack[i] + sizeof thread_stack[0]) < 0)
      exit(96);
  }
  fuzz_loop(&fz_main);
  finish(&fz_main, e, status);
  return 0;
}

// ---- the parent ----
static int spawn_retrying(const char *const argv[]) {
  for (int tries = 0;; tries++) {
    int pid = spawn(argv[0], argv);
    if (pid >= 0 || tries == 100)
      return pid;
    sleep(10);                     // (a child may hold most of memory for a moment)
  }
}

static int kernel_answers(void) {
  int p[2];
  char c = 0;
  if (pipe(p) < 0)
    return 0;
  int ok = write(p[1], "k", 1) == 1 && read(p[0], &c, 1) == 1 && c == 'k' && getpid() > 0;
  close(p[0]);
  close(p[1]);
  return ok;
}

int main(int argc, char **argv) {
  utest_prog = "sysfuzz";
  if (argc == 3 && strcmp(argv[1], "--sleep") == 0) {
    sleep(atoi(argv[2]));
    return 0;
  }
  if ((argc == 4 || argc == 5) && strcmp(argv[1], "--child") == 0)
    return child(atoi(argv[2]), atoi(argv[3]), argc == 5 ? atoi(argv[4]) : 1);
  int children = 32, calls = 300, first = 1, watchdog_ms = 2000, threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "-n") == 0)
      children = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-k") == 0)
      calls = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-s") == 0)
      first = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-w") == 0)
      watchdog_ms = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-t") == 0)
      threads = atoi(argv[i + 1]);
  }
  // The first socket starts the network stack, which allocates for good
  // (as in socktest): before the baseline.
  close(socket());
  long objs0, bytes0;
  utest_kmalloc(&objs0, &bytes0);
  long pages0 = kstat(KSTAT_FREE_PAGES | KSTAT_QUIET), procs0 = kstat(KSTAT_NPROCS);
  long socks0 = kstat(KSTAT_SOCKETS), pcbs0 = kstat(KSTAT_TCP_PCBS);
  long kmpages0 = kstat(KSTAT_KMALLOC_PAGES), heap0 = kstat(KSTAT_HEAP_PAGES);
  long cos0 = kstat(KSTAT_LIVE_COROUTINES);
  int as_expected = 0, watchdogged = 0, unexpected = 0, ended[NENDINGS] = {0};
  char seed_s[24], calls_s[24], ms_s[24], threads_s[24];
  snprintf(calls_s, sizeof calls_s, "%d", calls);
  snprintf(ms_s, sizeof ms_s, "%d", watchdog_ms);
  snprintf(threads_s, sizeof threads_s, "%d", threads);
  for (int s = first; s < first + children; s++) {
    int want;
    struct fz draw;
    enum ending e = ending_of(&draw, s, &want);
    snprintf(seed_s, sizeof seed_s, "%d", s);
    const char *const cargv[] = {"sysfuzz", "--child", seed_s, calls_s, threads_s, 0};
    const char *const wargv[] = {"sysfuzz", "--sleep", ms_s, 0};
    int pid = spawn_retrying(cargv), wd = spawn_retrying(wargv);
    if (pid < 0 || wd < 0) {
      printf("sysfuzz: seed %d: spawn failed (%d, %d)\n", s, pid, wd);
      unexpected++;
      if (pid >= 0)
        kill(pid);
      continue;
    }
    int status = 0, killed = 0, got = 0, left = 2;
    while (left > 0) {
      int st;
      int who = wait(-1, &st);
      if (who < 0)
        break;
      left--;
      if (who == wd && got == 0) {
        kill(pid);                  // still at it (or waiting for good): end it
        killed = 1;
      } else if (who == pid) {
        status = st;
        got = 1;
        if (left)
          kill(wd);
      }
    }
    if (got && status == want) {
      as_expected++;
      ended[e]++;
    } else if (got && killed && status == -1) {
      watchdogged++;
    } else {
      unexpected++;
      printf("sysfuzz: seed %d ended with status %d (want %d%s); repeat: sysfuzz --child %d %d %d\n",
             s, status, want, killed ? " or -1, killed by the watchdog" : "", s, calls, threads);
    }
  }
  printf("sysfuzz: %d children x %d threads x %d calls from seed %d: %d ended as planned (%d done, %d exit, "
         "%d fault, %d bad thread entry, %d uintr_ret, %d kill self), %d ended by the watchdog, "
         "%d otherwise\n", children, threads, calls, first, as_expected, ended[END_DONE], ended[END_EXIT],
         ended[END_FAULT], ended[END_BAD_ENTRY], ended[END_UINTR_RET], ended[END_KILL_SELF],
         watchdogged, unexpected);
  check("every-child-ended-as-planned-or-by-the-watchdog", unexpected, 0);
  check("most-children-got-through", as_expected * 2 >= children, 1);
  check("kernel-still-answers", kernel_answers(), 1);
  check("processes-back", kstat(KSTAT_NPROCS | KSTAT_QUIET), procs0);
  // Pages are compared outside kmalloc (free pages plus kmalloc's): the
  // kmalloc side is checked by its objects and bytes, without the caches that
  // grow once and stay (a hart's timer heap grows when more timers are armed
  // at once than ever before: many long sleeps, say, a page at a time).
  long outside = 0, socks = 0, pcbs = 0, outside0 = pages0 + kmpages0;
  for (int i = 0; i < 3000; i++) {  // (closed connections linger in TIME_WAIT: 4 s)
    outside = kstat(KSTAT_FREE_PAGES | KSTAT_QUIET) + kstat(KSTAT_KMALLOC_PAGES);
    socks = kstat(KSTAT_SOCKETS);
    pcbs = kstat(KSTAT_TCP_PCBS);
    if (outside == outside0 && socks == socks0 && pcbs == pcbs0)
      break;
    sleep(10);
  }
  check("sockets-back", socks, socks0);
  check("tcp-pcbs-back", pcbs, pcbs0);
  utest_check_kmalloc_baseline(objs0, bytes0);
  check("pages-outside-kmalloc-back", outside, outside0);
  if (outside != outside0)
    printf("sysfuzz: free pages %ld (was %ld), kmalloc's %ld (was %ld), heaps %ld (was %ld); "
           "kernel coroutines %ld (was %ld)\n", kstat(KSTAT_FREE_PAGES), pages0,
           kstat(KSTAT_KMALLOC_PAGES), kmpages0, kstat(KSTAT_HEAP_PAGES), heap0,
           kstat(KSTAT_LIVE_COROUTINES), cos0);
  return utest_summary();
}
