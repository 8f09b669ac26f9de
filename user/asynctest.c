// asynctest: async system calls, the completion ring and user interrupts.
//   - fast path: an async read with data already there returns at once: no
//     kernel coroutine, no interrupt;
//   - slow path: an async read on an empty pipe returns -EINPROGRESS inside the
//     runtime, and the result arrives through the ring and a user interrupt
//     while other coroutines run;
//   - async reads parked on a pipe: served in order by a write, ended by the
//     last write end's close (here or in another process), more of them than
//     a process's parking slots, a reader that closes its descriptor meanwhile;
//   - async sleeps complete in deadline order;
//   - ring overflow: more completions than the ring holds, arriving while the
//     process does not drain, are all delivered (none lost);
//   - the interrupted coroutine continues untouched (a computation that keeps
//     running across interrupts gets the right answer);
//   - user interrupts that land in the runtime's switch loop (its inline
//     rotation) lose nothing, break nothing, and a better coroutine they
//     wake runs next;
//   - a completion wakes only the call it matches (none for a stale cid);
//   - interrupts that land inside an async call's own submit lose nothing;
//   - a process that exits with async calls in flight leaks nothing.
// One line per check, then "asynctest: N passed, M failed"; exits with M.
#include "cops.h"
#include "ulib.h"
#include "utest.h"


static cid_t main_cid;

// ---- fast path ----
static void test_fast_path(void) {
  int p[2];
  char buf[8];
  pipe(p);
  write(p[1], "ready", 5);
  long posted = kstat(KSTAT_UINTR_POSTED);
  uint64_t taken = cops_uintr_count();
  check("fast-path-result", cops_async(SYS_read, p[0], (long)buf, sizeof buf), 5);
  check("fast-path-data", memcmp(buf, "ready", 5), 0);
  check("fast-path-no-interrupt", kstat(KSTAT_UINTR_POSTED) - posted, 0);
  check("fast-path-no-handler", (long)(cops_uintr_count() - taken), 0);
  close(p[0]);
  close(p[1]);
}

// ---- the submit's argument checks ----
// An async read or write of a pipe is submitted on the trap's short path
// (kernel/syscall.c, syscall_fast_async), other calls and anything it does not
// take on the full one: the same answers either way. Raw ecalls, so that the
// runtime's own checks do not come first; cid is the calling coroutine's,
// except where a bad one is the point. None of them waits.
static long raw_async(long nr, long a0, long a1, long a2, long prio, long cid) {
  return ecall_raw((uint64_t)nr | SYS_ASYNC, a0, a1, a2, prio, cid);
}

static void test_submit_args(void) {
  int p[2], q[2];
  char buf[8];
  long me = (long)cops_current();
  pipe(p);
  pipe(q);
  write(p[1], "abc", 3);
  check("args-read-now", raw_async(SYS_read, p[0], (long)buf, sizeof buf, 3, me), 3);
  check("args-read-data", memcmp(buf, "abc", 3), 0);
  write(p[1], "abc", 3);
  check("args-bad-buffer", raw_async(SYS_read, p[0], 16, sizeof buf, 3, me), -EFAULT);
  check("args-kernel-buffer", raw_async(SYS_read, p[0], (long)0x80200000L, 3, 3, me), -EFAULT);
  check("args-data-kept", read(p[0], buf, sizeof buf), 3);
  // (p is empty now: these take the submit's way straight to the park, which
  // checks the arguments itself)
  check("args-negative-length", raw_async(SYS_read, p[0], (long)buf, -1, 3, me), -EINVAL);
  check("args-zero-length", raw_async(SYS_read, p[0], (long)buf, 0, 3, me), 0);
  check("args-bad-buffer-empty-pipe", raw_async(SYS_read, p[0], 16, 8192, 3, me), -EFAULT);
  check("args-bad-fd", raw_async(SYS_read, 999, (long)buf, 1, 3, me), -EBADF);
  check("args-negative-fd", raw_async(SYS_read, -1, (long)buf, 1, 3, me), -EBADF);
  check("args-no-cid", raw_async(SYS_read, p[0], (long)buf, 1, 3, 0), -EINVAL);
  check("args-write", raw_async(SYS_write, p[1], (long)"xy", 2, 3, me), 2);
  check("args-write-read-back", read(p[0], buf, 2), 2);
  close(q[0]);
  check("args-write-no-reader", raw_async(SYS_write, q[1], (long)"x", 1, 3, me), -EPIPE);
  check("args-wrong-end", raw_async(SYS_write, p[0], (long)"x", 1, 3, me), -EBADF);
  // Priorities out of range are clamped, not refused (and one better than
  // the process's own goes the full way).
  write(p[1], "z", 1);
  check("args-prio-huge", raw_async(SYS_read, p[0], (long)buf, 1, 1L << 40, me), 1);
  write(p[1], "z", 1);
  check("args-prio-zero", raw_async(SYS_read, p[0], (long)buf, 1, 0, me), 1);
  check("args-not-async-call", raw_async(SYS_getpid, 0, 0, 0, 3, me), -ENOSYS);
  close(p[0]);
  close(p[1]);
  close(q[1]);
}

// ---- slow path: a reader coroutine waits, main keeps running ----
static int rp[2];
static char rbuf[16];
static long rresult;
static volatile int rdone, main_steps;

static void reader(void *arg) {
  (void)arg;
  rresult = cops_async(SYS_read, rp[0], (long)rbuf, sizeof rbuf);
  rdone = 1;
  cops_wake(main_cid);
}

static void test_slow_path(void) {
  pipe(rp);
  long posted = kstat(KSTAT_UINTR_POSTED);
  uint64_t taken = cops_uintr_count();
  cops_spawn_stackful(reader, 0, 3);
  cops_yield();                          // the reader submits and blocks
  check("slow-path-pending", rdone, 0);
  main_steps = 0;
  for (int i = 0; i < 3; i++, main_steps++)
    cops_yield();                        // main still runs: only the reader waits
  write(rp[1], "later", 5);              // a kernel coroutine completes the read
  while (!rdone)
    cops_block();                        // woken by the reader, after the interrupt
  check("slow-path-result", rresult, 5);
  check("slow-path-data", memcmp(rbuf, "later", 5), 0);
  check("slow-path-main-ran-meanwhile", main_steps, 3);
  check("slow-path-interrupt-posted", kstat(KSTAT_UINTR_POSTED) - posted >= 1, 1);
  check("slow-path-handler-ran", cops_uintr_count() - taken >= 1, 1);
  close(rp[0]);
  close(rp[1]);
}

// ---- async reads parked on a pipe, completed by whoever writes ----
// In KMODE_COROUTINE an async read of an empty pipe parks on the pipe with no
// kernel coroutine; the writer copies the bytes into the reader's buffer and
// posts the completion itself, and the close of the last write end posts the
// end of file (kernel/syswork.c, "parked"). The same checks run in every
// kernel mode: what a program sees must not depend on the path.
enum { PARK_MANY = 100 };                // more than a process's parking slots (64)
static int pk[2];
static volatile int pk_done;
static long pk_result[PARK_MANY];
static char pk_byte[PARK_MANY];

static int park_kmode = KMODE_COROUTINE;

static void park_reader(void *arg) {
  long i = (long)arg;
  char buf[4] = { 0 };
  pk_result[i] = cops_async(SYS_read, pk[0], (long)buf, 1);
  pk_byte[i] = buf[0];
  pk_done++;
  cops_wake(main_cid);
}

// Spawn readers [from, to) (each submits and blocks: the pipe is empty).
static void park_readers(long from, long to) {
  for (long i = from; i < to; i++)
    cops_spawn_stackful(park_reader, (void *)i, 3);
  cops_yield();
}

// Until n readers are done; 30 s is a safety net only. (Not cops_block: a
// completion that never comes would leave nothing to wake main, and the
// check below should fail, not hang.)
static void park_wait(int n) {
  long until = uptime() + 30000;
  while (pk_done < n && uptime() < until) {
    cops_yield();
    if (pk_done < n)
      sleep(1);
  }
}

static void test_parked(void) {
  // Three reads of one byte parked in turn; one write of three bytes serves
  // them, each a byte of its own; parked ones in the order they parked (the
  // other modes' kernel coroutines race for the bytes).
  pipe(pk);
  pk_done = 0;
  long parked0 = kstat(KSTAT_ASYNC_PARKED);
  park_readers(0, 3);
  check("park-all-pending", pk_done, 0);
  // (KMODE_COROUTINE parks them; the other modes give each a coroutine)
  check("park-path-taken", kstat(KSTAT_ASYNC_PARKED) - parked0, park_kmode == KMODE_COROUTINE ? 3 : 0);
  write(pk[1], "abc", 3);
  park_wait(3);
  check("park-fifo-results", pk_result[0] == 1 && pk_result[1] == 1 && pk_result[2] == 1, 1);
  check("park-fifo-bytes", pk_byte[0] + pk_byte[1] + pk_byte[2] == 'a' + 'b' + 'c' &&
                               pk_byte[0] != pk_byte[1] && pk_byte[1] != pk_byte[2] &&
                               pk_byte[0] != pk_byte[2], 1);
  if (park_kmode == KMODE_COROUTINE)
    check("park-fifo-order", pk_byte[0] == 'a' && pk_byte[1] == 'b' && pk_byte[2] == 'c', 1);
  // The end of file: closing the only write end completes a parked read with 0.
  pk_done = 0;
  park_readers(0, 1);
  close(pk[1]);
  park_wait(1);
  check("park-eof", pk_done == 1 ? pk_result[0] : -1, 0);
  close(pk[0]);

  // The reader closes its own descriptor while its read is parked: the read
  // holds the file, completes when written, and the pipe is freed after.
  long objs0 = kstat(KSTAT_KMALLOC_OBJECTS | KSTAT_QUIET);
  pipe(pk);
  pk_done = 0;
  park_readers(0, 1);
  close(pk[0]);
  write(pk[1], "z", 1);
  park_wait(1);
  check("park-reader-closed-result", pk_result[0], 1);
  check("park-reader-closed-byte", pk_byte[0], 'z');
  close(pk[1]);
  long objs = objs0;
  for (int i = 0; i < 300 && (objs = kstat(KSTAT_KMALLOC_OBJECTS | KSTAT_QUIET)) != objs0; i++)
    sleep(10);                           // (3 s at most: a safety net)
  check("park-reader-closed-freed", objs, objs0);

  // More readers than parking slots: the rest wait as kernel coroutines; one
  // write serves them all, each its own byte, every byte once.
  pipe(pk);
  pk_done = 0;
  park_readers(0, PARK_MANY);
  char bytes[PARK_MANY];
  for (int i = 0; i < PARK_MANY; i++)
    bytes[i] = (char)(i + 1);
  write(pk[1], bytes, PARK_MANY);
  park_wait(PARK_MANY);
  int ok = pk_done == PARK_MANY, seen[PARK_MANY + 1] = { 0 };
  for (int i = 0; i < PARK_MANY && ok; i++) {
    ok = pk_result[i] == 1 && pk_byte[i] >= 1 && pk_byte[i] <= PARK_MANY && !seen[(int)pk_byte[i]];
    if (ok)
      seen[(int)pk_byte[i]] = 1;
  }
  check("park-many-each-its-own", ok, 1);
  close(pk[0]);
  close(pk[1]);

  // Another process writes: the bytes go into this process's memory through
  // its own page table, and that process's exit (its write end's last close)
  // is this read's end of file.
  pipe(pk);
  pk_done = 0;
  park_readers(0, 2);
  int out = dup(1);
  close(1);
  dup(pk[1]);                            // -> 1: the child's stdout
  close(pk[1]);
  char *argv[] = { "asynctest", "--write-byte", 0 };
  int pid = spawn("asynctest", (const char *const *)argv), status = -1;
  close(1);
  dup(out);                              // our console back
  close(out);
  park_wait(2);
  wait(pid, &status);
  check("park-other-process-child", status, 0);
  // One reader has the byte and the other the end of file, in either order:
  // outside KMODE_COROUTINE the reads are kernel coroutines that race, and on
  // two harts the one that took the byte can post its completion after the
  // other saw the child's exit and posted its end of file (seen once, on a
  // host running two test suites at once).
  int with_byte = pk_done != 2                                   ? -1
                  : pk_result[0] == 1 && pk_byte[0] == 'W'        ? 0
                  : pk_result[1] == 1 && pk_byte[1] == 'W'        ? 1
                                                                  : -1;
  check("park-other-process-byte", with_byte >= 0, 1);
  check("park-other-process-eof", with_byte >= 0 ? pk_result[1 - with_byte] : -1, 0);
  close(pk[0]);
}

// ---- async sleeps complete in deadline order ----
// Three sleeps of 60, 20 and 40 ms, submitted one after another, complete in
// the order of their deadlines (submission time + length). The deadlines are
// what is compared, not the lengths: on a busy host the guest can be set
// aside for many milliseconds between two submissions (the guest clock goes
// on meanwhile), which once made the 60 ms sleep's deadline come first.
static int order[3], norder;
static long deadline[3];
static const int sleep_ms[3] = { 60, 20, 40 };
static void sleeper(void *arg) {
  int i = (int)(long)arg;
  deadline[i] = uptime() + sleep_ms[i];
  long r = cops_async(SYS_sleep, sleep_ms[i], 0, 0);
  if (r == 0)
    order[norder++] = i;
  if (norder == 3)
    cops_wake(main_cid);
}

static void test_sleep_order(void) {
  norder = 0;
  long t0 = uptime();
  for (int i = 0; i < 3; i++)
    cops_spawn_stackful(sleeper, (void *)(long)i, 3);
  while (norder < 3)
    cops_block();
  // In deadline order; deadlines within a millisecond of each other (uptime's
  // resolution) may come either way.
  int in_order = 1;
  for (int k = 1; k < 3; k++)
    in_order &= deadline[order[k - 1]] <= deadline[order[k]] + 1;
  if (!in_order)
    printf("asynctest: completion order %d %d %d, deadlines %ld %ld %ld\n", order[0], order[1],
           order[2], deadline[0] - t0, deadline[1] - t0, deadline[2] - t0);
  check("sleep-order", in_order, 1);
  check("sleep-took-long-enough", uptime() - t0 >= 60, 1);
}

// ---- overflow: 300 completions while the process holds them off ----
// 300 coroutines each submit an async one-byte read on one empty pipe, so none
// can complete until main -- already holding completions off -- writes 300
// bytes. No timing is involved.
#define FLOOD 300
static volatile int flood_done;
static int fp[2];
static void flood_reader(void *arg) {
  (void)arg;
  char b;
  if (cops_async(SYS_read, fp[0], (long)&b, 1) == 1)
    flood_done++;
  if (flood_done == FLOOD)
    cops_wake(main_cid);
}

static void test_overflow(void) {
  static char bytes[FLOOD];
  pipe(fp);
  flood_done = 0;
  long overflows = kstat(KSTAT_RING_OVERFLOWS);
  for (int i = 0; i < FLOOD; i++)
    cops_spawn_stackful(flood_reader, 0, 3);
  cops_yield();                          // all 300 submit their read and block
  check("overflow-all-pending", flood_done, 0);
  cops_hold_completions(1);              // now the runtime will not drain
  write(fp[1], bytes, FLOOD);            // completes all 300 reads
  // Wait for the event (a full ring and the rest held in the kernel), with
  // 10 s as a safety net only.
  long until = uptime() + 10000;
  while (uptime() < until && kstat(KSTAT_RING_OVERFLOWS) - overflows < FLOOD - RING_ENTRIES)
    ;
  check("overflow-ring-full", ((struct completion_ring *)USER_RING)->tail -
                                  ((struct completion_ring *)USER_RING)->head, RING_ENTRIES);
  check("overflow-kernel-held-the-rest", kstat(KSTAT_RING_OVERFLOWS) - overflows,
        FLOOD - RING_ENTRIES);
  cops_hold_completions(0);              // drain everything
  while (flood_done < FLOOD)
    cops_block();
  check("overflow-none-lost", flood_done, FLOOD);
  close(fp[0]);
  close(fp[1]);
}

// ---- the interrupted code continues untouched ----
// The ticker sleeps 20 times, 2 ms each, with async calls; each completion is a
// user interrupt that lands on main while main computes. Main computes until the
// ticker is done (an event, not an amount of work, so a fast host cannot finish
// before the interrupts come), then repeats the same work with no interrupts:
// the two results must agree.
enum { TICKS = 20 };
static volatile int ticker_done;
static void ticker(void *arg) {
  (void)arg;
  for (int i = 0; i < TICKS; i++)
    cops_async(SYS_sleep, 2, 0, 0);
  ticker_done = 1;
}

// A register-heavy computation over `chunks` chunks of 4096 rounds. It yields
// after each chunk (so the ticker can resubmit) but its values live in
// registers that user interrupts land on. With pid > 0 it also calls getpid()
// every round, a pure call the trap answers by itself (kernel/purecalls.h),
// which saves only the registers C code may change: the values live across
// the call (in s1-s11) must come through it too, and each answer must be pid
// (wrong answers counted in *bad).
struct mix { uint64_t a, b, c, d, e, f, g, h; };
static void compute_chunk(struct mix *m, long chunk, long pid, long *bad) {
  uint64_t a = m->a, b = m->b, c = m->c, d = m->d, e = m->e, f = m->f, g = m->g, h = m->h;
  for (long i = chunk * 4096; i < (chunk + 1) * 4096; i++) {
    a = a * 6364136223846793005ULL + b; b ^= a >> 7; c += b * 3; d ^= c << 5;
    if (pid > 0 && getpid() != pid)
      (*bad)++;
    e += d ^ a; f = f * 31 + e; g ^= f >> 11; h += g + (uint64_t)i;
  }
  *m = (struct mix){ a, b, c, d, e, f, g, h };
}

static uint64_t mix_result(const struct mix *m) {
  return m->a ^ m->b ^ m->c ^ m->d ^ m->e ^ m->f ^ m->g ^ m->h;
}

// "<prefix>-<what>", for one check at a time (check prints it at once).
static const char *named(const char *prefix, const char *what) {
  static char buf[64];
  snprintf(buf, sizeof buf, "%s-%s", prefix, what);
  return buf;
}

// name: the checks' prefix; pure_calls: call getpid() every round (above).
static void test_untouched(const char *name, int pure_calls) {
  uint64_t taken = cops_uintr_count();
  long posted0 = kstat(KSTAT_UINTR_POSTED);
  long pid = pure_calls ? getpid() : 0, bad = 0;
  ticker_done = 0;
  cops_spawn_stackful(ticker, 0, 3);
  cops_yield();
  struct mix m = { 1, 2, 3, 4, 5, 6, 7, 8 };
  long chunks = 0;
  long until = uptime() + 60000;            // a safety net only: 20 x 2 ms of sleeps
  while (!ticker_done && uptime() < until) {
    compute_chunk(&m, chunks++, pid, &bad);
    cops_yield();
  }
  uint64_t arrived = cops_uintr_count() - taken;
  uint64_t with_interrupts = mix_result(&m);
  struct mix q = { 1, 2, 3, 4, 5, 6, 7, 8 };
  for (long i = 0; i < chunks; i++)
    compute_chunk(&q, i, 0, 0);
  check(named(name, "ticker-finished"), ticker_done, 1);
  // The ticker has one call in flight at a time, so each interrupt posted for
  // it is one entry of the handler while main computes. (Counted by posts, not
  // by TICKS: a 2 ms sleep completes at once, with no interrupt, if the host
  // sets the guest aside for 2 ms during its submission, as a busy host did.)
  long posted = kstat(KSTAT_UINTR_POSTED) - posted0;
  if (arrived < (uint64_t)posted || posted < 1)
    printf("asynctest: %lu handler entries for %ld posts during %ld chunks\n",
           (unsigned long)arrived, posted, chunks);
  check(named(name, "interrupts-arrived"), arrived >= (uint64_t)posted && posted >= 1, 1);
  check(named(name, "same-result"), with_interrupts == mix_result(&q), 1);
  if (pure_calls)
    check(named(name, "getpid-right"), bad, 0);
}

// ---- exit with async calls in flight ----
static void test_exit_inflight(void) {
  // (KSTAT_QUIET: samples of a machine at rest, as in threadtest)
  long free0 = kstat(KSTAT_FREE_PAGES | KSTAT_QUIET), objs0 = kstat(KSTAT_KMALLOC_OBJECTS | KSTAT_QUIET);
  long cos0 = kstat(KSTAT_LIVE_COROUTINES | KSTAT_QUIET);
  char *argv[] = { "asynctest", "--leave-inflight", 0 };
  int pid = spawn("asynctest", (const char *const *)argv), status = -99;
  wait(pid, &status);
  check("inflight-child-status", status, 0);
  int same = 0;
  for (int i = 0; i < 3000 && !same; i++) {   // 30 s at most: a safety net
    same = kstat(KSTAT_FREE_PAGES | KSTAT_QUIET) == free0 &&
           kstat(KSTAT_KMALLOC_OBJECTS | KSTAT_QUIET) == objs0 &&
           kstat(KSTAT_LIVE_COROUTINES | KSTAT_QUIET) == cos0;
    if (!same)
      sleep(10);
  }
  if (!same)
    printf("asynctest: after the child: free pages %ld (was %ld), kmalloc objects %ld (was %ld), "
           "live coroutines %ld (was %ld)\n", kstat(KSTAT_FREE_PAGES), free0,
           kstat(KSTAT_KMALLOC_OBJECTS), objs0, kstat(KSTAT_LIVE_COROUTINES), cos0);
  check("inflight-nothing-leaked", same, 1);
}

static void leave_reader(void *arg) {
  int *p = arg;
  char b[4];
  cops_async(SYS_read, p[0], (long)b, sizeof b);   // never completes
}

// ---- completions find their operation by cid slot, across slot reuse ----
// The runtime keeps in-flight operations in a table indexed by the slot of the
// waiting coroutine's cid (O(1) per completion). 50 rounds of 8 coroutines,
// each reading the byte meant for it from its own pipe, completed in reverse
// order: the coroutines of one round reuse the slots of the last (a new
// generation each time), and every result must reach its own coroutine.
enum { REUSE_ROUNDS = 50, REUSE_WIDTH = 8 };
static int reuse_pipes[REUSE_WIDTH][2];
static volatile int reuse_done, reuse_wrong;

static void reuse_reader(void *arg) {
  long i = (long)arg;
  char c = 0;
  long r = cops_async(SYS_read, reuse_pipes[i % REUSE_WIDTH][0], (long)&c, 1);
  if (r != 1 || c != (char)('A' + i % 26))
    reuse_wrong++;
  reuse_done++;
  cops_wake(main_cid);
}

static void test_slot_reuse(void) {
  for (int i = 0; i < REUSE_WIDTH; i++)
    pipe(reuse_pipes[i]);
  reuse_done = reuse_wrong = 0;
  for (long round = 0; round < REUSE_ROUNDS; round++) {
    for (long j = 0; j < REUSE_WIDTH; j++)
      cops_spawn_stackful(reuse_reader, (void *)(round * REUSE_WIDTH + j), 3);
    cops_yield();                        // all submit and block
    for (long j = REUSE_WIDTH - 1; j >= 0; j--) {
      char c = (char)('A' + (round * REUSE_WIDTH + j) % 26);
      write(reuse_pipes[j][1], &c, 1);
    }
    while (reuse_done < (round + 1) * REUSE_WIDTH)
      cops_block();
  }
  check("slot-reuse-all-completed", reuse_done, REUSE_ROUNDS * REUSE_WIDTH);
  check("slot-reuse-each-got-its-own", reuse_wrong, 0);
  for (int i = 0; i < REUSE_WIDTH; i++) {
    close(reuse_pipes[i][0]);
    close(reuse_pipes[i][1]);
  }
}

// ---- completions that match no call ----
// A completion is handed only to the call waiting in its cid's entry of the
// runtime's operation table, and wakes only that call's coroutine. Raw async
// reads (calls the runtime does not know of) make completions for:
//   - the cid of a coroutine that waits in cops_block with no call in flight:
//     it must not be woken (the runtime once woke every completion's cid);
//   - the cid of a coroutine whose call is in flight, one generation on (as
//     if its slot had been reused), a slot whose chunk of the table was never
//     made, and a slot past the table's end: that call must go on waiting,
//     and then get its own result.
static int up[2], xp[2];
static volatile int napper_wakes, napper_go, xdone;
static long xresult;
static char xbuf[8], junk[4];

static void napper(void *arg) {
  (void)arg;
  while (!napper_go) {
    cops_block();
    napper_wakes++;
  }
}

static void xreader(void *arg) {
  (void)arg;
  xresult = cops_async(SYS_read, xp[0], (long)xbuf, sizeof xbuf);
  xdone = 1;
  cops_wake(main_cid);
}

static void test_unmatched(void) {
  pipe(up);
  pipe(xp);
  napper_wakes = napper_go = xdone = 0;
  cid_t nap = (cid_t)cops_spawn_stackful(napper, 0, 3);
  cid_t x = (cid_t)cops_spawn_stackful(xreader, 0, 3);
  cops_yield();                          // the napper blocks, the reader's call waits
  cid_t gen = x & ~0xffffffffULL;
  cid_t fake[4] = { nap, x + (1ULL << 32), gen | 60000, gen | 0xffffffffULL };
  int submitted = 0;
  for (int i = 0; i < 4; i++)
    submitted += raw_async(SYS_read, up[0], (long)&junk[i], 1, 3, (long)fake[i]) == -EINPROGRESS;
  check("unmatched-submitted", submitted, 4);
  write(up[1], "abcd", 4);               // completes all four
  // An async sleep of main's own: by its end the four have long been drained.
  check("unmatched-sleep", cops_async(SYS_sleep, 20, 0, 0), 0);
  struct completion_ring *ring = (struct completion_ring *)USER_RING;
  check("unmatched-all-drained", ring->tail - ring->head, 0);
  check("unmatched-all-read", junk[0] + junk[1] + junk[2] + junk[3], 'a' + 'b' + 'c' + 'd');
  check("unmatched-nobody-woken", napper_wakes, 0);
  check("unmatched-call-still-waits", xdone, 0);
  write(xp[1], "own", 3);
  while (!xdone)
    cops_block();
  check("unmatched-call-own-result", xresult, 3);
  check("unmatched-call-own-data", memcmp(xbuf, "own", 3), 0);
  napper_go = 1;
  cops_wake(nap);
  cops_yield();                          // (the napper ends)
  close(up[0]);
  close(up[1]);
  close(xp[0]);
  close(xp[1]);
}

// ---- user interrupts that land inside an async call ----
// An async call's submit holds no lock and no critical section, so the
// handler may drain in the middle of it: between the entry's store and the
// ecall, right after the ecall, before the block, after the wake. A ticker's
// 1 ms sleeps interrupt a pinger that keeps making async reads, one that
// completes at once (the byte is there) and one that waits (a ponger writes
// the byte once the pinger has blocked); every result must be the pinger's
// own, and every sleep must come back. (scripts/test.sh runs this under
// -icount too, with --loop, where an interrupt can land between any two
// instructions.)
enum { PING_ROUNDS = 2000 };
static int pa[2];
static volatile int ping_done, ping_wrong, tick_wrong, pong_stop;
static volatile char pong_byte;
static cid_t ponger_cid;

static void ponger(void *arg) {
  (void)arg;
  for (;;) {
    cops_block();
    if (pong_stop)
      return;
    char b = pong_byte;
    write(pa[1], &b, 1);
  }
}

static void pinger(void *arg) {
  (void)arg;
  for (int i = 0; i < PING_ROUNDS; i++) {
    char b = (char)('a' + i % 26), c = 0;
    write(pa[1], &b, 1);
    if (cops_async(SYS_read, pa[0], (long)&c, 1) != 1 || c != b)
      ping_wrong++;
    pong_byte = (char)('A' + i % 26);
    c = 0;
    cops_wake(ponger_cid);
    if (cops_async(SYS_read, pa[0], (long)&c, 1) != 1 || c != pong_byte)
      ping_wrong++;
  }
  ping_done = 1;
  cops_wake(main_cid);
}

static void ticker_1ms(void *arg) {
  (void)arg;
  while (!ping_done)
    tick_wrong += cops_async(SYS_sleep, 1, 0, 0) != 0;
  ping_done = 2;
  cops_wake(main_cid);
}

static void test_interrupted_calls(void) {
  char why[128] = "";
  pipe(pa);
  ping_done = ping_wrong = tick_wrong = pong_stop = 0;
  uint64_t entries0 = cops_uintr_count();
  ponger_cid = (cid_t)cops_spawn_stackful(ponger, 0, 3);
  cops_spawn_stackful(ticker_1ms, 0, 3);
  cops_spawn_stackful(pinger, 0, 3);
  while (ping_done != 2)
    cops_block();                        // the ticker wakes main after the pinger is done
  pong_stop = 1;
  cops_wake(ponger_cid);
  cops_yield();                          // (the ponger ends)
  check("interrupted-calls-own-results", ping_wrong, 0);
  check("interrupted-calls-sleeps-back", tick_wrong, 0);
  check("interrupted-calls-interrupts-taken", cops_uintr_count() - entries0 >= PING_ROUNDS, 1);
  int checked = cops_check(why, sizeof why);
  check("interrupted-calls-invariants", checked, 0);
  if (checked)
    printf("asynctest: interrupted-calls: %s\n", why);
  close(pa[0]);
  close(pa[1]);
}

// ---- user interrupts landing in the runtime's switch loop ----
// Four coroutines of one priority (two stackless, two stackful) yield to each
// other as fast as they can, so nearly every instruction the process runs is
// the runtime's loop, most of it its step (the inline rotation, during which
// the handler must leave the executor alone: run_loop). Meanwhile a waiter
// makes WAITS async sleeps of 1 ms; each completion is a user interrupt that
// lands wherever the loop happens to be, and wakes the waiter.
//   - same priority as the yielders: the wake queues the waiter behind the
//     very queue the loop rotates. A handler that touched it in the middle
//     of a rotation would lose the waiter (or a yielder) or corrupt the
//     queue: every sleep must come back and the invariants must hold.
//   - better priority: the waiter must run at the next dispatch after the
//     drain that wakes it. A yielder that sees a handler entry the waiter has
//     not yet answered is late; one late turn per entry is allowed (the
//     entry struck after the step had chosen that yielder).
// A yielder that sees a handler entry it has not seen yet also checks the
// executor's invariants at once, before a later rotation can rewrite links
// a handler that struck in the middle of one would have left wrong (a prev,
// or a coroutine both the tail and the resident).
// The yielders stop when the waiter is done, or after 20 s of uptime (a
// safety net only, so that a lost waiter fails here instead of hanging).
enum { WAITS = 200, LOOP_YIELDERS = 4 };
static volatile int loop_waiter_done, loop_stop, loop_finished;
static volatile uint64_t loop_answered;   // handler entries the waiter had seen when it last ran
static uint64_t loop_checked_at;          // handler entries at the yielders' last check
static long loop_late, loop_turns, loop_until, loop_bad_checks;
static char loop_why[128];

static void loop_finish(void) {
  if (++loop_finished == LOOP_YIELDERS + 1)
    cops_wake(main_cid);
}

static int loop_should_stop(void) {
  if (++loop_turns % 1024 == 0 && uptime() > loop_until)
    loop_stop = 1;
  uint64_t entries = cops_uintr_count();
  if (entries != loop_answered)
    loop_late++;
  if (entries != loop_checked_at) {
    loop_checked_at = entries;
    if (cops_check(loop_why, sizeof loop_why) != 0)
      loop_bad_checks++;
  }
  return loop_stop || loop_waiter_done;
}

static int loop_poll(void *arg) {
  (void)arg;
  if (!loop_should_stop())
    return CO_YIELD;
  loop_finish();
  return CO_DONE;
}

static void loop_yielder(void *arg) {
  (void)arg;
  while (!loop_should_stop())
    cops_yield();
  loop_finish();
}

static void loop_waiter(void *arg) {
  (void)arg;
  int ok = 0;
  loop_answered = cops_uintr_count();
  for (int i = 0; i < WAITS && !loop_stop; i++) {
    ok += cops_async(SYS_sleep, 1, 0, 0) == 0;
    loop_answered = cops_uintr_count();
  }
  loop_waiter_done = ok == WAITS ? 1 : -1;
  loop_finish();
}

static void test_interrupts_in_loop(const char *name, uint32_t waiter_prio) {
  char why[128] = "", n[64];
  loop_waiter_done = loop_stop = loop_finished = 0;
  loop_late = loop_turns = loop_bad_checks = 0;
  loop_until = uptime() + 20000;
  uint64_t entries0 = cops_uintr_count();
  loop_checked_at = entries0;
  cops_spawn_stackful(loop_waiter, 0, waiter_prio);
  for (int i = 0; i < LOOP_YIELDERS; i++) {
    if (i % 2)
      cops_spawn_stackful(loop_yielder, 0, 3);
    else
      cops_spawn(loop_poll, 0, 3);
  }
  while (loop_finished < LOOP_YIELDERS + 1)
    cops_block();                        // the last one to finish wakes main
  uint64_t entries = cops_uintr_count() - entries0;
  int checked = cops_check(why, sizeof why);
  snprintf(n, sizeof n, "%s-every-sleep-back", name);
  check(n, loop_waiter_done, 1);
  snprintf(n, sizeof n, "%s-invariants", name);
  check(n, checked, 0);
  if (checked)
    printf("asynctest: %s: %s\n", name, why);
  snprintf(n, sizeof n, "%s-invariants-after-each-interrupt", name);
  check(n, loop_bad_checks, 0);
  if (loop_bad_checks)
    printf("asynctest: %s: %s\n", name, loop_why);
  snprintf(n, sizeof n, "%s-interrupts-taken", name);
  check(n, entries >= 1, 1);
  if (waiter_prio < 3) {
    snprintf(n, sizeof n, "%s-waiter-runs-next", name);
    check(n, loop_late <= (long)entries, 1);
  }
  printf("asynctest: %s: %lu handler entries over %ld turns, %ld late\n", name,
         (unsigned long)entries, loop_turns, loop_late);
}

// ---- KMODE_POLLER: a wake costs the calls that may have progressed ----
// 100 readers wait on 100 idle pipes while one reader, on its own pipe, gets
// 100 bytes one at a time. The polling kernel thread may try the idle calls
// once each when they arrive, but not again on each of the 100 wakes (it once
// did: 100 x 101 tries).
enum { IDLE = 100, ACTIVE_ROUNDS = 100 };
static int idle_pipes[IDLE][2], active_pipe[2];
static volatile int idle_done, active_got;

static void idle_reader(void *arg) {
  char c;
  cops_async(SYS_read, idle_pipes[(long)arg][0], (long)&c, 1);
  idle_done++;
  cops_wake(main_cid);
}

static void active_reader(void *arg) {
  (void)arg;
  char c;
  for (int i = 0; i < ACTIVE_ROUNDS; i++) {
    cops_async(SYS_read, active_pipe[0], (long)&c, 1);
    active_got++;
    cops_wake(main_cid);
  }
}

static void test_poller_cost(void) {
  for (long i = 0; i < IDLE; i++) {
    pipe(idle_pipes[i]);
    cops_spawn_stackful(idle_reader, (void *)i, 3);
  }
  pipe(active_pipe);
  cops_spawn_stackful(active_reader, 0, 3);
  cops_yield();                          // all submit and block
  long tries0 = kstat(KSTAT_POLLER_ATTEMPTS);
  for (int i = 0; i < ACTIVE_ROUNDS; i++) {
    write(active_pipe[1], "a", 1);
    while (active_got <= i)
      cops_block();
  }
  long tries = kstat(KSTAT_POLLER_ATTEMPTS) - tries0;
  check("poller-active-all-served", active_got, ACTIVE_ROUNDS);
  // About two tries per round (the wake, and a pass that finds the call new
  // again after it is resubmitted); 4 per round leaves room, the old cost was 101.
  check("poller-tries-per-wake-not-per-call", tries <= 4 * ACTIVE_ROUNDS, 1);
  for (int i = 0; i < IDLE; i++)
    write(idle_pipes[i][1], "i", 1);
  while (idle_done < IDLE)
    cops_block();
  check("poller-idle-all-served", idle_done, IDLE);
  for (int i = 0; i < IDLE; i++) {
    close(idle_pipes[i][0]);
    close(idle_pipes[i][1]);
  }
  close(active_pipe[0]);
  close(active_pipe[1]);
}

int main(int argc, char **argv) {
  utest_prog = "asynctest";
  if (argc > 1 && strcmp(argv[1], "--write-byte") == 0)
    return write(1, "W", 1) == 1 ? 0 : 1;    // (test_parked's other process)
  if (argc > 1 && strcmp(argv[1], "--leave-inflight") == 0) {
    static int p[2];
    pipe(p);
    for (int i = 0; i < 5; i++)
      cops_spawn_stackful(leave_reader, p, 3);
    cops_yield();
    return 0;                            // exit while five reads are in flight
  }
  // asynctest -k MODE: the same tests with the kernel serving async calls in
  // another mode (KMODE_*): the results must not depend on it.
  // asynctest --loop: only the switch-loop tests (scripts/test.sh runs them
  // under -icount too, where an interrupt can land between any two
  // instructions: without it QEMU takes interrupts only between its
  // translated blocks, and the loop's rotation is one such block).
  if (argc > 1 && strcmp(argv[1], "--loop") == 0) {
    main_cid = cops_current();
    test_interrupts_in_loop("loop-equal", 3);
    test_interrupts_in_loop("loop-better", 1);
    test_interrupted_calls();
    return utest_summary();
  }
  int kmode = KMODE_COROUTINE;
  if (argc > 2 && strcmp(argv[1], "-k") == 0) {
    kmode = atoi(argv[2]);
    check("setkmode", setkmode(kmode), KMODE_COROUTINE);
  }
  main_cid = cops_current();
  park_kmode = kmode;
  printf("asynctest: pid %d\n", getpid());
  test_fast_path();
  test_submit_args();
  test_slow_path();
  test_parked();
  test_sleep_order();
  test_overflow();
  test_untouched("untouched", 0);
  test_untouched("pure-calls", 1);
  test_slot_reuse();
  test_unmatched();
  test_interrupted_calls();
  test_interrupts_in_loop("loop-equal", 3);
  test_interrupts_in_loop("loop-better", 1);
  if (kmode == KMODE_POLLER)
    test_poller_cost();
  test_exit_inflight();
  return utest_summary();
}
