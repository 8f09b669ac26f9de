// conntest: outbound connections (connect) and the loopback interface, in
// every kernel mode.
//
// A server and a client in this one process talk over 127.0.0.1 (and over the
// guest's own address, looped on the card's interface): coroutines with async
// calls, and threads with synchronous ones. A closed port is refused at once;
// bad descriptors and arguments get their documented errors; a connect that is
// closed or killed while its SYN goes unanswered (127.0.0.2: routed to the
// loop interface, which drops it, as nothing has that address) ends and leaves
// nothing behind. Waits are for events (a counter, a completion), each with a
// generous safety net. `conntest timeout` (run under -icount, where the guest's
// 20 s pass quickly) waits for lwIP to give up on the SYN: -ETIMEDOUT.
// `conntest idle` (also under -icount) leaves connections idle long enough
// that lwIP's timers stop visiting them (net/patches/README.md), then checks
// that they still do all a connection does: data is answered, a FIN from
// either side is seen, and the timers still end what they must end when
// they are closed (TIME_WAIT, the FIN-WAIT-2 timeout). `conntest churn` (also
// under -icount) opens and closes waves of connections and reconnects on the
// same ports, checking that lwIP's hash of connections stays in step with its
// lists (see churn_test).
#include "ulib.h"
#include "cops.h"
#include "utest.h"

static const char *mode_name[] = { "kc", "kt", "poll" };
#define LOOPBACK IP4(127, 0, 0, 1)
#define BLACKHOLE IP4(127, 0, 0, 2)
#define SELF IP4(10, 0, 2, 15)
#define BIG 20000                          // more than a window: flow control on loopback

static char name_buf[64];
static const char *name(int mode, const char *what) {
  snprintf(name_buf, sizeof name_buf, "%s-%s", mode_name[mode], what);
  return name_buf;
}

static int listener(int port) {
  int s = socket();
  if (s < 0 || bind(s, port) < 0 || listen(s, 8) < 0)
    return -1;
  return s;
}

// Wait (a safety net of 30 s) until a kernel counter reaches want.
static long wait_kstat(int what, long want) {
  long v = kstat(what);
  for (int i = 0; i < 3000 && v != want; i++) {
    sleep(10);
    v = kstat(what);
  }
  return v;
}

// Transfers in one direction, through either call form.
static long xfer(int async, int is_send, int fd, char *buf, long n) {
  long done = 0;
  while (done < n) {
    long r = async ? cops_async(is_send ? SYS_send : SYS_recv, fd, (long)(buf + done), n - done)
                   : is_send ? send(fd, buf + done, n - done) : recv(fd, buf + done, n - done);
    if (r <= 0)
      return done ? done : r;
    done += r;
  }
  return done;
}

// The echo server: accept one connection, send back what arrives until the
// peer shuts down, then close. Async calls from a coroutine, or sync calls
// from a thread.
static volatile long server_result;
static volatile int server_done;
static cid_t main_cid;
static void serve(int lfd, int async) {
  static char buf[4096];
  long c = async ? cops_async(SYS_accept, lfd, 0, 0) : accept(lfd);
  long total = c < 0 ? c : 0;
  while (c >= 0) {
    long r = async ? cops_async(SYS_recv, c, (long)buf, sizeof buf) : recv((int)c, buf, sizeof buf);
    if (r <= 0 || xfer(async, 1, (int)c, buf, r) != r)
      break;
    total += r;
  }
  if (c >= 0)
    close((int)c);
  server_result = total;
  server_done = 1;
}
static void server_co(void *arg) {
  serve((int)(long)arg, 1);
  cops_wake(main_cid);
}
static int server_thread(void *arg) {
  serve((int)(long)arg, 0);
  return 0;
}

static long do_connect(int async, int fd, uint32_t ip, int port) {
  return async ? cops_async(SYS_connect, fd, (long)ip, port) : connect(fd, ip, port);
}

static long wait_kstat_ms(int what, long want, long ms);

// One echo session: connect, BIG bytes there and back, half-close, EOF.
static void echo(int mode, int async, uint32_t ip, int port, const char *what) {
  static char out[BIG], in[BIG];
  char n1[48];
  int lfd = listener(port);
  server_done = 0;
  server_result = 0;
  int tid = -1;
  if (async)
    cops_spawn_stackful(server_co, (void *)(long)lfd, COPS_MAIN_PRIO);
  else
    tid = uthread_create(server_thread, (void *)(long)lfd);
  int fd = socket();
  snprintf(n1, sizeof n1, "%s-connect", what);
  check(name(mode, n1), do_connect(async, fd, ip, port), 0);
  snprintf(n1, sizeof n1, "%s-connect-again", what);
  check(name(mode, n1), connect(fd, ip, port), -EISCONN);
  snprintf(n1, sizeof n1, "%s-bind-connected", what);
  check(name(mode, n1), bind(fd, 7000), -EINVAL);
  snprintf(n1, sizeof n1, "%s-listen-connected", what);
  check(name(mode, n1), listen(fd, 1), -EINVAL);
  for (int i = 0; i < BIG; i++)
    out[i] = (char)(i * 7 + mode);
  // In chunks that the windows hold: the echo server stops reading while its
  // answer waits for us to read, and we read only after sending the chunk.
  // Every third chunk and the last are small, each read in one call, so
  // that their window updates wait for a later section (net/socket.c,
  // "Receiving without the network lock") rather than being given at once
  // as a large read's are.
  int same = 1;
  long m;
  for (long off = 0, i = 0; off < BIG; off += m, i++) {
    long left = BIG - off;
    if (left <= 100 || i % 3 == 2)
      m = left < 100 ? left : 100;
    else
      m = left - 100 < 4000 ? left - 100 : 4000;   // (leaving a small last chunk)
    if (xfer(async, 1, fd, out + off, m) != m || xfer(async, 0, fd, in + off, m) != m)
      same = 0;
  }
  for (int i = 0; i < BIG && same; i++)
    same = in[i] == out[i];
  snprintf(n1, sizeof n1, "%s-echo-%d-bytes", what, BIG);
  check(name(mode, n1), same, 1);
  shutdown(fd, SHUT_WR);
  snprintf(n1, sizeof n1, "%s-eof", what);
  check(name(mode, n1), async ? cops_async(SYS_recv, fd, (long)in, 1) : recv(fd, in, 1), 0);
  if (async)
    while (!server_done)
      cops_block();
  else
    uthread_join(tid, 0);
  snprintf(n1, sizeof n1, "%s-server-echoed", what);
  check(name(mode, n1), server_result, BIG);
  close(fd);
  close(lfd);
  // Every byte read went back to lwIP's windows (receives that find data
  // leave that to the network lock's next section; the closes made some).
  snprintf(n1, sizeof n1, "%s-windows-given-back", what);
  check(name(mode, n1), wait_kstat_ms(KSTAT_NET_WINDOW_HELD, 0, 10000), 0);
  // And every byte sent reached lwIP (sends that found the network lock held
  // leave theirs to its holder's section end: net/socket.c).
  snprintf(n1, sizeof n1, "%s-sends-given-to-lwip", what);
  check(name(mode, n1), wait_kstat_ms(KSTAT_NET_SEND_HELD, 0, 10000), 0);
}

// connect waits on a SYN nobody answers; main closes the socket under it.
static volatile long conn_result;
static volatile int conn_done;
static void connector_co(void *arg) {
  conn_result = cops_async(SYS_connect, (long)arg, BLACKHOLE, 80);
  conn_done = 1;
  cops_wake(main_cid);
}
static int connector_thread(void *arg) {
  conn_result = connect((int)(long)arg, BLACKHOLE, 80);
  conn_done = 1;
  return 0;
}

static void close_mid_connect(int mode, int async) {
  long pcbs0 = kstat(KSTAT_TCP_PCBS), socks0 = kstat(KSTAT_SOCKETS);
  int fd = socket();
  conn_done = 0;
  int tid = -1;
  if (async) {
    cops_spawn_stackful(connector_co, (void *)(long)fd, COPS_MAIN_PRIO);
    cops_yield();                        // it runs until its connect waits
  } else
    tid = uthread_create(connector_thread, (void *)(long)fd);
  // The SYN has gone once the pcb is on lwIP's active list (a new socket's
  // pcb is not counted until then).
  check(name(mode, async ? "async-connect-in-progress" : "sync-connect-in-progress"),
        wait_kstat(KSTAT_TCP_PCBS, pcbs0 + 1), pcbs0 + 1);
  check(name(mode, async ? "async-connect-still-waiting" : "sync-connect-still-waiting"), conn_done, 0);
  close(fd);
  if (async)
    while (!conn_done)
      cops_block();
  else
    uthread_join(tid, 0);
  check(name(mode, async ? "async-connect-closed" : "sync-connect-closed"), conn_result, -EBADF);
  check(name(mode, async ? "async-closed-pcb-freed" : "sync-closed-pcb-freed"), kstat(KSTAT_TCP_PCBS), pcbs0);
  check(name(mode, async ? "async-closed-socket-freed" : "sync-closed-socket-freed"), kstat(KSTAT_SOCKETS), socks0);
}

static void refused(int mode) {
  int fd = socket();
  check(name(mode, "loopback-closed-port-refused"), connect(fd, LOOPBACK, 9), -ECONNREFUSED);
  check(name(mode, "refused-socket-spent"), connect(fd, LOOPBACK, 9), -ECONNREFUSED);
  check(name(mode, "refused-recv"), recv(fd, name_buf, 1), -ENOTCONN);
  close(fd);
  fd = socket();
  check(name(mode, "self-closed-port-refused"), cops_async(SYS_connect, fd, SELF, 9), -ECONNREFUSED);
  close(fd);
}

static void test_bad_arguments(void) {
  int p[2];
  pipe(p);
  check("connect-bad-fd", connect(999, LOOPBACK, 80), -EBADF);
  check("connect-negative-fd", connect(-1, LOOPBACK, 80), -EBADF);
  check("connect-nofile", connect(NOFILE, LOOPBACK, 80), -EBADF);
  check("connect-pipe", connect(p[0], LOOPBACK, 80), -ENOTSOCK);
  check("connect-console", connect(1, LOOPBACK, 80), -ENOTSOCK);
  check("async-connect-pipe", cops_async(SYS_connect, p[1], LOOPBACK, 80), -ENOTSOCK);
  int s = socket();
  check("connect-port-0", connect(s, LOOPBACK, 0), -EINVAL);
  check("connect-port-65536", connect(s, LOOPBACK, 65536), -EINVAL);
  check("connect-port-negative", connect(s, LOOPBACK, -80), -EINVAL);
  check("connect-any-address", connect(s, 0, 80), -ENETUNREACH);
  check("connect-broadcast", connect(s, IP4(255, 255, 255, 255), 80), -ENETUNREACH);
  check("connect-multicast", connect(s, IP4(224, 0, 0, 1), 80), -ENETUNREACH);
  check("connect-after-bad-args-works", connect(s, LOOPBACK, 9), -ECONNREFUSED);
  close(s);
  s = listener(7001);
  check("connect-listener", connect(s, LOOPBACK, 7001), -EINVAL);
  close(s);
  check("connect-closed-fd", connect(s, LOOPBACK, 7001), -EBADF);
  close(p[0]);
  close(p[1]);
}

// A child waits in connect (sync, and async in a coroutine) until killed.
static int child(int mode) {
  setkmode(mode);
  int a = socket(), b = socket();
  cops_spawn_stackful(connector_co, (void *)(long)a, COPS_MAIN_PRIO);
  cops_yield();                          // it runs until its connect waits
  connect(b, BLACKHOLE, 81);             // never returns: the parent kills us
  return 2;
}

static void kill_mid_connect(int mode) {
  char arg[2] = { (char)('0' + mode), 0 };
  const char *argv[] = { "conntest", "child", arg, 0 };
  long pcbs0 = kstat(KSTAT_TCP_PCBS), socks0 = kstat(KSTAT_SOCKETS);
  int pid = spawn("conntest", argv);
  check(name(mode, "child-connecting"), wait_kstat(KSTAT_TCP_PCBS, pcbs0 + 2), pcbs0 + 2);
  kill(pid);
  int status = 0;
  wait(pid, &status);
  check(name(mode, "child-killed"), status, -1);
  check(name(mode, "child-sockets-freed"), kstat(KSTAT_SOCKETS), socks0);
  check(name(mode, "child-pcbs-freed"), kstat(KSTAT_TCP_PCBS), pcbs0);
}

// Wait until a kernel counter reaches want, for ms of guest time at most.
static long wait_kstat_ms(int what, long want, long ms) {
  long v = kstat(what);
  for (long t = 0; t < ms && v != want; t += 10) {
    sleep(10);
    v = kstat(what);
  }
  return v;
}

static int idle_pair(int l, int *c, int *s) {
  char buf[4];
  *c = socket();
  if (*c < 0 || connect(*c, LOOPBACK, 7200) != 0 || (*s = accept(l)) < 0)
    return 0;
  return send(*c, "ping", 4) == 4 && xfer(0, 0, *s, buf, 4) == 4 && send(*s, "pong", 4) == 4 &&
         xfer(0, 0, *c, buf, 4) == 4 && memcmp(buf, "pong", 4) == 0;
}

// The server shuts down its sending side, then sees the client's FIN: its
// pcb goes to TIME_WAIT while its socket is still open, and lwIP frees it at
// TIME_WAIT's end without a word to the socket. Closing that socket later
// must not touch the freed pcb, whose memory new connections take first (a
// kernel that did closed or reset one of them, and crashed once out of
// memory, where lwIP ends TIME_WAIT early for new connections).
static void time_wait_under_open_socket(int l, long pcbs0) {
  int c, s, c2, s2;
  char buf[8];
  check("tw-set-up", idle_pair(l, &c, &s), 1);
  check("tw-shutdown", shutdown(s, SHUT_WR), 0);
  check("tw-client-sees-eof", recv(c, buf, 1), 0);
  close(c);
  check("tw-server-sees-eof", recv(s, buf, 1), 0);
  check("tw-pcbs-freed-socket-open", wait_kstat_ms(KSTAT_TCP_PCBS, pcbs0, 60000), pcbs0);
  check("tw-new-pair", idle_pair(l, &c2, &s2), 1);
  check("tw-close-spent-socket", close(s), 0);
  check("tw-new-pair-still-talks", send(c2, "after", 5) == 5 && xfer(0, 0, s2, buf, 5) == 5 &&
        send(s2, buf, 5) == 5 && xfer(0, 0, c2, buf, 5) == 5 && memcmp(buf, "after", 5) == 0, 1);
  check("tw-new-pair-no-eof", send(s2, "x", 1) == 1 && xfer(0, 0, c2, buf, 1) == 1, 1);
  close(c2);
  close(s2);
  check("tw-all-pcbs-freed", wait_kstat_ms(KSTAT_TCP_PCBS, pcbs0, 60000), pcbs0);
}

static void idle_test(void) {
  enum { PAIRS = 4 };
  int l = listener(7200), c[PAIRS], s[PAIRS], ok = l >= 0;
  long pcbs0 = kstat(KSTAT_TCP_PCBS);
  char buf[8];
  for (int i = 0; i < PAIRS && ok; i++)
    ok = idle_pair(l, &c[i], &s[i]);
  check("idle-set-up", ok, 1);
  if (!ok)
    return;
  // 3 s: six slow timer ticks and twelve fast ones with nothing to do
  sleep(3000);
  // a request and its answer on a connection that was idle
  check("idle-data-answered", send(c[0], "again", 5) == 5 && xfer(0, 0, s[0], buf, 5) == 5 &&
        send(s[0], buf, 5) == 5 && xfer(0, 0, c[0], buf, 5) == 5 && memcmp(buf, "again", 5) == 0, 1);
  // a FIN from the client, then from the server; and the other way round
  close(c[1]);
  check("idle-client-fin-seen", recv(s[1], buf, 1), 0);
  close(s[1]);
  close(s[2]);
  check("idle-server-fin-seen", recv(c[2], buf, 1), 0);
  close(c[2]);
  // the side that closed first waits in TIME_WAIT (4 s), then goes; both
  // pairs' pcbs must be gone (a minute of guest time at most: a safety net)
  check("idle-time-wait-expires", wait_kstat_ms(KSTAT_TCP_PCBS, pcbs0 + 4, 60000), pcbs0 + 4);
  // The client closes, the server does not: the client's pcb sits in
  // FIN-WAIT-2 until lwIP's timeout (20 s) removes it, and the server's,
  // idle in CLOSE_WAIT all that while, stays.
  close(c[3]);
  check("idle-fin-wait-2-times-out", wait_kstat_ms(KSTAT_TCP_PCBS, pcbs0 + 3, 60000), pcbs0 + 3);
  // Its close still sends a FIN (a reset answers it: the peer is gone).
  close(s[3]);
  close(c[0]);
  close(s[0]);
  check("idle-all-pcbs-freed", wait_kstat_ms(KSTAT_TCP_PCBS, pcbs0, 60000), pcbs0);
  time_wait_under_open_socket(l, pcbs0);
  close(l);
}

// conntest churn: lwIP finds the connection of a segment through a hash of
// the four endpoints (net/patches/0002-tcp-pcb-hash.patch), which must follow
// every pcb into and out of lwIP's lists. Waves of CHURN connections over
// loopback, opened one after another, all talking in an order unlike the
// opening one, then closed in yet another order by the client, by the server
// or by a reset (so pcbs of either side go through TIME_WAIT, or are killed
// at once), the open ones still talking; each wave opens while the last
// one's TIME_WAIT pcbs are still there (their ports must not be chosen
// again). Then reconnects from the same local ports: refused while this
// side's old connection is in TIME_WAIT, through the other side's TIME_WAIT
// pcb while that one is, and answered once they have gone. After each step
// the kernel checks the hash against the lists (KSTAT_TCP_HASH_BAD: 0):
// every active and TIME_WAIT pcb found by its endpoints, as many pcbs in the
// chains as on the lists, the users of each ephemeral port counted. Run
// under -icount: the TIME_WAIT periods and SYN retransmissions pass in guest
// time.
enum { CHURN = 200, CHURN_WAVES = 3, CHURN_SAME = 8, CHURN_PORT = 7300, CHURN_LPORT = 7400 };
static int cc[CHURN], cs[CHURN];

// One round trip on a pair: 8 bytes from the client, echoed by the server.
static int talk(int c, int s, int tag) {
  char out[9], in[8];
  snprintf(out, sizeof out, "%08d", tag);
  return send(c, out, 8) == 8 && xfer(0, 0, s, in, 8) == 8 && send(s, in, 8) == 8 &&
         xfer(0, 0, c, in, 8) == 8 && memcmp(in, out, 8) == 0;
}

// Connect from local port lport (0: lwIP picks one) and accept: 0, or the
// error of bind, connect or accept (the client socket is closed then).
static long open_pair(int l, int lport, int *c, int *s) {
  *s = -1;
  *c = socket();
  long r = *c < 0 ? *c : lport ? bind(*c, lport) : 0;
  if (r == 0)
    r = connect(*c, LOOPBACK, CHURN_PORT);
  if (r == 0) {
    *s = accept(l);
    r = *s < 0 ? *s : 0;
  }
  if (r != 0 && *c >= 0)
    close(*c);
  return r;
}

enum { CLIENT_FIRST, SERVER_FIRST, RESET };
// Close a pair: the client first (its pcb ends in TIME_WAIT), the server
// first (the server's does), or the server with a byte unread, which resets
// the connection (both pcbs go at once). 1 if the peer saw it as it should.
static int close_pair(int c, int s, int how) {
  char buf[2];
  int seen;
  if (how == CLIENT_FIRST) {
    close(c);
    seen = recv(s, buf, 1) == 0;
    close(s);
  } else if (how == SERVER_FIRST) {
    close(s);
    seen = recv(c, buf, 1) == 0;
    close(c);
  } else {
    // both bytes come in one segment: once one is read, the other waits
    seen = send(c, "xy", 2) == 2 && xfer(0, 0, s, buf, 1) == 1;
    close(s);
    seen = seen && recv(c, buf, 1) == -ECONNRESET;
    close(c);
  }
  return seen;
}

// A connection from each of CHURN_SAME fixed local ports: talk, then close
// as how says. 1 if all went as it should.
static int same_ports(int l, int how) {
  int ok = 1;
  for (int i = 0; i < CHURN_SAME && ok; i++)
    ok = open_pair(l, CHURN_LPORT + i, &cc[i], &cs[i]) == 0 && talk(cc[i], cs[i], i) &&
         close_pair(cc[i], cs[i], how);
  return ok;
}

static void churn_name(char *buf, int n, const char *what, int wave) {
  snprintf(buf, n, "churn-wave%d-%s", wave, what);
}

static void churn_test(void) {
  char n1[48];
  int l = listener(CHURN_PORT), ok;
  long pcbs0 = kstat(KSTAT_TCP_PCBS);
  check("churn-listen", l >= 0, 1);
  for (int w = 0; w < CHURN_WAVES; w++) {
    ok = 1;
    for (int i = 0; i < CHURN && ok; i++)
      ok = open_pair(l, 0, &cc[i], &cs[i]) == 0;
    churn_name(n1, sizeof n1, "open", w);
    check(n1, ok, 1);
    if (!ok)
      return;
    churn_name(n1, sizeof n1, "hashed-open", w);
    check(n1, kstat(KSTAT_TCP_HASH_BAD), 0);
    // 97 and 61 are prime to CHURN: each k * p % CHURN is a permutation
    ok = 1;
    for (int k = 0; k < CHURN; k++) {
      int i = k * 97 % CHURN;
      ok &= talk(cc[i], cs[i], w * CHURN + i);
    }
    churn_name(n1, sizeof n1, "all-talk", w);
    check(n1, ok, 1);
    int closed = 1, talking = 1;
    for (int k = 0; k < CHURN; k++) {
      int i = k * 61 % CHURN, next = (k + 1) * 61 % CHURN;
      closed &= close_pair(cc[i], cs[i], (i + w) % 3);
      if (k + 1 < CHURN)
        talking &= talk(cc[next], cs[next], k);
    }
    churn_name(n1, sizeof n1, "closed", w);
    check(n1, closed, 1);
    churn_name(n1, sizeof n1, "open-ones-talk-while-closing", w);
    check(n1, talking, 1);
    churn_name(n1, sizeof n1, "hashed-closed", w);
    check(n1, kstat(KSTAT_TCP_HASH_BAD), 0);
  }
  check("churn-time-wait-over", wait_kstat_ms(KSTAT_TCP_PCBS, pcbs0, 60000), pcbs0);

  // The same local ports again, this side's old connection in TIME_WAIT:
  // tcp_connect finds it by its endpoints and refuses.
  check("churn-same-port-first", same_ports(l, CLIENT_FIRST), 1);
  int refused = 0;
  for (int i = 0; i < CHURN_SAME; i++)
    refused += open_pair(l, CHURN_LPORT + i, &cc[i], &cs[i]) == -EADDRINUSE;
  check("churn-same-port-refused-in-time-wait", refused, CHURN_SAME);
  check("churn-same-port-hashed", kstat(KSTAT_TCP_HASH_BAD), 0);
  check("churn-same-port-time-wait-over", wait_kstat_ms(KSTAT_TCP_PCBS, pcbs0, 60000), pcbs0);
  check("churn-same-port-after-time-wait", same_ports(l, SERVER_FIRST), 1);
  // Now the server's pcbs are in TIME_WAIT with these endpoints: a new SYN
  // from the same port meets one (it answers with an ACK, or a reset if the
  // SYN falls in its window), and the client tries again until it has gone
  // and the listener takes the SYN. 100 tries a port: a safety net.
  ok = 1;
  int retried = 0;
  for (int i = 0; i < CHURN_SAME && ok; i++) {
    long r = -1;
    for (int t = 0; t < 100 && r != 0; t++) {
      r = open_pair(l, CHURN_LPORT + i, &cc[i], &cs[i]);
      if (r != 0) {
        retried++;
        sleep(100);
      }
    }
    ok = r == 0 && talk(cc[i], cs[i], i);
  }
  check("churn-same-port-through-peer-time-wait", ok, 1);
  printf("conntest: churn: %d connects from a port whose old connection the server held "
         "in TIME_WAIT failed and were tried again\n", retried);
  check("churn-same-port-hashed-again", kstat(KSTAT_TCP_HASH_BAD), 0);
  for (int i = 0; ok && i < CHURN_SAME; i++)
    ok = close_pair(cc[i], cs[i], i % 3);
  check("churn-same-port-closed", ok, 1);
  close(l);
  check("churn-all-pcbs-freed", wait_kstat_ms(KSTAT_TCP_PCBS, 0, 60000), 0);
}

// The network stack's timer coroutine sleeps until lwIP's next timeout is
// due: a connection's traffic, which schedules no earlier one, must not make
// it run. (It did: net/net.c, next_deadline.)
// The bound follows the time the talk took (about 200 ms), not the host's
// speed: lwIP's quickest timer is TCP's, every 250 ms while a connection
// lives. (The old wake ran it 22 and 45 times in 200 ms on one and two
// harts; now once.)
static void timer_sleeps_through_traffic(void) {
  enum { TALKS = 500 };
  int l = listener(CHURN_PORT), c = -1, s = -1;
  int ok = l >= 0 && open_pair(l, 0, &c, &s) == 0;
  long runs0 = kstat(KSTAT_NET_TIMER_RUNS), t0 = uptime();
  for (int i = 0; i < TALKS && ok; i++) {
    ok = talk(c, s, i);
    // 370 us on QEMU's virt board (rdtime at 10 MHz): not a divisor of a
    // millisecond, so the calls fall at every fraction of one.
    for (uint64_t until = rdtime() + 3700; rdtime() < until;)
      ;
  }
  long runs = kstat(KSTAT_NET_TIMER_RUNS) - runs0, ms = uptime() - t0;
  check("timer-talk", ok, 1);
  check("timer-sleeps-through-traffic", runs <= 2 + ms / 100, 1);
  if (runs > 2 + ms / 100)
    printf("conntest: the network timer ran %ld times in %ld ms of talk\n", runs, ms);
  close(c);
  close(s);
  close(l);
}

static int nothing(void *arg) {
  (void)arg;
  return 0;
}

int main(int argc, char **argv) {
  utest_prog = "conntest";
  if (argc > 2 && strcmp(argv[1], "child") == 0)
    return child(atoi(argv[2]));
  main_cid = cops_current();
  if (argc > 1 && strcmp(argv[1], "timeout") == 0) {
    int fd = socket();
    check("unanswered-syn-times-out", connect(fd, BLACKHOLE, 80), -ETIMEDOUT);
    close(fd);
    check("timed-out-pcbs-freed", kstat(KSTAT_TCP_PCBS), 0);
    return utest_summary();
  }
  if (argc > 1 && strcmp(argv[1], "churn") == 0) {
    churn_test();
    check("churn-sockets-freed", kstat(KSTAT_SOCKETS), 0);
    return utest_summary();
  }
  if (argc > 1 && strcmp(argv[1], "idle") == 0) {
    idle_test();
    check("idle-sockets-freed", kstat(KSTAT_SOCKETS), 0);
    return utest_summary();
  }
  // The first socket starts the network stack, which allocates for good; so
  // do the first async call that waits in KMODE_POLLER (the process's polling
  // thread stays until it exits) and the first second thread (the process's
  // thread table grows once). All of that before the baseline.
  close(socket());
  setkmode(KMODE_POLLER);
  cops_async(SYS_sleep, 1, 0, 0);
  setkmode(KMODE_COROUTINE);
  uthread_join(uthread_create(nothing, 0), 0);
  long objs0, bytes0;
  utest_kmalloc(&objs0, &bytes0);
  test_bad_arguments();
  for (int mode = KMODE_COROUTINE; mode <= KMODE_POLLER; mode++) {
    setkmode(mode);
    echo(mode, 1, LOOPBACK, 7100 + mode, "co-loopback");
    echo(mode, 0, LOOPBACK, 7110 + mode, "thread-loopback");
    echo(mode, 1, SELF, 7120 + mode, "co-self");
    refused(mode);
    close_mid_connect(mode, 1);
    close_mid_connect(mode, 0);
    kill_mid_connect(mode);
  }
  setkmode(KMODE_COROUTINE);
  timer_sleeps_through_traffic();
  check("no-sockets-left", kstat(KSTAT_SOCKETS), 0);
  // Closed connections linger in TIME_WAIT (4 s): wait for them to go.
  check("no-pcbs-left", wait_kstat(KSTAT_TCP_PCBS, 0), 0);
  utest_check_kmalloc_baseline(objs0, bytes0);
  // Run under bootargs netlock=busy (make test), where every try of the lock
  // fails: the sends that fit went without it.
  if (argc > 1 && strcmp(argv[1], "busy") == 0)
    check("sends-left-to-the-lock-holder", kstat(KSTAT_NET_SENDS_LATER) > 0, 1);
  return utest_summary();
}
