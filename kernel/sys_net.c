// The socket system calls (kernel/abi.h, docs/ABI.md) over net/socket.h.
//
// A call resolves its descriptor once and keeps a reference to the socket in
// sa->sock for all its attempts, so a call that waits keeps working on the
// socket it started with, and the socket outlives it even if the descriptor is
// closed meanwhile (the close wakes it, and it fails with -EBADF).
// The socket layer never waits; sock_wait below is the one place that does.
#include "sysargs.h"
#include "file.h"
#include "kco.h"
#include "socket.h"

// The socket behind descriptor a0, held in sa->sock (0 and *err if none).
static struct socket *arg_socket(struct proc *p, struct sysargs *sa, long *err) {
  if (sa->sock)
    return sa->sock;
  spin_lock(&p->lock);                 // close() clears slots under this lock
  struct file *f = fd_file(p, sa->a[0]);
  struct socket *s = f && f->type == F_SOCKET ? f->sock : 0;
  if (s)
    sock_get(s);
  spin_unlock(&p->lock);
  if (!s)
    *err = f ? -ENOTSOCK : -EBADF;
  sa->sock = s;
  return s;
}

// op found nothing to do. Without may_block: tell the caller where to wait
// (WOULD_BLOCK). With it: wait until the socket has news. 0 means try again.
static long sock_wait(struct proc *p, struct sysargs *sa, int may_block, enum sock_op op) {
  struct socket *s = sa->sock;
  if (!may_block) {
    sa->wq = sock_waitq(s);
    return WOULD_BLOCK;
  }
  KCO_WAIT_UNTIL(sock_waitq(s), p->killed || sock_ready(s, op));
  return p->killed ? -EINTR : 0;
}

long sys_socket(struct thread *t, struct sysargs *sa, int may_block) {
  struct proc *p = t->proc;
  (void)sa;
  (void)may_block;
  struct socket *s;
  int err = sock_create(&s);
  if (err)
    return err;
  struct file *f = file_socket(s);
  if (!f) {
    sock_close(s);
    return -ENOMEM;
  }
  int fd = fd_alloc(p, f);
  if (fd < 0)
    file_close(f);
  return fd;
}

long sys_bind(struct thread *t, struct sysargs *sa, int may_block) {
  (void)may_block;
  long err = 0;
  struct socket *s = arg_socket(t->proc, sa, &err);
  if (!s)
    return err;
  return (int64_t)sa->a[1] < 0 || sa->a[1] > 65535 ? -EINVAL : sock_bind(s, (int)sa->a[1]);
}

long sys_listen(struct thread *t, struct sysargs *sa, int may_block) {
  (void)may_block;
  long err = 0;
  struct socket *s = arg_socket(t->proc, sa, &err);
  if (!s)
    return err;
  int64_t backlog = (int64_t)sa->a[1];    // sock_listen clamps it; keep it in int range
  return sock_listen(s, backlog < 0 ? 0 : backlog > SOCK_BACKLOG_MAX ? SOCK_BACKLOG_MAX : (int)backlog);
}

long sys_accept(struct thread *t, struct sysargs *sa, int may_block) {
  struct proc *p = t->proc;
  long err = 0;
  struct socket *s = arg_socket(p, sa, &err);
  if (!s)
    return err;
  for (;;) {
    // A descriptor first, so that a connection taken off the queue is never
    // dropped for lack of one. Until the socket is in it, the file has none
    // (a call on that descriptor meanwhile gets -ENOTSOCK).
    struct file *f = file_socket(0);
    if (!f)
      return -ENOMEM;
    int fd = fd_alloc(p, f);
    if (fd < 0) {
      file_close(f);
      // The table is full: a connection that waits for a slot could wait
      // for ever, unseen. Refuse the next one (a reset) and say why.
      long r = sock_refuse(s);
      if (r == 0)
        return fd;
      if (r != -EAGAIN)
        return r;
      if ((r = sock_wait(p, sa, may_block, SOCK_ACCEPT)) != 0)
        return r;
      continue;
    }
    struct socket *c;
    long r = sock_accept(s, &c);
    if (r == 0) {
      f->sock = c;
      return fd;
    }
    fd_take(p, (uint64_t)fd);
    file_close(f);
    if (r != -EAGAIN)
      return r;
    if ((r = sock_wait(p, sa, may_block, SOCK_ACCEPT)) != 0)
      return r;
  }
}

// How an attempt of recv or send may wait for the network lock (net_run,
// net/net.h):
//   - may_block (a stackful kernel coroutine): it sleeps in the lock's queue;
//   - the first attempt, in the trap, of a KMODE_THREAD process (KTUT): it
//     only tries, and if the lock is held returns WOULD_BLOCK with nothing to
//     wait for, which gives the call to a stackful kernel coroutine
//     (syswork_start) that sleeps there instead; the switcher runs another
//     thread meanwhile. In that mode a call that waits becomes such a
//     coroutine anyway. (Two harts, docs/results/ab-handoff.md: KTUT served
//     more requests a second so, and KCUC and KCUT fewer: there a call's
//     continuation is a stackless coroutine or a parked thread, and a
//     stackful one woken on the other hart costs more than the spin.)
//   - anything else (the other modes' first attempts, stackless workers, the
//     KTUC poller): spins on its request.
static enum net_wait lock_wait(struct thread *t, struct sysargs *sa, int may_block) {
  if (may_block)
    return NET_BLOCK;
  if (sysargs_in_trap(t, sa) &&
      __atomic_load_n(&t->proc->kmode, __ATOMIC_RELAXED) == KMODE_THREAD)
    return NET_TRY;
  return NET_SPIN;
}

// recv and send share their checks and their waiting.
static long transfer(struct thread *t, struct sysargs *sa, int may_block, int is_send) {
  struct proc *p = t->proc;
  long err = 0;
  struct socket *s = arg_socket(p, sa, &err);
  if (!s)
    return err;
  long n = (long)sa->a[2];
  if (n < 0)
    return -EINVAL;
  if (n == 0)
    return 0;
  if (!user_range_ok(p, sa->a[1], (uint64_t)n, is_send ? PTE_R : PTE_W))
    return -EFAULT;
  enum net_wait how = lock_wait(t, sa, may_block);
  for (;;) {
    long r = is_send ? sock_send(s, p->pagetable, sa->a[1], n, how)
                     : sock_recv(s, p->pagetable, sa->a[1], n, how);
    if (r == SOCK_LOCK_BUSY) {   // (NET_TRY, in the trap)
      sa->wq = 0;                // nothing named to wait for: a stackful coroutine
      sa->deadline = 0;
      return WOULD_BLOCK;
    }
    if (r != -EAGAIN)
      return r;
    if ((r = sock_wait(p, sa, may_block, is_send ? SOCK_SEND : SOCK_RECV)) != 0)
      return r;
  }
}

long sys_recv(struct thread *t, struct sysargs *sa, int may_block) { return transfer(t, sa, may_block, 0); }
long sys_send(struct thread *t, struct sysargs *sa, int may_block) { return transfer(t, sa, may_block, 1); }

long sys_shutdown(struct thread *t, struct sysargs *sa, int may_block) {
  (void)may_block;
  long err = 0;
  struct socket *s = arg_socket(t->proc, sa, &err);
  if (!s)
    return err;
  return sa->a[1] > SHUT_RDWR ? -EINVAL : sock_shutdown(s, (int)sa->a[1]);
}

// connect(fd, ip, port): like accept, a call that starts something and then
// waits for it (the handshake) on the socket's queue, in every kernel mode.
// Arguments are checked before the socket's state (docs/ABI.md).
long sys_connect(struct thread *t, struct sysargs *sa, int may_block) {
  struct proc *p = t->proc;
  long err = 0;
  struct socket *s = arg_socket(p, sa, &err);
  if (!s)
    return err;
  uint32_t ip = (uint32_t)sa->a[1];       // 32-bit arguments: their low half (the ABI's rule)
  int32_t port = (int32_t)sa->a[2];
  if (port <= 0 || port > 65535)
    return -EINVAL;
  for (;;) {
    long r = sock_connect(s, ip, port);
    if (r != -EAGAIN)
      return r;
    if ((r = sock_wait(p, sa, may_block, SOCK_CONNECT)) != 0)
      return r;
  }
}
