// socktest: the socket system calls without a peer, in every kernel mode.
//
// Bad arguments get their documented errors; a call waiting in accept ends
// with -EBADF when another coroutine or thread closes the socket; a process
// killed while it waits in accept frees its sockets; and nothing leaks. Data
// transfer needs a peer: scripts/nettest.sh drives that from the host.
#include "ulib.h"
#include "cops.h"
#include "utest.h"

static const char *mode_name[] = { "kc", "kt", "poll" };

static void test_bad_arguments(void) {
  int p[2];
  pipe(p);
  check("setkmode-negative", setkmode(-1), -EINVAL);
  check("setkmode-too-big", setkmode(3), -EINVAL);
  check("bind-bad-fd", bind(999, 80), -EBADF);
  check("bind-negative-fd", bind(-1, 80), -EBADF);
  check("bind-pipe", bind(p[0], 80), -ENOTSOCK);
  check("bind-console", bind(0, 80), -ENOTSOCK);
  check("listen-pipe", listen(p[1], 1), -ENOTSOCK);
  check("accept-pipe", accept(p[0]), -ENOTSOCK);
  check("recv-bad-fd", recv(77, 0, 1), -EBADF);
  check("send-pipe", send(p[1], "x", 1), -ENOTSOCK);
  check("shutdown-pipe", shutdown(p[0], SHUT_RD), -ENOTSOCK);
  int s = socket();
  check("socket-fd", s >= 3, 1);
  check("bind-port-0", bind(s, 0), -EINVAL);
  check("bind-port-65536", bind(s, 65536), -EINVAL);
  check("bind-port-negative", bind(s, -5), -EINVAL);
  check("listen-unbound", listen(s, 4), -EINVAL);
  check("accept-unbound", accept(s), -EINVAL);
  check("recv-unconnected", recv(s, p, 4), -ENOTCONN);
  check("send-unconnected", send(s, "abc", 3), -ENOTCONN);
  check("shutdown-bad-how", shutdown(s, 7), -EINVAL);
  check("shutdown-unconnected", shutdown(s, SHUT_WR), -ENOTCONN);
  check("recv-bad-buffer", recv(s, (void *)8, 4), -EFAULT);
  check("send-kernel-buffer", send(s, (void *)0x80200000UL, 4), -EFAULT);
  check("recv-negative-length", recv(s, p, -1), -EINVAL);
  check("recv-zero-length", recv(s, p, 0), 0);
  check("bind-ok", bind(s, 8080), 0);
  check("bind-twice", bind(s, 8081), -EINVAL);
  int s2 = socket();
  check("bind-in-use", bind(s2, 8080), -EADDRINUSE);
  check("listen-ok", listen(s, 4), 0);
  check("listen-twice", listen(s, 4), -EINVAL);
  check("recv-listener", recv(s, p, 4), -ENOTCONN);
  check("read-listener", read(s, p, 4), -ENOTCONN);
  check("write-listener", write(s, "x", 1), -ENOTCONN);
  check("async-socket-is-not-async", cops_async(SYS_socket, 0, 0, 0), -ENOSYS);
  check("close-listener", close(s), 0);
  check("close-other", close(s2), 0);
  check("closed-fd", accept(s), -EBADF);
  close(p[0]);
  close(p[1]);
}

// A coroutine waits in an async accept; main closes the listener under it.
static volatile long accept_result;
static volatile int accept_done;
static cid_t main_cid;
static void acceptor(void *arg) {
  accept_result = cops_async(SYS_accept, (long)arg, 0, 0);
  accept_done = 1;
  cops_wake(main_cid);
}

static int thread_accept(void *arg) {
  accept_result = accept((int)(long)arg);
  accept_done = 1;
  return 0;
}

static int listener(int port) {
  int s = socket();
  if (s < 0 || bind(s, port) < 0 || listen(s, 8) < 0)
    return -1;
  return s;
}

static void test_close_wakes(int mode) {
  char name[64];
  setkmode(mode);
  int s = listener(8090 + mode);
  accept_done = 0;
  accept_result = 0;
  cops_spawn_stackful(acceptor, (void *)(long)s, 3);
  sleep(20);                             // let it reach the kernel and wait
  snprintf(name, sizeof name, "%s-async-accept-waits", mode_name[mode]);
  check(name, accept_done, 0);
  close(s);
  while (!accept_done)
    cops_block();
  snprintf(name, sizeof name, "%s-async-accept-closed", mode_name[mode]);
  check(name, accept_result, -EBADF);

  // The same with a synchronous accept in a second thread.
  s = listener(8095 + mode);
  accept_done = 0;
  int tid = uthread_create(thread_accept, (void *)(long)s);
  sleep(20);
  snprintf(name, sizeof name, "%s-sync-accept-waits", mode_name[mode]);
  check(name, accept_done, 0);
  close(s);
  int status = -1;
  uthread_join(tid, &status);
  snprintf(name, sizeof name, "%s-sync-accept-closed", mode_name[mode]);
  check(name, accept_result, -EBADF);
}

// A child listens and waits in accept (async and sync) until it is killed.
static int child(int mode) {
  setkmode(mode);
  int s = listener(8100);
  int s2 = listener(8101);
  if (s < 0 || s2 < 0)
    return 1;
  cops_spawn_stackful(acceptor, (void *)(long)s, 3);
  accept(s2);                            // never returns: the parent kills us
  return 2;
}

static void test_kill_frees(int mode) {
  char name[64], arg[4] = { (char)('0' + mode), 0 };
  const char *argv[] = { "socktest", "child", arg, 0 };
  long socks0 = kstat(KSTAT_SOCKETS);
  int pid = spawn("socktest", argv);
  for (int i = 0; i < 3000 && kstat(KSTAT_SOCKETS) < socks0 + 2; i++)   // 30 s at most
    sleep(10);
  sleep(20);
  snprintf(name, sizeof name, "%s-child-listening", mode_name[mode]);
  check(name, kstat(KSTAT_SOCKETS), socks0 + 2);
  kill(pid);
  int status = 0;
  wait(pid, &status);
  snprintf(name, sizeof name, "%s-child-killed", mode_name[mode]);
  check(name, status, -1);
  snprintf(name, sizeof name, "%s-child-sockets-freed", mode_name[mode]);
  check(name, kstat(KSTAT_SOCKETS), socks0);
}

// Many sockets: the descriptor table fills before anything breaks, and
// closing them all returns every byte.
static void test_many(void) {
  static int fds[NOFILE];
  int n = 0, r;
  while (n < NOFILE && (r = socket()) >= 0)
    fds[n++] = r;
  check("many-sockets-until-emfile", r, -EMFILE);
  check("many-sockets-count", n, NOFILE - 3);
  for (int i = 0; i < n; i++)
    close(fds[i]);
  check("many-sockets-closed", kstat(KSTAT_SOCKETS), 0);
}

int main(int argc, char **argv) {
  utest_prog = "socktest";
  if (argc > 2 && strcmp(argv[1], "child") == 0)
    return child(atoi(argv[2]));
  main_cid = cops_current();
  // The first socket starts the network stack, which allocates for good: take
  // the baseline after that, with the machine at rest (KSTAT_QUIET, as in
  // threadtest: init may not have blocked in its wait yet).
  close(socket());
  long objs0, bytes0;
  utest_kmalloc(&objs0, &bytes0);
  test_bad_arguments();
  for (int mode = KMODE_COROUTINE; mode <= KMODE_POLLER; mode++) {
    test_close_wakes(mode);
    test_kill_frees(mode);
  }
  setkmode(KMODE_COROUTINE);
  test_many();
  check("no-sockets-left", kstat(KSTAT_SOCKETS), 0);
  utest_check_kmalloc_baseline(objs0, bytes0);
  return utest_summary();
}
