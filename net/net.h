// The network stack: lwIP 2.1.3 (raw API, NO_SYS = 1) over the virtio-net card.
//
// lwIP is not thread-safe, so every call into it, from any hart, is a
// critical section of the network lock (net/netlock.c: a CES mutex). lwIP's
// callbacks therefore run with it held too; they only update socket state and
// wake wait queues. A section must not block, and must not care which hart or
// coroutine runs it: under contention another hart may run it for its caller.
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

// net/netlock.c. Three ways to run a section; every one ends with
// net_section_end (below).
//  - net_lock/net_unlock: the caller runs the code in between itself. If the
//    lock is held it spins until it is handed the lock; fine anywhere (also
//    with a spinlock held, or inside a KCO_WAIT_UNTIL condition).
//  - net_run(fn, arg, how): fn(arg) as a request. Under contention, by how:
//      NET_BLOCK  the caller (a stackful coroutine that holds no spinlock
//                 and is in no wait's condition) sleeps while the holder runs
//                 fn, and is woken on another hart;
//      NET_TRY    nothing is done, and net_run returns 0: the caller hands
//                 its work to somewhere it may sleep (a KMODE_THREAD system
//                 call's first attempt, to a stackful kernel coroutine:
//                 kernel/sys_net.c), or to the lock's holder (a send's
//                 bytes: net/socket.c);
//      NET_SPIN   the caller spins on its request.
//    1 once fn has run.
//  - net_submit/net_poll: the same for a stackless coroutine: 1 if fn has
//    run; 0: return CO_PENDING, and when woken call net_poll (1 once fn has
//    run). r must stay valid until then.
#include "ces.h"
struct net_req {
  struct ces_node node;
  void (*fn)(void *);
  void *arg;
};
void net_lock(void);
void net_unlock(void);
// Work waits for a section (net/socket.c's later list): run one now if the
// lock is free; if it is held, its holder runs one or, past its last section,
// calls this itself when it lets the lock go.
void net_later(void);
enum net_wait { NET_SPIN, NET_BLOCK, NET_TRY };
int net_run(void (*fn)(void *), void *arg, enum net_wait how);
int net_submit(struct net_req *r, void (*fn)(void *), void *arg);
int net_poll(struct net_req *r);
void net_lock_use_spinlock(int on);  // bootargs netlock=spin: a plain spinlock, as before
int net_lock_is_spinlock(void);
// bootargs netlock=busy (tests): every NET_TRY reports the lock held, so that
// every recv and send that tries takes the way around it.
void net_lock_tries_fail(int on);
// bootargs netlock=nohandoff (for comparison): NET_TRY spins as NET_SPIN, as
// every system call's attempt did before it could wait elsewhere.
void net_lock_tries_spin(int on);
uint64_t net_lock_queued(void);      // requests that found the lock held, so far (tests)
uint64_t net_lock_tries_busy(void);  // NET_TRY requests that found it held, so far
// net/net.c, at the end of every section: re-arm the timer coroutine if lwIP
// asked for an earlier timeout, and wake the loopback coroutine if packets wait.
void net_section_end(void);

struct net_stats {
  uint64_t rx_frames, rx_dropped;    // frames given to lwIP / dropped (no memory, bad input)
  uint64_t tx_frames, tx_full;       // frames sent (or waiting for a card buffer) / refused: the driver's backlog was full too
  uint64_t timer_runs;
  // the network lock (net/netlock.c): sections run; requests that found it
  // held; sections a combiner ran for another caller; hand-overs of the lock;
  // NET_TRY requests that found it held (and went to wait elsewhere)
  uint64_t lock_sections, lock_queued, lock_combined, lock_handoffs, lock_tries_busy;
};
void net_lock_stats(struct net_stats *st);   // with the lock held
void net_get_stats(struct net_stats *st);
uint64_t net_timer_runs(void);       // stats.timer_runs without the lock (kstat)

// net/netif.c
int netif_virtio_start(void);        // add the interface and start the receive coroutine
void netif_count_tx(int sent);      // net/net.c, with the lock held
void netif_count_rx(int accepted);

// net/loopif.c: loopback delivery (127.0.0.1, and the guest's own address)
int loopif_start(void);              // its coroutine; net_start calls it
uint64_t loopif_kick_locked(void);   // with the lock held: the coroutine to wake (a cid) if packets wait, else 0

#endif
