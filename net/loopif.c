// Delivering loopback packets (net/net.h).
//
// With LWIP_NETIF_LOOPBACK, a packet sent to 127.0.0.1 (lwIP's loop interface)
// or to the guest's own address (the card's interface) is not sent anywhere:
// lwIP copies it onto the interface's loop queue, and with NO_SYS it stays
// there until someone calls netif_poll. That someone is a stackless kernel
// coroutine of its own, woken only when there is work: every net_unlock (and
// the timer coroutine, which unlocks by hand) asks loopif_kick_locked whether a
// queue has packets, and wakes the coroutine once per batch. So a connection
// over loopback costs no polling while idle, and a packet is delivered as soon
// as the call that queued it lets go of the network lock.
//
// The packets are delivered from the coroutine, never inline in the call that
// sent them: lwIP may be in the middle of a segment when it queues one (an ACK
// from tcp_input), and input into lwIP must not nest.
#include "net.h"
#include "kco.h"
#include "abi.h"
#include "lwip/netif.h"

static cid_t loop_cid;
static int kicked;                   // a wake is on its way; guarded by the network lock

static int loop_poll(void *arg) {
  (void)arg;
  net_lock();
  kicked = 0;                        // from here on, a new packet needs a new wake
  // Drains every loop queue, including packets queued by this very delivery
  // (the peer's SYN-ACK, ACK, echoed data): a handshake completes in one run.
  netif_poll_all();
  net_unlock();
  return CO_PENDING;
}

uint64_t loopif_kick_locked(void) {
  if (!loop_cid || kicked)
    return 0;
  struct netif *n;
  NETIF_FOREACH(n)
    if (n->loop_first) {
      kicked = 1;
      return loop_cid;
    }
  return 0;
}

int loopif_start(void) {
  int64_t cid = kco_spawn(loop_poll, 0, NET_PRIO);
  if (cid < 0)
    return -ENOMEM;
  net_lock();
  loop_cid = (cid_t)cid;
  net_unlock();
  return 0;
}
