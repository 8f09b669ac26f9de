// wakestress: the COPS completion path under churn, with a watchdog. Two
// executor threads (alloc_cpu) run NPIPES reader coroutines, each waiting in
// an async read on its own pipe, and NPIPES writer coroutines, each writing
// one numbered byte to its pipe and then sleeping a pseudo-random 0-3 ms
// (an async sleep: another completion). Every write completes a parked read
// in the kernel, whose completion goes through the ring and a user interrupt
// to whichever thread made the call, while the threads keep going idle in
// uwait and being woken or kicked: the path matrixd's coroutine models use,
// without the network. The watchdog (main, priority 0) looks every 100 ms:
// a pipe whose writer has sent more than its reader got, with no progress
// for STALL_MS, is a lost wake; it prints the counts and fails (the kernel's
// side is then one Ctrl-T away: kernel/status.c). Reads must see the bytes
// in order, and at the end every byte sent must have been read.
//   wakestress [SECONDS [KMODE]]   (default 20 s, KMODE_COROUTINE; 2: the
//                                   poller, KTUC's kernel half)
// One line per check, then "wakestress: N passed, M failed"; exits with M.
#include "cops.h"
#include "ulib.h"
#include "utest.h"

#define NPIPES 16
#define STALL_MS 10000          // no progress for this long with bytes unread: a lost wake

static int pfd[NPIPES][2];
static volatile long sent[NPIPES], got[NPIPES];
static volatile int stop, bad_byte, bad_result, readers_left = NPIPES, writers_left = NPIPES;
static cid_t main_cid;

static void reader(void *arg) {
  long i = (long)arg;
  for (;;) {
    unsigned char c;
    long n = cops_async(SYS_read, pfd[i][0], (long)&c, 1);
    if (n == 0)
      break;                               // the writer closed: the end
    if (n != 1) {
      bad_result = 1;
      break;
    }
    if (c != (unsigned char)got[i])
      bad_byte = 1;
    __atomic_store_n(&got[i], got[i] + 1, __ATOMIC_SEQ_CST);
  }
  __atomic_fetch_sub(&readers_left, 1, __ATOMIC_SEQ_CST);
  cops_wake(main_cid);
}

static void writer(void *arg) {
  long i = (long)arg;
  unsigned long x = 0x9e3779b97f4a7c15UL * (unsigned long)(i + 1);
  while (!stop) {
    unsigned char c = (unsigned char)sent[i];
    // Counted before the write: the watchdog must never see got > sent.
    __atomic_store_n(&sent[i], sent[i] + 1, __ATOMIC_SEQ_CST);
    if (write(pfd[i][1], &c, 1) != 1) {
      bad_result = 1;
      break;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    cops_async(SYS_sleep, (long)(x % 4), 0, 0);
  }
  close(pfd[i][1]);                        // the reader sees the end
  __atomic_fetch_sub(&writers_left, 1, __ATOMIC_SEQ_CST);
  cops_wake(main_cid);
}

// 1 if a pipe has bytes its reader has not got and made no progress since
// the last look long enough ago (last[]: got then; since[]: when it moved).
static int stalled(long now, long *last, long *since, long *which) {
  for (long i = 0; i < NPIPES; i++) {
    long g = __atomic_load_n(&got[i], __ATOMIC_SEQ_CST);
    long s = __atomic_load_n(&sent[i], __ATOMIC_SEQ_CST);
    if (g != last[i] || g == s) {
      last[i] = g;
      since[i] = now;
    } else if (now - since[i] >= STALL_MS) {
      *which = i;
      return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  utest_prog = "wakestress";
  long seconds = argc > 1 ? atoi(argv[1]) : 20;
  if (argc > 2)
    check("setkmode", setkmode(atoi(argv[2])), KMODE_COROUTINE);
  main_cid = cops_current();
  check("alloc-cpu-1", cops_alloc_cpu(1), 1);
  for (long i = 0; i < NPIPES; i++)
    if (pipe(pfd[i]) != 0) {
      printf("wakestress: FAIL pipe\n");
      return 1;
    }
  cops_reprio(main_cid, 0);                // the watchdog comes first
  for (long i = 0; i < NPIPES; i++) {
    cops_spawn_stackful(reader, (void *)i, 1 + (uint32_t)(i % 7));   // priorities 1..7, as matrixd's
    cops_spawn_stackful(writer, (void *)i, 3);
  }
  long last[NPIPES] = { 0 }, since[NPIPES], which = -1;
  long t0 = uptime(), now = t0;
  for (long i = 0; i < NPIPES; i++)
    since[i] = t0;
  int lost = 0;
  while (now - t0 < seconds * 1000) {
    cops_async(SYS_sleep, 100, 0, 0);
    now = uptime();
    if ((lost = stalled(now, last, since, &which)) != 0)
      break;
  }
  if (lost) {
    printf("wakestress: pipe %ld: sent %ld, got %ld, no progress for %ld ms; every pipe:", which,
           sent[which], got[which], now - since[which]);
    for (long i = 0; i < NPIPES; i++)
      printf(" %ld/%ld", got[i], sent[i]);
    printf("\n");
  }
  check("no-lost-wake", lost, 0);
  stop = 1;
  // The end: each writer closes its pipe, each reader then reads 0. (If a
  // wake was lost this may never come: the report above is printed already,
  // and the test's time limit ends the run.)
  while (!lost && (readers_left > 0 || writers_left > 0))
    cops_block();
  long total = 0, unread = 0;
  for (long i = 0; i < NPIPES; i++) {
    total += got[i];
    unread += sent[i] - got[i];
  }
  check("bytes-in-order", bad_byte, 0);
  check("reads-and-writes-answered", bad_result, 0);
  check("every-byte-read", lost ? -1 : unread, 0);
  printf("wakestress: %ld reads completed in %ld s, %lu user interrupts\n", total, seconds,
         (unsigned long)cops_uintr_count());
  return utest_summary();
}
