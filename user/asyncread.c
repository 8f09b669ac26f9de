// asyncread: Algorithm 2 of the COPS paper, asynchronous programming. A reader
// coroutine reads from an empty pipe with the asynchronous form of read: the
// kernel answers "in progress" and starts a kernel coroutine for it; only the
// reader waits, so the counter coroutine keeps running. When main writes to the
// pipe, the kernel coroutine completes the read, posts {cid, result} to the
// completion ring and raises a user interrupt; the handler wakes the reader.
// A second read finds data already there and completes on the fast path.
#include "cops.h"
#include "ulib.h"

static int p[2];
static volatile int reader_done, ticks;
static cid_t main_cid;

static void reader(void *arg) {
  (void)arg;
  char buf[32];
  printf("reader: async read on an empty pipe...\n");
  long n = cops_async(SYS_read, p[0], (long)buf, sizeof buf - 1);
  buf[n > 0 ? n : 0] = 0;
  printf("reader: woken with %ld bytes: \"%s\" (user interrupts so far: %lu)\n", n, buf,
         (unsigned long)cops_uintr_count());
  write(p[1], "again", 5);
  n = cops_async(SYS_read, p[0], (long)buf, sizeof buf - 1);
  buf[n > 0 ? n : 0] = 0;
  printf("reader: second read, data was already there: %ld bytes \"%s\" (fast path, interrupts: %lu)\n",
         n, buf, (unsigned long)cops_uintr_count());
  reader_done = 1;
  cops_wake(main_cid);
}

static void counter(void *arg) {
  (void)arg;
  while (!reader_done) {
    ticks++;
    cops_yield();
  }
}

int main(void) {
  main_cid = cops_current();
  pipe(p);
  cops_spawn_stackful(reader, 0, 2);
  cops_spawn_stackful(counter, 0, 5);
  cops_yield();                             // the reader submits and waits
  printf("main: the reader is waiting; main sleeps 20 ms, asynchronously too\n");
  cops_async(SYS_sleep, 20, 0, 0);          // only main waits: the counter runs
  printf("main: counter ran %d times meanwhile; writing to the pipe\n", ticks);
  write(p[1], "hello, coroutine", 16);
  while (!reader_done)
    cops_block();
  printf("main: done (counter ran %d times in all)\n", ticks);
  return 0;
}
