// mclient: the matrix-echo latency client (docs/PROTOCOL.md), a C
// version of the COPS evaluation client. Opens N TCP connections to matrixd
// (or scripts/host/mserver.c); each sends an n x n request every interval and
// waits for the answer, which it checks against its own A*A. Reports latency
// percentiles (send -> first byte of the answer, as the paper measures it)
// overall and per priority.
//
//   mclient [-H host] [-p port] [-c conns] [-i interval_ms] [-d duration_s] [-n size]
//           [--prio P | --prio-mod K] [--base] [--csv FILE] [--json FILE]
//           [--allow-refused] [--quiet] [--seed S] [--ramp K]
//           [--requests K] [--until-refused]
//
// One thread, one epoll set, non-blocking sockets: the client itself must not
// add latency that depends on the number of connections.
//
// Setup. Connections are opened with at most K (--ramp, default 2) handshakes
// outstanding at a time, and the measurement starts (t0) once every one of
// them has answered its handshake or failed. The ramp is needed under QEMU's
// user-mode network: its host port forward listens with a backlog of one, so
// a burst of connects overflows the host kernel's accept queue and those
// connections stall in SYN retransmission for seconds. Setup time is not
// part of the measured window.
//
// Timing. Connection i sends its requests on a grid: t0 + off_i + k*interval,
// off_i = i*interval/conns, so the first requests are spread evenly over the
// first interval. A connection never has two requests outstanding: if the
// answer comes after the next grid point, the next request goes out as soon
// as it arrives (counted as "late") and the grid resumes after it, so a slow
// server sees a lower rate instead of a growing pile. With -i 0 the grid has
// no gaps: each connection sends its next request as soon as the answer to
// the last one has arrived (a closed loop, the load of a saturation test).
//
// Memory tests (scripts/eval.sh) use two more options: --until-refused stops
// opening connections at the first one refused, and --requests K lets each
// connection send K requests and then hold it open, idle, until the run ends
// (-d, or SIGINT); once all have their K answers, a line on stderr says so
// ("mclient: holding ..."), so a script can look at the server meanwhile.
//
// Output: one summary line on stdout (scripts parse it; keep the format; its
// last field, silent=N, counts the connections refused or failed without a
// word: no connection, or no handshake answer, within 10 s, and no reset),
// one line per priority when priorities are in use, progress on stderr once
// a second when it is a terminal. Exit status 0 iff no answer was wrong, no
// connection failed, and none was refused (unless --allow-refused).
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "matrix_proto.h"

#define ANSWER_TIMEOUT_US 10000000   // no answer (or no connection) within 10 s: give up
#define CLOSE_TIMEOUT_US 2000000     // writing "close connection" at the end
#define MAX_COMPLAINTS 10            // reasons printed on stderr, then only counted

// ---------------------------------------------------------------------------
// Options

static struct {
  const char *host, *port;
  int conns;
  double interval_ms, duration_s;
  int n;
  int prio, prio_mod;          // -1 when not given
  int base;
  const char *csv, *json;
  int allow_refused, quiet;
  uint64_t seed;
  int ramp;                    // handshakes outstanding at once during setup
  int requests;                // requests per connection (0: no limit)
  int until_refused;           // open no more connections after one is refused
} opt = {"127.0.0.1", "6201", 16, 100, 5, 15, -1, -1, 0, NULL, NULL, 0, 0, 1, 2, 0, 0};

static void usage(FILE *f) {
  fprintf(f,
    "usage: mclient [-H host=127.0.0.1] [-p port=6201] [-c conns=16] [-i interval_ms=100]\n"
    "               [-d duration_s=5] [-n size=15] [--prio P | --prio-mod K] [--base]\n"
    "               [--csv FILE] [--json FILE] [--allow-refused] [--quiet] [--seed S] [--ramp K]\n"
    "               [--requests K] [--until-refused]\n"
    "  -i 0           closed loop: each connection sends its next request as soon as the\n"
    "                 answer to the last one has arrived\n"
    "  --prio P       every connection asks for priority P (handshake \"connect ok? prio=P\")\n"
    "  --prio-mod K   connection i asks for priority i mod K\n"
    "  --base         the paper's base protocol: no framing, no priority in the handshake\n"
    "                 (with --prio/--prio-mod the priority then only labels the statistics,\n"
    "                 for servers that assign connection index mod NPRIO themselves)\n"
    "  --csv FILE     one row per request: conn,prio,send_us,first_byte_us,complete_us,ok\n"
    "                 (times in microseconds since the start; -1 = never)\n"
    "  --json FILE    the summary as JSON, overall and per priority\n"
    "  --allow-refused  connections refused or dropped before the handshake completes\n"
    "                 are counted as refused and do not fail the run\n"
    "  --ramp K       set connections up with at most K handshakes outstanding (default 2;\n"
    "                 QEMU's port forward has a listen backlog of 1); the measurement starts\n"
    "                 when all are set up\n"
    "  --requests K   each connection sends K requests, then stays open, idle, until the\n"
    "                 run ends (-d or SIGINT); \"mclient: holding ...\" on stderr once\n"
    "                 every connection has its K answers\n"
    "  --until-refused  open no more connections once one is refused (the rest are\n"
    "                 \"untried\" in the JSON); with --allow-refused: how many fit\n");
}

static int parse_num(const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi))
    return -1;
  *out = v;
  return 0;
}

static void parse_options(int argc, char **argv) {
  enum { O_PRIO = 256, O_PRIO_MOD, O_BASE, O_CSV, O_JSON, O_ALLOW, O_QUIET, O_SEED, O_RAMP,
         O_REQUESTS, O_UNTIL_REFUSED, O_HELP };
  static const struct option longs[] = {
    {"prio", required_argument, NULL, O_PRIO},   {"prio-mod", required_argument, NULL, O_PRIO_MOD},
    {"base", no_argument, NULL, O_BASE},         {"csv", required_argument, NULL, O_CSV},
    {"json", required_argument, NULL, O_JSON},   {"allow-refused", no_argument, NULL, O_ALLOW},
    {"quiet", no_argument, NULL, O_QUIET},       {"seed", required_argument, NULL, O_SEED},
    {"ramp", required_argument, NULL, O_RAMP},   {"help", no_argument, NULL, O_HELP},
    {"requests", required_argument, NULL, O_REQUESTS},
    {"until-refused", no_argument, NULL, O_UNTIL_REFUSED},
    {NULL, 0, NULL, 0},
  };
  int c;
  double v;
  while ((c = getopt_long(argc, argv, "H:p:c:i:d:n:h", longs, NULL)) != -1) {
    int bad = 0;
    switch (c) {
    case 'H': opt.host = optarg; break;
    case 'p': opt.port = optarg; bad = parse_num(optarg, 1, 65535, &v); break;
    case 'c': bad = parse_num(optarg, 1, 1000000, &v); opt.conns = (int)v; break;
    case 'i': bad = parse_num(optarg, 0, 3600e3, &v); opt.interval_ms = v; break;
    case 'd': bad = parse_num(optarg, 0, 30 * 86400, &v); opt.duration_s = v; break;
    case 'n': bad = parse_num(optarg, 1, MP_MAX_N_LIMIT, &v); opt.n = (int)v; break;
    case O_PRIO: bad = parse_num(optarg, 0, 1000000, &v); opt.prio = (int)v; break;
    case O_PRIO_MOD: bad = parse_num(optarg, 1, 1000000, &v); opt.prio_mod = (int)v; break;
    case O_BASE: opt.base = 1; break;
    case O_CSV: opt.csv = optarg; break;
    case O_JSON: opt.json = optarg; break;
    case O_ALLOW: opt.allow_refused = 1; break;
    case O_QUIET: opt.quiet = 1; break;
    case O_SEED: bad = parse_num(optarg, 0, 1e18, &v); opt.seed = (uint64_t)v; break;
    case O_RAMP: bad = parse_num(optarg, 1, 1000000, &v); opt.ramp = (int)v; break;
    case O_REQUESTS: bad = parse_num(optarg, 1, 1e9, &v); opt.requests = (int)v; break;
    case O_UNTIL_REFUSED: opt.until_refused = 1; break;
    case 'h': case O_HELP: usage(stdout); exit(0);
    default: usage(stderr); exit(2);
    }
    if (bad) {
      fprintf(stderr, "mclient: bad value '%s' for option %s\n", optarg, argv[optind - 1]);
      exit(2);
    }
  }
  if (optind < argc) {
    fprintf(stderr, "mclient: unexpected argument '%s'\n", argv[optind]);
    usage(stderr);
    exit(2);
  }
  if (opt.prio >= 0 && opt.prio_mod >= 0) {
    fprintf(stderr, "mclient: --prio and --prio-mod exclude each other\n");
    exit(2);
  }
}

// ---------------------------------------------------------------------------
// Time, randomness, complaints

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static uint64_t rnd(uint64_t *s) {   // xorshift64*
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1DULL;
}

static int complaints;
static __attribute__((format(printf, 1, 2))) void complain(const char *fmt, ...) {
  if (opt.quiet || complaints++ >= MAX_COMPLAINTS)
    return;
  va_list ap;
  va_start(ap, fmt);
  fputs("mclient: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

// ---------------------------------------------------------------------------
// Connections and requests

// One request, kept for the CSV and the percentiles. Times are microseconds
// since t0, -1 when it did not happen.
struct req {
  int32_t conn, prio;
  int64_t send_us, first_us, done_us;
  int ok;
};

enum cstate { C_CONNECTING, C_HANDSHAKE, C_IDLE, C_BUSY, C_CLOSING, C_DONE };

struct conn {
  int fd, idx, prio;           // prio: -1 when no priority is used
  enum cstate st;
  int64_t deadline;            // connect, handshake, answer or close deadline (0: none)
  int64_t off;                 // grid offset: requests go at t0 + off + k*interval
  int64_t slot;                // k of the last request sent
  long nsent;                  // requests sent on it
  int64_t next_send;           // C_IDLE: when the next request goes out
  char *out;                   // bytes to send: out[out_off, out_len)
  size_t out_len, out_off, out_cap;
  char *in;                    // bytes received and not consumed
  size_t in_len, in_cap;
  int64_t *a, *expect, *got;   // the request, its square, the parsed answer
  size_t cur;                  // records[] index of the outstanding request
  int got_first;               // its answer has started
  int drain_error;             // base mode: the rest of an error reply may still arrive
  uint32_t events;             // registered with epoll
  uint64_t rng;
};

static int ep = -1;
static struct conn *conns;
static struct req *records;
static size_t nrecords, records_cap;
static struct sockaddr_storage addr;
static socklen_t addr_len;
static int64_t t0, interval_us, end_send;
static volatile sig_atomic_t interrupted;

static struct {
  long connected, refused, errors, sent, answered, wrong, late;
  long untried;                // --until-refused: connections never opened
  long held;                   // --requests: connections that have all their answers
  long silent;                 // of refused/errors: no connection or handshake answer, no reset
                               // either (a server over a limit should refuse, not ignore)
  int64_t last_answer;
} st;

static int live;   // connections not C_DONE
static int started, setting_up;   // connections started; of those, still connecting or in the handshake
static int measuring;             // setup is over: t0 is set and requests go out
static int stop_opening;          // --until-refused: one was refused

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "mclient: out of memory\n");
    exit(2);
  }
  return p;
}

static void set_events(struct conn *c, uint32_t ev) {
  if (c->events == ev)
    return;
  struct epoll_event e = {.events = ev, .data.ptr = c};
  if (epoll_ctl(ep, c->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &e) < 0) {
    perror("mclient: epoll_ctl");
    exit(2);
  }
  c->events = ev;
}

static void finish(struct conn *c) {
  if (c->fd >= 0)
    close(c->fd);   // also removes it from the epoll set
  c->fd = -1;
  c->events = 0;
  c->st = C_DONE;
  live--;
}

static void setup_done_one(void);

// The connection failed. Before the handshake completes that is "refused"
// (with --allow-refused, or when it never connected at all); after, an error.
static void fail(struct conn *c, const char *why) {
  int early = c->st == C_CONNECTING || c->st == C_HANDSHAKE;
  if (c->st == C_CLOSING) {
    finish(c);   // the run is over for it anyway
    return;
  }
  if (c->st == C_CONNECTING || (early && opt.allow_refused)) {
    st.refused++;
    stop_opening |= opt.until_refused;
  } else {
    st.errors++;
  }
  complain("connection %d: %s", c->idx, why);
  finish(c);
  if (early)
    setup_done_one();
}

// Writes what is queued. Returns -1 if the connection failed (and is closed).
static int flush_out(struct conn *c) {
  while (c->out_off < c->out_len) {
    ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
    if (n > 0) {
      c->out_off += (size_t)n;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      set_events(c, EPOLLIN | EPOLLOUT);
      return 0;
    } else {
      char why[96];
      snprintf(why, sizeof why, "send: %s", strerror(errno));
      fail(c, why);
      return -1;
    }
  }
  c->out_off = c->out_len = 0;
  set_events(c, EPOLLIN);
  return 0;
}

static void queue_out(struct conn *c, const char *s, size_t n) {
  // Only one message is ever in flight per connection, so this fits.
  if (c->out_len + n > c->out_cap) {
    fprintf(stderr, "mclient: internal error: output buffer\n");
    exit(2);
  }
  memcpy(c->out + c->out_len, s, n);
  c->out_len += n;
}

static void start_connect(struct conn *c);

// Setup (see the top): open more connections while fewer than opt.ramp are
// being set up; when all are set up, start the measurement. After a refusal
// with --until-refused, the connections not yet started are never opened.
static void ramp(void) {
  while (!stop_opening && started < opt.conns && setting_up < opt.ramp) {
    setting_up++;
    start_connect(&conns[started++]);
  }
  if (!measuring && (stop_opening || started == opt.conns) && setting_up == 0) {
    for (; started < opt.conns; started++, st.untried++)
      finish(&conns[started]);
    measuring = 1;
    t0 = now_us();
    end_send = t0 + (int64_t)(opt.duration_s * 1e6);
    for (int i = 0; i < opt.conns; i++)
      if (conns[i].st == C_IDLE) {
        conns[i].slot = 0;
        conns[i].next_send = t0 + conns[i].off;
      }
  }
}

static void setup_done_one(void) {
  setting_up--;
  ramp();
}

static void start_connect(struct conn *c) {
  c->deadline = now_us() + ANSWER_TIMEOUT_US;
  c->fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->fd < 0) {
    char why[96];
    snprintf(why, sizeof why, "socket: %s", strerror(errno));
    fail(c, why);
    return;
  }
  // Requests are single writes that must leave at once: no Nagle delay.
  int one = 1;
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  set_events(c, EPOLLOUT);
  if (connect(c->fd, (struct sockaddr *)&addr, addr_len) < 0 && errno != EINPROGRESS) {
    char why[96];
    snprintf(why, sizeof why, "connect: %s", strerror(errno));
    fail(c, why);
  }
  // Connected or in progress: EPOLLOUT reports the outcome either way.
}

static void connected(struct conn *c) {
  char hs[64];
  int len;
  if (opt.base)
    len = snprintf(hs, sizeof hs, "connect ok?");
  else if (c->prio >= 0)
    len = snprintf(hs, sizeof hs, "connect ok? prio=%d\n", c->prio);
  else
    len = snprintf(hs, sizeof hs, "connect ok?\n");
  c->st = C_HANDSHAKE;
  queue_out(c, hs, (size_t)len);
  flush_out(c);
}

// The request's values, formatted "v v ... v" (values are 0..99).
static size_t format_request(const int64_t *a, int n, int framed, char *out) {
  size_t len = 0;
  for (int i = 0; i < n * n; i++) {
    if (i)
      out[len++] = ' ';
    if (a[i] >= 10)
      out[len++] = (char)('0' + a[i] / 10);
    out[len++] = (char)('0' + a[i] % 10);
  }
  if (framed)
    out[len++] = '\n';
  return len;
}

// Sends the next request (it is due: its grid slot has come).
static void send_request(struct conn *c) {
  int nn = opt.n * opt.n;
  for (int i = 0; i < nn; i++)
    c->a[i] = (int64_t)(rnd(&c->rng) % 100);
  mp_square(c->a, opt.n, c->expect);
  c->out_len = c->out_off = 0;
  c->out_len = format_request(c->a, opt.n, !opt.base, c->out);

  if (nrecords == records_cap) {
    records_cap = records_cap ? records_cap * 2 : 4096;
    struct req *r = realloc(records, records_cap * sizeof *records);
    if (!r) {
      fprintf(stderr, "mclient: out of memory\n");
      exit(2);
    }
    records = r;
  }
  // Latency counts from the moment the request really leaves, which after a
  // busy loop iteration may be a little after its grid slot.
  int64_t sent_at = now_us();
  c->cur = nrecords;
  records[nrecords++] = (struct req){c->idx, c->prio, sent_at - t0, -1, -1, 0};
  st.sent++;
  c->nsent++;
  c->st = C_BUSY;
  c->got_first = 0;
  c->drain_error = 0;
  c->deadline = sent_at + ANSWER_TIMEOUT_US;
  flush_out(c);
}

// The outstanding request's answer is complete.
static void answered(struct conn *c, int64_t t, int ok) {
  struct req *r = &records[c->cur];
  r->done_us = t - t0;
  r->ok = ok;
  st.answered++;
  st.wrong += !ok;
  if (t > st.last_answer)
    st.last_answer = t;
  c->st = C_IDLE;
  c->deadline = 0;

  // The next grid point; if it has passed, go now and resume the grid after.
  int64_t next = t0 + c->off + (c->slot + 1) * interval_us;
  if (next <= t) {
    if (interval_us > 0 && t < end_send)
      st.late++;
    next = t;
    c->slot = interval_us > 0 ? (t - t0 - c->off) / interval_us : c->slot + 1;
  } else {
    c->slot++;
  }
  c->next_send = next;
  if (opt.requests && c->nsent >= opt.requests) {
    c->next_send = INT64_MAX;   // it holds the connection until the end
    st.held++;
  }
}

static void begin_close(struct conn *c) {
  static const char bye[] = "close connection\n";
  c->st = C_CLOSING;
  c->deadline = now_us() + CLOSE_TIMEOUT_US;
  c->out_len = c->out_off = 0;
  queue_out(c, bye, opt.base ? sizeof bye - 2 : sizeof bye - 1);
  if (flush_out(c) == 0 && c->out_len == 0)
    finish(c);   // written: the server closes without a reply
}

// Verifies a framed answer line s[0, len) (without its '\n').
static int check_line(struct conn *c, const char *s, size_t len) {
  int nn = opt.n * opt.n;
  if (len >= 6 && memcmp(s, "error:", 6) == 0) {
    complain("connection %d: server answered '%.*s'", c->idx, (int)(len > 80 ? 80 : len), s);
    return 0;
  }
  if (mp_parse_answer(s, len, c->got, nn) != nn ||
      memcmp(c->got, c->expect, sizeof(int64_t) * (size_t)nn) != 0) {
    complain("connection %d: wrong answer", c->idx);
    return 0;
  }
  return 1;
}

enum base_verdict { B_WAIT, B_OK, B_WRONG };

// Base protocol: the answer has no terminator, so it is complete when it
// parses to n*n numbers. The last one may still be growing: if it is a proper
// prefix of the expected value (and nothing follows it), wait for more.
static enum base_verdict check_base(struct conn *c) {
  int nn = opt.n * opt.n, count = 0, bad_before_last = 0;
  const char *s = c->in, *end = c->in + c->in_len;
  const char *last = NULL;
  size_t last_len = 0;

  if (c->in_len < 6 && memcmp(s, "error:", c->in_len) == 0)
    return B_WAIT;
  while (s < end) {
    if (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') {
      s++;
      continue;
    }
    const char *t = s;
    while (s < end && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
      s++;
    if (count >= nn)
      return B_WRONG;   // more values than n*n
    if (mp_parse_answer(t, (size_t)(s - t), &c->got[count], 1) != 1) {
      complain("connection %d: server answered '%.*s'", c->idx,
               (int)(c->in_len > 80 ? 80 : c->in_len), c->in);
      return B_WRONG;
    }
    if (c->got[count] != c->expect[count])
      bad_before_last |= count < nn - 1 ? 1 : 2;
    last = t;
    last_len = (size_t)(s - t);
    count++;
  }
  if (count < nn)
    return B_WAIT;
  if (bad_before_last == 0)
    return B_OK;
  if (bad_before_last == 2 && last + last_len == end) {
    char want[24];
    int wl = snprintf(want, sizeof want, "%lld", (long long)c->expect[nn - 1]);
    if ((size_t)wl > last_len && memcmp(want, last, last_len) == 0)
      return B_WAIT;
  }
  complain("connection %d: wrong answer", c->idx);
  return B_WRONG;
}

// Consumes what has arrived. Returns -1 if the connection is gone.
static int process_input(struct conn *c, int64_t t) {
  static const char ok[] = "connect ok";
  switch (c->st) {
  case C_HANDSHAKE:
    if (opt.base) {
      size_t m = c->in_len < 10 ? c->in_len : 10;
      if (memcmp(c->in, ok, m) != 0 || c->in_len > 10) {
        fail(c, "bad handshake answer");
        return -1;
      }
      if (c->in_len < 10)
        return 0;
      c->in_len = 0;
    } else {
      // "connect ok\n" (a '\r' before the '\n' is tolerated).
      char *nl = memchr(c->in, '\n', c->in_len);
      size_t m = nl ? (size_t)(nl - c->in) : c->in_len;
      if (nl && m > 0 && c->in[m - 1] == '\r')
        m--;
      int good = nl ? m == 10 && memcmp(c->in, ok, 10) == 0 && nl == c->in + c->in_len - 1
                    : m <= 11 && memcmp(c->in, "connect ok\r", m) == 0;
      if (!good) {
        fail(c, "bad handshake answer");
        return -1;
      }
      if (!nl)
        return 0;
      c->in_len = 0;
    }
    st.connected++;
    c->st = C_IDLE;
    c->deadline = 0;
    c->next_send = INT64_MAX;    // requests start with the measurement
    (void)t;
    setup_done_one();
    return 0;

  case C_BUSY:
    if (opt.base) {
      enum base_verdict v = check_base(c);
      if (v == B_WAIT)
        return 0;
      c->drain_error = v == B_WRONG;   // drop the rest of it, if any
      c->in_len = 0;
      answered(c, t, v == B_OK);
      return 0;
    } else {
      char *nl = memchr(c->in, '\n', c->in_len);
      if (!nl)
        return 0;
      size_t len = (size_t)(nl - c->in);
      int good = check_line(c, c->in, len);
      size_t rest = c->in_len - len - 1;
      c->in_len = 0;
      answered(c, t, good);
      if (rest) {   // nothing was asked: the server is confused
        fail(c, "unexpected data after an answer");
        return -1;
      }
      return 0;
    }

  default:
    if (opt.base && c->drain_error) {
      c->in_len = 0;
      return 0;
    }
    if (c->st == C_CLOSING) {
      c->in_len = 0;
      return 0;
    }
    fail(c, "unexpected data from the server");
    return -1;
  }
}

static void on_readable(struct conn *c) {
  for (;;) {
    if (c->in_len == c->in_cap) {
      if (c->st == C_BUSY) {
        // Longer than any answer can be: count it wrong, then give up on
        // the connection (it cannot be resynchronised).
        c->in_len = 0;
        answered(c, now_us(), 0);
        complain("connection %d: answer too long", c->idx);
      }
      fail(c, "answer too long");
      return;
    }
    ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
    if (n > 0) {
      int64_t t = now_us();
      if (c->st == C_BUSY && !c->got_first) {
        records[c->cur].first_us = t - t0;
        c->got_first = 1;
      }
      c->in_len += (size_t)n;
      if (process_input(c, t) < 0)
        return;
    } else if (n == 0) {
      fail(c, c->st == C_BUSY ? "closed by the server while waiting for an answer"
                              : "closed by the server");
      return;
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return;
    } else {
      char why[96];
      snprintf(why, sizeof why, "recv: %s", strerror(errno));
      fail(c, why);
      return;
    }
  }
}

static void on_event(struct conn *c, uint32_t ev) {
  if (c->st == C_CONNECTING) {
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
      err = errno;
    if (err) {
      char why[96];
      snprintf(why, sizeof why, "connect: %s", strerror(err));
      fail(c, why);
      return;
    }
    connected(c);
    return;
  }
  if ((ev & EPOLLOUT) && c->out_len) {
    if (flush_out(c) < 0)
      return;
    if (c->st == C_CLOSING && c->out_len == 0) {
      finish(c);
      return;
    }
  }
  if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))
    on_readable(c);
}

// Timers: deadlines, scheduled requests, the end of the run. Returns the time
// of the next timer.
static int64_t run_timers(int64_t t) {
  int64_t next = t + 1000000;
  for (int i = 0; i < opt.conns; i++) {
    struct conn *c = &conns[i];
    if (c->st == C_DONE)
      continue;
    if (c->deadline && t >= c->deadline) {
      const char *why = c->st == C_CONNECTING ? "connect timed out"
                      : c->st == C_HANDSHAKE ? "no handshake answer within 10 s"
                      : "no answer within 10 s";
      st.silent += c->st == C_CONNECTING || c->st == C_HANDSHAKE;
      fail(c, why);
      continue;
    }
    if (c->st == C_IDLE) {
      if (t >= end_send) {
        begin_close(c);
        continue;
      }
      if (t >= c->next_send)
        send_request(c);
      else if (c->next_send < next)
        next = c->next_send;
    }
    if (c->st == C_IDLE && end_send < next)
      next = end_send;
    if (c->st != C_DONE && c->deadline && c->deadline < next)
      next = c->deadline;
  }
  return next;
}

// ---------------------------------------------------------------------------
// Statistics

struct stats {
  long answered;
  int64_t p50, p90, p99, max;          // send -> first byte
  int64_t cp50, cp90, cp99, cmax;      // send -> complete answer
  double mean, cmean;
};

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static int64_t pct(const int64_t *v, size_t n, double p) {   // nearest rank
  if (n == 0)
    return 0;
  size_t r = (size_t)ceil(p / 100.0 * (double)n);
  return v[r ? r - 1 : 0];
}

// Statistics of the answered requests of priority prio (any when all).
static struct stats compute(int all, int prio, int64_t *first, int64_t *done) {
  struct stats s = {0};
  size_t n = 0;
  double sum = 0, csum = 0;
  for (size_t i = 0; i < nrecords; i++) {
    const struct req *r = &records[i];
    if (r->done_us < 0 || (!all && r->prio != prio))
      continue;
    first[n] = r->first_us - r->send_us;
    done[n] = r->done_us - r->send_us;
    sum += (double)first[n];
    csum += (double)done[n];
    n++;
  }
  qsort(first, n, sizeof *first, cmp64);
  qsort(done, n, sizeof *done, cmp64);
  s.answered = (long)n;
  s.p50 = pct(first, n, 50), s.p90 = pct(first, n, 90), s.p99 = pct(first, n, 99);
  s.max = n ? first[n - 1] : 0;
  s.cp50 = pct(done, n, 50), s.cp90 = pct(done, n, 90), s.cp99 = pct(done, n, 99);
  s.cmax = n ? done[n - 1] : 0;
  s.mean = n ? sum / (double)n : 0;
  s.cmean = n ? csum / (double)n : 0;
  return s;
}

static void json_stats(FILE *f, const struct stats *s, double elapsed) {
  fprintf(f, "\"answered\": %ld, \"rps\": %.1f, "
          "\"p50_us\": %lld, \"p90_us\": %lld, \"p99_us\": %lld, \"max_us\": %lld, \"mean_us\": %.1f, "
          "\"complete_p50_us\": %lld, \"complete_p90_us\": %lld, \"complete_p99_us\": %lld, "
          "\"complete_max_us\": %lld, \"complete_mean_us\": %.1f",
          s->answered, (double)s->answered / elapsed, (long long)s->p50, (long long)s->p90,
          (long long)s->p99, (long long)s->max, s->mean, (long long)s->cp50, (long long)s->cp90,
          (long long)s->cp99, (long long)s->cmax, s->cmean);
}

static int write_csv(const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "mclient: %s: %s\n", path, strerror(errno));
    return -1;
  }
  fprintf(f, "conn,prio,send_us,first_byte_us,complete_us,ok\n");
  for (size_t i = 0; i < nrecords; i++) {
    const struct req *r = &records[i];
    fprintf(f, "%d,%d,%lld,%lld,%lld,%d\n", r->conn, r->prio, (long long)r->send_us,
            (long long)r->first_us, (long long)r->done_us, r->ok);
  }
  if (fclose(f) != 0) {
    fprintf(stderr, "mclient: %s: %s\n", path, strerror(errno));
    return -1;
  }
  return 0;
}

// ---------------------------------------------------------------------------
// Setup

static void resolve(void) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
  int r = getaddrinfo(opt.host, opt.port, &hints, &res);
  if (r != 0) {
    fprintf(stderr, "mclient: %s:%s: %s\n", opt.host, opt.port, gai_strerror(r));
    exit(2);
  }
  memcpy(&addr, res->ai_addr, res->ai_addrlen);
  addr_len = res->ai_addrlen;
  freeaddrinfo(res);
}

// One descriptor per connection plus a few: raise the soft limit (and the hard
// one, which only works with privileges) when conns needs it.
static void raise_nofile(void) {
  struct rlimit rl;
  rlim_t need = (rlim_t)opt.conns + 32;
  if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= need)
    return;
  if (rl.rlim_max < need) {
    struct rlimit want = {need, need};
    if (setrlimit(RLIMIT_NOFILE, &want) == 0)
      return;
    fprintf(stderr, "mclient: warning: only %lu descriptors allowed for %d connections\n",
            (unsigned long)rl.rlim_max, opt.conns);
  }
  rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
  setrlimit(RLIMIT_NOFILE, &rl);
}

static void on_signal(int sig) {
  (void)sig;
  interrupted = 1;
}

int main(int argc, char **argv) {
  parse_options(argc, argv);
  resolve();
  raise_nofile();
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa = {.sa_handler = on_signal};   // no SA_RESTART: epoll_wait returns
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) {
    perror("mclient: epoll_create1");
    return 2;
  }
  int nn = opt.n * opt.n;
  interval_us = (int64_t)(opt.interval_ms * 1000.0);
  t0 = now_us();                 // reset when the measurement starts (ramp)
  end_send = INT64_MAX;
  conns = calloc((size_t)opt.conns, sizeof *conns);
  if (!conns) {
    fprintf(stderr, "mclient: out of memory\n");
    return 2;
  }
  for (int i = 0; i < opt.conns; i++) {
    struct conn *c = &conns[i];
    c->fd = -1;
    c->idx = i;
    c->prio = opt.prio >= 0 ? opt.prio : opt.prio_mod > 0 ? i % opt.prio_mod : -1;
    c->st = C_CONNECTING;
    c->off = interval_us * i / opt.conns;
    c->out_cap = (size_t)nn * 3 + 64;   // values 0..99: at most 3 bytes each
    c->out = xmalloc(c->out_cap);
    c->in_cap = MP_ANSWER_BYTES(opt.n) + 64;
    c->in = xmalloc(c->in_cap);
    c->a = xmalloc(sizeof(int64_t) * (size_t)nn * 3);
    c->expect = c->a + nn;
    c->got = c->a + 2 * nn;
    c->rng = (opt.seed + 1) * 0x9E3779B97F4A7C15ULL + (uint64_t)i * 0xBF58476D1CE4E5B9ULL;
    if (c->rng == 0)
      c->rng = 1;
    live++;
  }
  ramp();

  int progress = isatty(2) && !opt.quiet;
  int64_t next_progress = t0 + 1000000;
  long last_answered = 0;
  int holding = 0;                     // "mclient: holding" has been said
  int maxev = opt.conns < 1024 ? opt.conns : 1024;
  struct epoll_event *evs = xmalloc(sizeof *evs * (size_t)maxev);
  while (live > 0) {
    int64_t t = now_us();
    if (interrupted && end_send > t)
      end_send = t;   // stop sending; outstanding answers are still awaited
    int64_t next = run_timers(t);
    if (live == 0)
      break;
    if (opt.requests && !holding && measuring && st.held >= live && t < end_send) {
      holding = 1;
      fprintf(stderr, "mclient: holding %d connections open (%d answers each)\n", live,
              opt.requests);
      fflush(stderr);
    }
    if (progress && t >= next_progress) {
      fprintf(stderr, "mclient: %3.0fs connected=%ld refused=%ld sent=%ld answered=%ld wrong=%ld "
              "errors=%ld rps=%ld\n", (double)(t - t0) / 1e6, st.connected, st.refused, st.sent,
              st.answered, st.wrong, st.errors, st.answered - last_answered);
      last_answered = st.answered;
      next_progress += 1000000;
    }
    if (progress && next_progress < next)
      next = next_progress;
    int64_t wait = next - now_us();
    int timeout = wait <= 0 ? 0 : (int)((wait + 999) / 1000);
    int n = epoll_wait(ep, evs, maxev, timeout);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      perror("mclient: epoll_wait");
      return 2;
    }
    for (int i = 0; i < n; i++) {
      struct conn *c = evs[i].data.ptr;
      if (c->st != C_DONE)   // closed earlier in this batch
        on_event(c, evs[i].events);
    }
  }
  int64_t t_end = now_us();

  // The measured window: from t0 to the end of sending, or to the last
  // answer if that came later.
  int64_t stop = end_send < t_end ? end_send : t_end;
  if (st.last_answer > stop)
    stop = st.last_answer;
  double elapsed = (double)(stop - t0) / 1e6;
  if (elapsed <= 0)
    elapsed = 1e-6;

  int64_t *first = xmalloc(sizeof(int64_t) * (nrecords + 1));
  int64_t *done = xmalloc(sizeof(int64_t) * (nrecords + 1));
  struct stats all = compute(1, 0, first, done);
  printf("mclient: conns=%d connected=%ld refused=%ld sent=%ld answered=%ld wrong=%ld errors=%ld "
         "rps=%.1f p50_us=%lld p90_us=%lld p99_us=%lld max_us=%lld silent=%ld\n",
         opt.conns, st.connected, st.refused, st.sent, st.answered, st.wrong, st.errors,
         (double)st.answered / elapsed, (long long)all.p50, (long long)all.p90,
         (long long)all.p99, (long long)all.max, st.silent);

  // Priorities in use, ascending.
  int nprios = opt.prio >= 0 ? 1 : opt.prio_mod > 0 ? (opt.prio_mod < opt.conns ? opt.prio_mod : opt.conns) : 0;
  struct stats *per = xmalloc(sizeof *per * (size_t)(nprios + 1));
  for (int k = 0; k < nprios; k++) {
    int p = opt.prio >= 0 ? opt.prio : k;
    per[k] = compute(0, p, first, done);
    printf("mclient: prio=%d answered=%ld rps=%.1f p50_us=%lld p90_us=%lld p99_us=%lld max_us=%lld\n",
           p, per[k].answered, (double)per[k].answered / elapsed, (long long)per[k].p50,
           (long long)per[k].p90, (long long)per[k].p99, (long long)per[k].max);
  }
  fflush(stdout);

  int status = st.wrong == 0 && st.errors == 0 && (st.refused == 0 || opt.allow_refused) ? 0 : 1;
  if (opt.csv && write_csv(opt.csv) < 0)
    status = status ? status : 2;
  if (opt.json) {
    FILE *f = fopen(opt.json, "w");
    if (!f) {
      fprintf(stderr, "mclient: %s: %s\n", opt.json, strerror(errno));
      status = status ? status : 2;
    } else {
      fprintf(f, "{\"conns\": %d, \"connected\": %ld, \"refused\": %ld, \"sent\": %ld, "
              "\"wrong\": %ld, \"errors\": %ld, \"late\": %ld, \"untried\": %ld, \"silent\": %ld, \"n\": %d, "
              "\"interval_ms\": %g, \"duration_s\": %g, \"elapsed_s\": %.6f, \"base\": %s, ",
              opt.conns, st.connected, st.refused, st.sent, st.wrong, st.errors, st.late, st.untried,
              st.silent, opt.n,
              opt.interval_ms, opt.duration_s, elapsed, opt.base ? "true" : "false");
      json_stats(f, &all, elapsed);
      fprintf(f, ",\n \"prio\": [");
      for (int k = 0; k < nprios; k++) {
        fprintf(f, "%s\n  {\"prio\": %d, ", k ? "," : "", opt.prio >= 0 ? opt.prio : k);
        json_stats(f, &per[k], elapsed);
        fprintf(f, "}");
      }
      fprintf(f, "]}\n");
      if (fclose(f) != 0) {
        fprintf(stderr, "mclient: %s: %s\n", opt.json, strerror(errno));
        status = status ? status : 2;
      }
    }
  }

  for (int i = 0; i < opt.conns; i++) {
    free(conns[i].out);
    free(conns[i].in);
    free(conns[i].a);
  }
  free(conns);
  free(records);
  free(first);
  free(done);
  free(per);
  free(evs);
  close(ep);
  return status;
}
