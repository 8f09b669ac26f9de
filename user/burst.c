// burst: N connections to a matrix-echo server over loopback, all at once.
//
//   burst [-s] [-m model] [-c max_conns] [-t timeout_ms] [-k hold_ms] [-r ramp]
//         [-a active] N PORT
//
// N stackful coroutines each open a socket, connect to 127.0.0.1:PORT (async),
// send one 15x15 request (framed, docs/PROTOCOL.md), read the answer and check
// it against their own A*A, then close. Every connection ends one of three ways:
//   served   the right answer came back
//   refused  connect was refused, or the server closed or reset the
//            connection before answering (matrixd over its -c limit, the
//            kernel's accept queue or socket limit), or socket() itself
//            failed at once (the kernel's socket limit): a clean "no"
//   failed   anything else: a wrong answer, an unexpected error, or no end
//            within the per-connection timeout (-t, 60 s by default), after
//            which a watchdog closes the socket, so nothing hangs
// Then a few connections one after the other must be served: the server
// still works after the burst. -s starts matrixd on PORT first (and waits
// until it accepts connections) and kills it at the end, so that one boot
// runs both: `user=burst,-s,200,8080`; -m and -c pass matrixd its model and
// its -c (connections served at once; more are refused).
// -k hold_ms keeps every served connection open, idle, until all N have
// ended one way or the other, then for hold_ms more (guest time), and only
// then closes them: N idle connections for a measured while (what lwIP's
// timers cost per connection, scripts/profile-idle.sh). The watchdog is
// parked while they are held: a held connection cannot time out.
// -a active (with -k): while the connections are held, that many more
// connections each send a request every 100 ms for hold_ms, and the time
// from each send to the end of its answer is measured in guest time (rdtime):
// p50/p90/p99/max beside N idle connections. Under QEMU -icount the figures
// depend on the guest alone, not on the host.
// -r ramp lets at most that many connections be between their socket() and
// their answer at once (the others queue in order): thousands at once would
// overflow the server's accept queue, which refuses them with resets.
//
// Output (scripts/test.sh and scripts/bench-burst.sh parse it):
//   burst: N=200 served 200 refused 0 failed 0; 181 ms, slowest 119 ms; peak sockets 401
//   burst: refusals: connect refused 0, closed 0, reset 0, no socket 0; failures: timed out 0, ...
//   burst: after the burst: 10 of 10 served
//   burst: PASS ... / FAIL ... lines (utest.h), and the exit status
#include "ulib.h"
#include "cops.h"
#include "matrix_proto.h"
#include "utest.h"

#define N_MAT 15
#define AFTER 10                     // connections tried one by one after the burst
// Descriptors this process can hold at once, less a few for the server's
// probe and stdio (bootargs nofile=N raises it).
#define MAX_CONNS (kstat(KSTAT_NOFILE) - 8)

enum end { E_NONE, E_SERVED, E_REFUSED, E_CLOSED, E_RESET, E_NOSOCK, E_TIMEOUT, E_WRONG, E_ERROR };

struct conn {
  int fd;                            // -1 when closed
  int index;
  long started;                      // uptime() when the connection began
  enum end end;
  long err;                          // E_ERROR: the errno
  int timed_out;                     // the watchdog closed fd
  cid_t cid;                         // -k: the coroutine holding it open
  int admitted;                      // -r: its turn to set up has come
};

static struct conn *conns;
static int nconns, ndone, port;
static long timeout_ms = 60000;
static long hold_ms;                 // -k: keep the burst's served connections open this long
static long holding;                 // hold_ms during the burst, 0 after it
static long held_for;                // how long the hold took (not counted in the burst's time)
static int nheld, released;          // -k: connections held open; main let them go
static int ramp, in_setup;           // -r: set-ups allowed at once, and under way
static struct conn **ramp_q;         // -r: connections waiting for their turn, in order
static int ramp_head, ramp_tail;
static int nactive;                  // -a: active connections beside the held ones
static const char *server_max = "1024";   // matrixd -c
static const char *server_model = "kcuc"; // matrixd -m
static cid_t main_cid;
static long slowest;
static long peak_sockets;            // the most sockets alive in the kernel seen (both ends count)

// The request's values: small, different per connection.
static void fill(int64_t *a, int index) {
  for (int i = 0; i < N_MAT * N_MAT; i++)
    a[i] = (index * 31 + i * 7) % 100;
}

// One connection's buffers: the request as sent, the answer expected and got.
struct bufs {
  int64_t a[N_MAT * N_MAT], want[N_MAT * N_MAT], got[N_MAT * N_MAT];
  char req[MP_REQ_BYTES(N_MAT)];
  char ans[MP_ANSWER_BYTES(N_MAT)];
};

// How a failed call ends the connection: the server said no (a reset or
// close before the answer), the watchdog closed it, or something else.
static enum end ended(struct conn *c, long r) {
  if (c->timed_out)
    return E_TIMEOUT;
  if (r == 0)
    return E_CLOSED;
  if (r == -ECONNRESET || r == -ECONNABORTED || r == -EPIPE)
    return E_RESET;
  c->err = r;
  return E_ERROR;
}

static enum end talk(struct conn *c, struct bufs *b) {
  long r = socket();
  if (r < 0) {
    c->err = r;
    return E_NOSOCK;
  }
  c->fd = (int)r;
  r = cops_async(SYS_connect, c->fd, IP4(127, 0, 0, 1), port);
  long socks = kstat(KSTAT_SOCKETS);
  if (socks > peak_sockets)
    peak_sockets = socks;
  if (r == -ECONNREFUSED && !c->timed_out)
    return E_REFUSED;
  if (r < 0)
    return ended(c, r);
  fill(b->a, c->index);
  mp_square(b->a, N_MAT, b->want);
  size_t len = mp_format_matrix(b->a, N_MAT, 1, b->req, sizeof b->req);
  for (size_t off = 0; off < len; off += (size_t)r)
    if ((r = cops_async(SYS_send, c->fd, (long)(b->req + off), (long)(len - off))) <= 0)
      return ended(c, r);
  size_t got = 0;
  while (got == 0 || b->ans[got - 1] != '\n') {
    if (got == sizeof b->ans)
      return E_WRONG;
    if ((r = cops_async(SYS_recv, c->fd, (long)(b->ans + got), (long)(sizeof b->ans - got))) <= 0)
      return ended(c, r);
    got += (size_t)r;
  }
  if (mp_parse_answer(b->ans, got, b->got, N_MAT * N_MAT) != N_MAT * N_MAT)
    return E_WRONG;
  for (int i = 0; i < N_MAT * N_MAT; i++)
    if (b->got[i] != b->want[i])
      return E_WRONG;
  return E_SERVED;
}

// -r: wait for a set-up slot; ramp_leave hands a freed one to the next in line.
static void ramp_enter(struct conn *c) {
  if (!ramp || in_setup < ramp) {
    in_setup++;
    return;
  }
  ramp_q[ramp_tail++] = c;
  c->cid = cops_current();
  while (!c->admitted)
    cops_block();
}

static void ramp_leave(void) {
  if (ramp_head < ramp_tail) {
    struct conn *next = ramp_q[ramp_head++];
    next->admitted = 1;                // the slot passes on: in_setup stays
    cops_wake(next->cid);
  } else {
    in_setup--;
  }
}

static void conn_main(void *arg) {
  struct conn *c = arg;
  struct bufs *b = malloc(sizeof *b);
  ramp_enter(c);
  c->started = uptime();
  c->end = b ? talk(c, b) : E_NOSOCK;
  free(b);
  ramp_leave();
  long took = uptime() - c->started;
  if (took > slowest)
    slowest = took;
  if (holding && c->end == E_SERVED && !c->timed_out) {
    // Idle from here: no call in flight, nothing for the stack to do but its timers.
    c->cid = cops_current();
    if (ndone + ++nheld == nconns)
      cops_wake(main_cid);
    while (!released)
      cops_block();
    nheld--;
  }
  if (c->fd >= 0 && !c->timed_out)
    close(c->fd);
  c->fd = -1;
  if (++ndone + nheld == nconns)
    cops_wake(main_cid);
}

// Closes the socket of every connection past its timeout: the call it waits
// in ends with -EBADF, and the connection counts as timed out.
static void watchdog(void *arg) {
  (void)arg;
  while (ndone + nheld < nconns) {
    cops_async(SYS_sleep, 100, 0, 0);
    long now = uptime();
    for (int i = 0; i < nconns; i++) {
      struct conn *c = &conns[i];
      if (c->fd >= 0 && !c->timed_out && now - c->started > timeout_ms) {
        c->timed_out = 1;
        close(c->fd);
      }
    }
  }
}

// ---- -a: active connections beside the held ones ----
#define ACTIVE_MS 100                // a request every 100 ms, as mclient's -i 100
#define TICKS_PER_US 10              // rdtime on QEMU's virt board: 10 MHz

static uint64_t *lat;                // -a: every request's latency, in rdtime ticks
static int nlat, active_wrong, active_errors, active_done;
static uint64_t active_t0, worst, worst_at;   // -a: start; the slowest request and when it was sent
static int active_up, active_go;     // -a: connected (or failed) so far; all of them are
static cid_t *active_cid;

// Every active connection is set up before any request goes out: a new
// connection costs the stack more than a request (lwIP looks a SYN up among
// all connections), and the figures are about requests.
static void active_barrier(long index) {
  active_cid[index] = cops_current();
  if (++active_up == nactive) {
    active_go = 1;
    active_t0 = rdtime();
    for (int i = 0; i < nactive; i++)
      if (i != index)
        cops_wake(active_cid[i]);
  }
  while (!active_go)
    cops_block();
}

// One active connection: a request every ACTIVE_MS from start + its offset
// (the connections are spread over the period) until the hold ends.
static void active_main(void *arg) {
  long index = (long)arg;
  struct bufs *b = malloc(sizeof *b);
  long fd = socket();
  int up = b && fd >= 0 && cops_async(SYS_connect, fd, IP4(127, 0, 0, 1), port) == 0;
  active_barrier(index);
  if (!up) {
    active_errors++;
  } else {
    fill(b->a, (int)(index + 7));
    mp_square(b->a, N_MAT, b->want);
    size_t len = mp_format_matrix(b->a, N_MAT, 1, b->req, sizeof b->req);
    uint64_t period = (uint64_t)ACTIVE_MS * 1000 * TICKS_PER_US;
    uint64_t end = rdtime() + (uint64_t)holding * 1000 * TICKS_PER_US;
    uint64_t next = rdtime() + period * (uint64_t)index / (uint64_t)nactive;
    for (; next < end; next += period) {
      uint64_t now = rdtime();
      if (next > now)
        cops_async(SYS_sleep, (long)((next - now + 1000 * TICKS_PER_US - 1) / (1000 * TICKS_PER_US)), 0, 0);
      uint64_t t0 = rdtime();
      long r = 0;
      for (size_t off = 0; off < len; off += (size_t)r)
        if ((r = cops_async(SYS_send, fd, (long)(b->req + off), (long)(len - off))) <= 0)
          break;
      size_t got = 0;
      while (r > 0 && (got == 0 || b->ans[got - 1] != '\n') && got < sizeof b->ans)
        if ((r = cops_async(SYS_recv, fd, (long)(b->ans + got), (long)(sizeof b->ans - got))) > 0)
          got += (size_t)r;
      if (r <= 0) {
        active_errors++;
        break;
      }
      lat[nlat++] = rdtime() - t0;
      if (lat[nlat - 1] > worst) {
        worst = lat[nlat - 1];
        worst_at = t0 - active_t0;
      }
      if (mp_parse_answer(b->ans, got, b->got, N_MAT * N_MAT) != N_MAT * N_MAT ||
          memcmp(b->got, b->want, sizeof b->want) != 0)
        active_wrong++;
    }
  }
  if (fd >= 0)
    close((int)fd);
  free(b);
  if (++active_done == nactive)
    cops_wake(main_cid);
}

// The active connections for the length of the hold; prints their latencies.
static void active_phase(void) {
  int per = (int)(holding / ACTIVE_MS) + 1;
  lat = malloc((size_t)nactive * (size_t)per * sizeof *lat);
  active_cid = calloc((size_t)nactive, sizeof *active_cid);
  if (!lat || !active_cid) {
    active_errors = nactive;
    return;
  }
  nlat = active_wrong = active_errors = active_done = 0;
  worst = 0;
  active_up = active_go = 0;
  for (long i = 0; i < nactive; i++)
    if (cops_spawn_stackful(active_main, (void *)i, COPS_MAIN_PRIO) < 0) {
      active_errors = active_done = nactive;    // (the barrier would wait for it)
      return;
    }
  while (active_done < nactive)
    cops_block();
  sort_u64(lat, nlat);
#define PCT(p) (nlat ? (long)(lat[(nlat - 1) * (p) / 100] / TICKS_PER_US) : -1L)
  printf("burst: active conns=%d beside=%d answered=%d wrong=%d errors=%d p50_us=%ld p90_us=%ld "
         "p99_us=%ld max_us=%ld max_sent_at_ms=%ld\n", nactive, nheld, nlat, active_wrong,
         active_errors, PCT(50), PCT(90), PCT(99), nlat ? (long)(lat[nlat - 1] / TICKS_PER_US) : -1L,
         (long)(worst_at / TICKS_PER_US / 1000));
#undef PCT
  free(lat);
  free(active_cid);
}

// Runs n connections at once (n = 1: one at a time); returns how many ended each way.
static void run(int n, int *count) {
  nconns = n;
  ndone = 0;
  ramp_head = ramp_tail = in_setup = 0;
  for (int i = 0; i < n; i++) {
    conns[i] = (struct conn){ .fd = -1, .index = i, .started = uptime() };
    if (cops_spawn_stackful(conn_main, &conns[i], COPS_MAIN_PRIO) < 0) {
      conns[i].end = E_NOSOCK;
      ndone++;
    }
  }
  cops_spawn_stackful(watchdog, 0, COPS_MAIN_PRIO);
  released = 0;
  while (ndone + nheld < nconns)
    cops_block();
  if (nheld) {
    printf("burst: holding %d idle connections for %ld ms\n", nheld, holding);
    long t = uptime();
    if (nactive)
      active_phase();
    else
      cops_async(SYS_sleep, holding, 0, 0);
    released = 1;
    for (int i = 0; i < n; i++)
      if (conns[i].cid && conns[i].fd >= 0)
        cops_wake(conns[i].cid);
    while (ndone < nconns)
      cops_block();
    held_for = uptime() - t;
    printf("burst: released them\n");
  }
  for (int i = 0; i < n; i++)
    count[conns[i].end]++;
}

// -s: start matrixd on port and wait until it accepts connections (a
// refused connect means it is not listening yet; 30 s at most: a safety net).
// Says why if it cannot: which call failed and how, or that the server died.
static int start_server(void) {
  char p[8];
  snprintf(p, sizeof p, "%d", port);
  const char *argv[] = { "matrixd", "-p", p, "-m", server_model, "-c", server_max, "-q", 0 };
  int pid = spawn("matrixd", argv);
  if (pid < 0) {
    printf("burst: cannot spawn matrixd: %s\n", errname(pid));
    return pid;
  }
  long r = -ECONNREFUSED;
  int tries = 0;
  for (; tries < 3000; tries++) {
    int fd = socket();
    if (fd < 0) {
      r = fd;
      printf("burst: socket() while matrixd starts: %s\n", errname(fd));
      break;
    }
    r = connect(fd, IP4(127, 0, 0, 1), port);
    close(fd);
    if (r == 0)
      return pid;
    if (r != -ECONNREFUSED) {
      printf("burst: connect to matrixd (try %d): %s\n", tries + 1, errname(r));
      break;
    }
    sleep(10);
  }
  if (r == -ECONNREFUSED)
    printf("burst: matrixd refused %d connects over 30 s: it never listened\n", tries);
  kill(pid);
  int status = 0;
  wait(pid, &status);
  printf("burst: matrixd (pid %d) ended with status %d\n", pid, status);
  return -ETIMEDOUT;
}

static void usage(void) {
  fprintf(STDERR, "usage: burst [-s] [-m model] [-c max_conns] [-t timeout_ms] [-k hold_ms] [-r ramp] [-a active] N PORT  (N at most %ld)\n", MAX_CONNS);
  exit(2);
}

int main(int argc, char **argv) {
  utest_prog = "burst";
  main_cid = cops_current();
  int server = 0, i = 1;
  for (; i < argc && argv[i][0] == '-'; i++)
    if (strcmp(argv[i], "-s") == 0)
      server = 1;
    else if (strcmp(argv[i], "-m") == 0 && i + 1 < argc)
      server_model = argv[++i];
    else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
      server_max = argv[++i];
    else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
      timeout_ms = atoi(argv[++i]);
    else if (strcmp(argv[i], "-k") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
      hold_ms = atoi(argv[++i]);
    else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
      ramp = atoi(argv[++i]);
    else if (strcmp(argv[i], "-a") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
      nactive = atoi(argv[++i]);
    else
      usage();
  if (argc - i != 2)
    usage();
  int n = atoi(argv[i]);
  port = atoi(argv[i + 1]);
  if (n < 1 || n > MAX_CONNS || port < 1 || port > 65535)
    usage();
  int pid = server ? start_server() : 0;
  if (pid < 0) {
    printf("burst: cannot start matrixd on port %d: %s\n", port, errname(pid));
    return 1;
  }
  conns = malloc((size_t)n * sizeof *conns);
  ramp_q = malloc((size_t)n * sizeof *ramp_q);
  if (!conns || !ramp_q)
    return 1;
  int count[E_ERROR + 1] = { 0 }, after[E_ERROR + 1] = { 0 };
  long t0 = uptime();
  holding = hold_ms;
  run(n, count);
  holding = 0;
  long took = uptime() - t0 - held_for;
  int refused = count[E_REFUSED] + count[E_CLOSED] + count[E_RESET] + count[E_NOSOCK];
  int failed = n - count[E_SERVED] - refused;
  printf("burst: N=%d served %d refused %d failed %d; %ld ms, slowest %ld ms; peak sockets %ld\n",
         n, count[E_SERVED], refused, failed, took, slowest, peak_sockets);
  printf("burst: refusals: connect refused %d, closed %d, reset %d, no socket %d; "
         "failures: timed out %d, wrong answer %d, error %d",
         count[E_REFUSED], count[E_CLOSED], count[E_RESET], count[E_NOSOCK], count[E_TIMEOUT],
         count[E_WRONG], count[E_ERROR]);
  for (int k = 0; k < n; k++)
    if (conns[k].end == E_ERROR || conns[k].end == E_NOSOCK) {
      printf(" (first: %s)", errname(conns[k].err));
      break;
    }
  printf("\n");
  // The server may still be letting go of the burst's connections (a thread
  // model reaps its threads after they end): a connection it refuses is
  // tried again 100 ms later, for 30 s at most (a safety net). The time until
  // the first one is served says how long it took to recover.
  long t1 = uptime(), recovered = -1;
  int retries = 0;
  for (int k = 0; k < AFTER; k++) {
    int one[E_ERROR + 1] = { 0 };
    run(1, one);
    if (one[E_REFUSED] + one[E_CLOSED] + one[E_RESET] && uptime() - t1 < 30000) {
      retries++;
      sleep(100);
      k--;
      continue;
    }
    if (one[E_SERVED] && recovered < 0)
      recovered = uptime() - t1;
    for (int e = 0; e <= E_ERROR; e++)
      after[e] += one[e];
  }
  printf("burst: after the burst: %d of %d served (%d refused and tried again; the first served after %ld ms)\n",
         after[E_SERVED], AFTER, retries, recovered);
  check("every-connection-served-or-refused", failed, 0);
  check("none-timed-out", count[E_TIMEOUT], 0);
  check("served-after-the-burst", after[E_SERVED], AFTER);
  if (nactive && hold_ms)
    check("active-answers-right", active_wrong + active_errors, 0);
  if (server) {
    kill(pid);
    int status = 0;
    wait(pid, &status);
  }
  return utest_summary();
}
