// mserver: a small host matrix-echo server (docs/PROTOCOL.md) built on
// the same protocol engine as the guest's matrixd (user/matrix_proto.c). It
// lets mclient and the engine be tested without QEMU. One thread, one epoll
// set, non-blocking sockets.
//
//   mserver [-H addr=127.0.0.1] [-p port=6201] [--max-n N] [--stall-ms MS] [--quiet]
//           [--reuseport]
//
// -p 0 picks a free port. Whatever the port, the first line on stdout is
// "mserver: listening on ADDR:PORT", so a script can start it on port 0 and
// read the port back without racing another process for it.
// --reuseport: several mservers may listen on one port, and the kernel spreads
// the connections over them (one per CPU: the Linux baseline of
// scripts/linux/init.c runs it so in the Linux baseline's guest).
// --corrupt (for tests, not in the usage text): the first answer to a request
// is wrong by one, so a test can check that mclient notices.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "matrix_proto.h"

#define OUT_HIGH (256 * 1024)   // stop reading a client while this much output is queued
#define READS_PER_EVENT 16      // then let other connections run

static struct {
  const char *host;
  int port, max_n, stall_ms, quiet, corrupt, reuseport;
} opt = {"127.0.0.1", 6201, MP_MAX_N_DEFAULT, 2000, 0, 0, 0};

struct sconn {
  int fd;
  struct mp_parser p;
  char *buf;                    // the parser's buffer
  int64_t *vals, *sq;           // the parser's values; the square
  char *ans;                    // one formatted answer
  char *out;                    // queued output: out[out_off, out_len)
  size_t out_len, out_off, out_cap;
  int64_t last_rx;              // for the stall timer
  int closing;                  // "close connection" or EOF: flush, then close
  int prio;
  int dead;                     // dropped, to be freed after this batch of events
  uint32_t events;
  struct sconn *prev, *next;
};

static int ep = -1, lfd = -1;
static struct sconn *all;        // every connection, for the stall timer
static volatile sig_atomic_t stop;
static long n_conns, n_requests, n_errors;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_events(struct sconn *c, uint32_t ev) {
  if (c->events == ev)
    return;
  struct epoll_event e = {.events = ev, .data.ptr = c};
  if (epoll_ctl(ep, c->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &e) < 0)
    perror("mserver: epoll_ctl");
  c->events = ev;
}

// Closes a connection. Its memory is freed after the current batch of epoll
// events (free_dropped), which may still name it: those events see c->dead.
static struct sconn *dropped;
static void drop(struct sconn *c) {
  close(c->fd);
  c->dead = 1;
  if (c->prev)
    c->prev->next = c->next;
  else
    all = c->next;
  if (c->next)
    c->next->prev = c->prev;
  c->next = dropped;
  dropped = c;
}

static void free_dropped(void) {
  while (dropped) {
    struct sconn *c = dropped;
    dropped = c->next;
    free(c->buf);
    free(c->vals);
    free(c->ans);
    free(c->out);
    free(c);
  }
}

// Reading is paused while a lot of output is queued (a client that sends
// without reading must not make us buffer without bound) and after the end.
static void update_events(struct sconn *c) {
  size_t pending = c->out_len - c->out_off;
  uint32_t ev = 0;
  if (!c->closing && pending < OUT_HIGH)
    ev |= EPOLLIN;
  if (pending)
    ev |= EPOLLOUT;
  set_events(c, ev ? ev : EPOLLOUT);   // never 0: an idle closing socket still reports errors
}

// Writes queued output. Returns -1 if the connection was dropped.
static int flush(struct sconn *c) {
  while (c->out_off < c->out_len) {
    ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
    if (n > 0)
      c->out_off += (size_t)n;
    else if (n < 0 && errno == EINTR)
      continue;
    else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      break;
    else {
      drop(c);   // reset or gone: nothing more to say to it
      return -1;
    }
  }
  if (c->out_off == c->out_len) {
    c->out_off = c->out_len = 0;
    if (c->closing) {
      drop(c);
      return -1;
    }
  }
  update_events(c);
  return 0;
}

static void queue(struct sconn *c, const char *s, size_t n) {
  if (c->out_off > 0 && c->out_off == c->out_len)
    c->out_off = c->out_len = 0;
  if (c->out_len + n > c->out_cap) {
    // Reclaim the written part first, then grow.
    memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
    c->out_len -= c->out_off;
    c->out_off = 0;
    if (c->out_len + n > c->out_cap) {
      size_t cap = c->out_cap * 2 > c->out_len + n ? c->out_cap * 2 : c->out_len + n;
      char *p = realloc(c->out, cap);
      if (!p) {
        fprintf(stderr, "mserver: out of memory\n");
        exit(1);
      }
      c->out = p;
      c->out_cap = cap;
    }
  }
  memcpy(c->out + c->out_len, s, n);
  c->out_len += n;
}

static void answer(struct sconn *c, const struct mp_msg *m) {
  size_t len = 0, cap = MP_ANSWER_BYTES(opt.max_n);
  switch (m->kind) {
  case MP_HANDSHAKE:
    c->prio = m->prio;
    len = mp_format_handshake(m->framed, c->ans, cap);
    break;
  case MP_REQUEST:
    n_requests++;
    mp_square(m->vals, m->n, c->sq);
    if (opt.corrupt) {
      opt.corrupt = 0;
      c->sq[0] += 1;
    }
    len = mp_format_matrix(c->sq, m->n, m->framed, c->ans, cap);
    break;
  case MP_ERROR:
    n_errors++;
    len = mp_format_error(m->error, m->framed, c->ans, cap);
    break;
  case MP_CLOSE:
    c->closing = 1;   // no reply; the rest of the input is ignored
    return;
  case MP_NEED_MORE:
    return;
  }
  queue(c, c->ans, len);
}

// Answers every complete message. more_pending: the socket may hold more.
static void process(struct sconn *c, int more_pending) {
  struct mp_msg m;
  while (!c->closing && mp_next(&c->p, more_pending, &m) != MP_NEED_MORE)
    answer(c, &m);
}

static void on_readable(struct sconn *c) {
  char tmp[16384];
  int unsure = 0;   // the last read filled its buffer: the socket may be empty now
  for (int i = 0; i < READS_PER_EVENT && !c->closing; i++) {
    if (c->out_len - c->out_off >= OUT_HIGH)
      break;        // flush() re-enables reading once the client has read
    size_t room = mp_room(&c->p);   // never 0 after process()
    size_t want = room < sizeof tmp ? room : sizeof tmp;
    ssize_t n = recv(c->fd, tmp, want, 0);
    if (n > 0) {
      c->last_rx = now_ms();
      mp_feed(&c->p, tmp, (size_t)n);
      // A short read emptied the socket: the base protocol's end of message.
      unsure = (size_t)n == want;
      process(c, unsure);
      if (!unsure)
        break;
    } else if (n == 0) {
      process(c, 0);   // an unframed request may end with the connection
      c->closing = 1;
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      process(c, 0);
      unsure = 0;
      break;
    } else {
      drop(c);
      return;
    }
  }
  // Stopped after a full read: if nothing more is queued, epoll will not
  // call again, so this is the end of an unframed message.
  int queued = 0;
  if (unsure && !c->closing && ioctl(c->fd, FIONREAD, &queued) == 0 && queued == 0)
    process(c, 0);
  flush(c);
}

static void on_accept(void) {
  for (;;) {
    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK && !opt.quiet)
        perror("mserver: accept");   // EMFILE: the client waits in the backlog
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sconn *c = calloc(1, sizeof *c);
    size_t cap = MP_REQ_BYTES(opt.max_n), nn = (size_t)opt.max_n * (size_t)opt.max_n;
    if (c) {
      c->buf = malloc(cap);
      c->vals = malloc(sizeof(int64_t) * nn * 2);
      c->ans = malloc(MP_ANSWER_BYTES(opt.max_n));
      c->out_cap = 4096;
      c->out = malloc(c->out_cap);
    }
    if (!c || !c->buf || !c->vals || !c->ans || !c->out) {
      if (c) {
        free(c->buf);
        free(c->vals);
        free(c->ans);
        free(c->out);
      }
      free(c);
      close(fd);
      continue;
    }
    c->fd = fd;
    c->sq = c->vals + nn;
    c->prio = -1;
    c->last_rx = now_ms();
    mp_init(&c->p, c->buf, cap, c->vals, opt.max_n);
    c->next = all;
    if (all)
      all->prev = c;
    all = c;
    n_conns++;
    set_events(c, EPOLLIN);
  }
}

// Connections quiet for stall_ms with a message half received get
// "incomplete request" (or whatever mp_stall says) and stay open.
static void check_stalls(void) {
  int64_t t = now_ms();
  struct sconn *next;
  for (struct sconn *c = all; c; c = next) {
    next = c->next;
    if (c->closing || mp_buffered(&c->p) == 0 || t - c->last_rx < opt.stall_ms)
      continue;
    struct mp_msg m;
    for (mp_stall(&c->p, &m); m.kind != MP_NEED_MORE && !c->closing; mp_stall(&c->p, &m))
      answer(c, &m);
    c->last_rx = t;
    flush(c);
  }
}

static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

static void usage(FILE *f) {
  fprintf(f, "usage: mserver [-H addr=127.0.0.1] [-p port=6201, 0 = any] [--max-n N=%d (1..%d)]\n"
             "               [--stall-ms MS=2000] [--quiet] [--reuseport]\n",
          MP_MAX_N_DEFAULT, MP_MAX_N_LIMIT);
}

int main(int argc, char **argv) {
  enum { O_MAXN = 256, O_STALL, O_QUIET, O_CORRUPT, O_REUSEPORT };
  static const struct option longs[] = {
    {"max-n", required_argument, NULL, O_MAXN}, {"stall-ms", required_argument, NULL, O_STALL},
    {"quiet", no_argument, NULL, O_QUIET},      {"corrupt", no_argument, NULL, O_CORRUPT},
    {"reuseport", no_argument, NULL, O_REUSEPORT},
    {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
  };
  int ch;
  while ((ch = getopt_long(argc, argv, "H:p:h", longs, NULL)) != -1) {
    switch (ch) {
    case 'H': opt.host = optarg; break;
    case 'p': opt.port = atoi(optarg); break;
    case O_MAXN: opt.max_n = atoi(optarg); break;
    case O_STALL: opt.stall_ms = atoi(optarg); break;
    case O_QUIET: opt.quiet = 1; break;
    case O_CORRUPT: opt.corrupt = 1; break;
    case O_REUSEPORT: opt.reuseport = 1; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind < argc || opt.port < 0 || opt.port > 65535 || opt.max_n < 1 ||
      opt.max_n > MP_MAX_N_LIMIT || opt.stall_ms < 1) {
    usage(stderr);
    return 2;
  }

  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;   // room for a connection flood
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa = {.sa_handler = on_signal};   // no SA_RESTART: epoll_wait returns
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)opt.port)};
  if (inet_pton(AF_INET, opt.host, &sin.sin_addr) != 1) {
    fprintf(stderr, "mserver: bad IPv4 address '%s'\n", opt.host);
    return 2;
  }
  lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
      (opt.reuseport && setsockopt(lfd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0) ||
      bind(lfd, (struct sockaddr *)&sin, sizeof sin) < 0 || listen(lfd, SOMAXCONN) < 0) {
    fprintf(stderr, "mserver: %s:%d: %s\n", opt.host, opt.port, strerror(errno));
    return 1;
  }
  socklen_t slen = sizeof sin;
  getsockname(lfd, (struct sockaddr *)&sin, &slen);
  printf("mserver: listening on %s:%d\n", opt.host, ntohs(sin.sin_port));
  fflush(stdout);

  ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event le = {.events = EPOLLIN, .data.ptr = NULL};
  if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &le) < 0) {
    perror("mserver: epoll");
    return 1;
  }
  struct epoll_event evs[256];
  int64_t next_stall_check = now_ms() + 100;
  while (!stop) {
    int n = epoll_wait(ep, evs, 256, 100);
    if (n < 0 && errno != EINTR) {
      perror("mserver: epoll_wait");
      break;
    }
    for (int i = 0; i < n; i++) {
      struct sconn *c = evs[i].data.ptr;
      if (!c) {
        on_accept();
        continue;
      }
      if (c->dead)   // dropped earlier in this batch
        continue;
      if (evs[i].events & EPOLLOUT) {
        if (flush(c) < 0)
          continue;
      }
      if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        if (c->closing) {
          if (evs[i].events & (EPOLLHUP | EPOLLERR))
            drop(c);
          continue;
        }
        on_readable(c);
      }
    }
    if (now_ms() >= next_stall_check) {
      check_stalls();
      next_stall_check = now_ms() + 100;
    }
    free_dropped();
  }

  if (!opt.quiet)
    fprintf(stderr, "mserver: %ld connections, %ld requests, %ld errors\n", n_conns, n_requests,
            n_errors);
  while (all)
    drop(all);
  free_dropped();
  close(lfd);
  close(ep);
  return 0;
}
