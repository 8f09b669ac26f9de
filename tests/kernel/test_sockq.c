// recv and send for a stackless caller, queued behind a held network lock
// (net/socket.h SOCK_QUEUE and SOCK_DEFER; docs/ARCHITECTURE.md "The network
// lock"). The test holds the lock itself, so what waits and what runs is
// decided by the test, not by the timing of other harts: each call below
// would spin for ever if it did not queue. The socket is never connected,
// so every section's answer is -ENOTCONN and no user memory is touched (the
// copies are the same code as without queuing).
#include "ktest.h"
#include "abi.h"
#include "board.h"
#include "kco.h"
#include "net.h"
#include "riscv.h"
#include "socket.h"

// owner's answer once its section has run. Our unlock runs it, unless a
// caller on another hart (the stack's timer, say) queued for the lock in
// between: then the lock goes to that caller, whose unlock runs it a little
// later. So wait for it (a try that finds it not run yet answers -EAGAIN).
static long answer(struct socket *s, int send, void *owner) {
  uint64_t give_up = rdtime() + KTEST_PATIENCE_MS * (board.timebase_hz / 1000);
  long r;
  while ((r = (send ? sock_send : sock_recv)(s, 0, 0, 8, SOCK_QUEUE, owner)) == -EAGAIN &&
         rdtime() < give_up)
    kco_yield();
  return r;
}

static int dropped(struct socket *s, void *owner) {
  uint64_t give_up = rdtime() + KTEST_PATIENCE_MS * (board.timebase_hz / 1000);
  while (sock_drop_queued(s, owner) && rdtime() < give_up)
    kco_yield();
  return !sock_drop_queued(s, owner);
}

KTEST_NET(sockq_sections_wait_behind_a_held_lock_and_are_taken_once) {
  struct socket *s;
  KREQUIRE(sock_create(&s) == 0);
  int owner_a, owner_b;          // two calls' tokens (a call's own struct sysargs, in the kernel)
  struct sock_stats st0, st1;
  sock_get_stats(&st0);

  net_lock();
  // A stackless caller's send queues and answers -EAGAIN at once...
  long r1 = sock_send(s, 0, 0, 8, SOCK_QUEUE, &owner_a);
  // ... asked again before its section ran, the same: not queued twice.
  long r2 = sock_send(s, 0, 0, 8, SOCK_QUEUE, &owner_a);
  // The trap of an async call leaves it to its coroutine: nothing queued.
  long r3 = sock_recv(s, 0, 0, 8, SOCK_DEFER, 0);
  // The call may not end while its section waits.
  int busy = sock_drop_queued(s, &owner_a);
  net_unlock();                  // runs the queued section (see answer())
  sock_get_stats(&st1);
  KCHECK_EQ(r1, -EAGAIN);
  KCHECK_EQ(r2, -EAGAIN);
  KCHECK_EQ(r3, -EAGAIN);
  KCHECK_EQ(busy, 1);
  KCHECK_EQ(st1.xfer_queued, st0.xfer_queued + 1);
  KCHECK_EQ(st1.xfer_deferred, st0.xfer_deferred + 1);
  // Once the section has run, its owner's next attempt takes its answer.
  KCHECK_EQ(answer(s, 1, &owner_a), -ENOTCONN);

  // A call that ends (killed, or failed elsewhere) after its section ran
  // drops the answer, and the socket's record is free for the next caller.
  net_lock();
  long r4 = sock_recv(s, 0, 0, 8, SOCK_QUEUE, &owner_b);
  net_unlock();
  KCHECK_EQ(r4, -EAGAIN);
  KCHECK(dropped(s, &owner_b));
  net_lock();
  long r5 = sock_recv(s, 0, 0, 8, SOCK_QUEUE, &owner_a);
  net_unlock();
  KCHECK_EQ(r5, -EAGAIN);
  KCHECK_EQ(answer(s, 0, &owner_a), -ENOTCONN);
  KCHECK(dropped(s, &owner_a));
  sock_close(s);
}
