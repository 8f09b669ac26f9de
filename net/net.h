// The network stack: lwIP 2.1.3 (raw API, NO_SYS = 1) over the virtio-net card.
//
// lwIP is not thread-safe, so every call into it, from any hart, is made with
// the network lock held (net_lock/net_unlock). lwIP's callbacks therefore run
// with it held too; they only update socket state and wake wait queues.
// Two kernel coroutines drive the stack (net/netif.c, net/net.c): the receive
// coroutine, woken by the card's interrupt, feeds frames to lwIP; the timer
// coroutine runs lwIP's timeouts when the next one is due.
//
// Address: static, for QEMU's user-mode network (the guest is 10.0.2.15/24,
// the gateway 10.0.2.2). Sockets: net/socket.h.
#ifndef NET_H
#define NET_H
#include <stdint.h>

#define NET_PRIO 0                   // the receive and timer coroutines: kernel priority

// Start the stack: lwIP, the interface, and its two coroutines. Idempotent; the
// boot job calls it (ktests that need the network call it themselves).
// 0, or -ENODEV when there is no card, -ENOMEM.
int net_start(void);
int net_started(void);

void net_lock(void);
void net_unlock(void);               // also re-arms the timer coroutine if lwIP asked for an earlier timeout

struct net_stats {
  uint64_t rx_frames, rx_dropped;    // frames given to lwIP / dropped (no memory, bad input)
  uint64_t tx_frames, tx_full;       // frames sent / refused because every card buffer was busy
  uint64_t timer_runs;
};
void net_get_stats(struct net_stats *st);

// net/netif.c
int netif_virtio_start(void);        // add the interface and start the receive coroutine
void netif_count_tx(int sent);      // net/net.c, with the lock held
void netif_count_rx(int accepted);

// net/loopif.c: loopback delivery (127.0.0.1, and the guest's own address)
int loopif_start(void);              // its coroutine; net_start calls it
uint64_t loopif_kick_locked(void);   // with the lock held: the coroutine to wake (a cid) if packets wait, else 0

#endif
