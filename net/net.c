// The network stack's lifecycle and lwIP's timeouts (net/net.h; its lock: net/netlock.c).
#include "net.h"
#include "hart.h"
#include "kco.h"
#include "printf.h"
#include "riscv.h"
#include "spinlock.h"
#include "stats.h"
#include "timer.h"
#include "virtio_net.h"
#include "abi.h"
#include "socket.h"
#include "isn.h"
#include "lwip/init.h"
#include "lwip/timeouts.h"

static int started;
static struct net_stats stats;

// The timer coroutine: when lwIP's next timeout is due, run sys_check_timeouts.
// It sleeps until that deadline; if a call into lwIP schedules an earlier one
// (a TCP connection becoming active starts the TCP timer), net_unlock wakes it
// to re-arm. Idle, it wakes only for lwIP's own slow cyclic timers (ARP, 1 s).
// It takes the lock with net_lock (spinning if it must): it runs a few times a
// second, and as a request its continuation could lose a re-arm wake merged
// with the request's own.
static cid_t timer_cid;
static uint64_t armed_deadline;      // rdtime value the timer coroutine sleeps until; under the network lock

// The time counter value at which lwIP's next timeout is due, UINT64_MAX if
// none is. lwIP keeps time in whole milliseconds (sys_now, net/port.c), so the
// deadline is put on that grid: the same timeout gives the same deadline
// whenever it is computed. (Computed as "now plus the sleep" in counter ticks,
// it moved with the fraction of a millisecond at which it was computed, so
// sections often found it "earlier" than the armed one and woke the timer
// coroutine for nothing: matrixd's light load ran it about 1,650 times in
// 8 s, and its closed loop 2,700-4,300 times in 10 s, where lwIP's timers
// needed about 45.) The clock is read after lwIP's: if a millisecond passed
// between the two, the deadline is one millisecond late, never early.
static uint64_t next_deadline(void) {
  uint32_t sleep_ms = sys_timeouts_sleeptime();
  if (sleep_ms == SYS_TIMEOUTS_SLEEPTIME_INFINITE)
    return UINT64_MAX;
  uint64_t per_ms = board.timebase_hz / 1000;
  return (rdtime() / per_ms + sleep_ms) * per_ms;
}

static int timer_poll(void *arg) {
  (void)arg;
  net_lock();
  sys_check_timeouts();
  __atomic_store_n(&stats.timer_runs, stats.timer_runs + 1, __ATOMIC_RELAXED);   // (read unlocked: net_timer_runs)
  // Nothing scheduled (UINT64_MAX): a new timeout will come through
  // net_unlock. Otherwise sleep until the next one.
  uint64_t deadline = next_deadline();
  armed_deadline = deadline;
  net_unlock();                      // (nothing to re-arm: the deadline is fresh)
  if (deadline != UINT64_MAX)
    timer_add(deadline, kco_current());
  return CO_PENDING;
}

// The wakes are made under the lock (kco_wake is safe anywhere), so that a
// section run by a combiner for someone else needs nothing after it.
void net_section_end(void) {
  sock_section_end();              // window updates and sends of calls made without the lock
  if (timer_cid) {
    uint64_t deadline = next_deadline();
    if (deadline != UINT64_MAX && deadline < armed_deadline) {
      armed_deadline = 0;            // one wake is enough until it re-arms
      kco_wake(timer_cid);
    }
  }
  cid_t loop = loopif_kick_locked();   // packets queued for loopback: deliver them
  if (loop)
    kco_wake(loop);
}

int net_started(void) { return __atomic_load_n(&started, __ATOMIC_ACQUIRE); }

int net_start(void) {
  static struct spinlock start_lock = SPINLOCK_INIT("net-start");
  static int tried, result;
  spin_lock(&start_lock);
  int err = result;
  if (!tried) {
    tried = 1;
    isn_init();
    lwip_init();
    err = netif_virtio_start();
    if (err == 0)
      err = loopif_start();
    if (err == 0) {
      int64_t cid = kco_spawn(timer_poll, 0, NET_PRIO);
      if (cid < 0)
        err = -ENOMEM;
      else
        timer_cid = (cid_t)cid;
    }
    if (err == 0)
      __atomic_store_n(&started, 1, __ATOMIC_RELEASE);
    result = err;
    if (err)
      kprintf("net: cannot start the network stack: error %d\n", err);
  }
  spin_unlock(&start_lock);
  return err;
}

void net_get_stats(struct net_stats *st) {
  net_lock();
  *st = stats;
  net_lock_stats(st);
  net_unlock();
}

uint64_t net_timer_runs(void) { return __atomic_load_n(&stats.timer_runs, __ATOMIC_RELAXED); }

// Counters kept for net/netif.c, which calls these with the lock held.
void netif_count_tx(int sent) {
  if (sent)
    stats.tx_frames++;
  else
    stats.tx_full++;
}

void netif_count_rx(int accepted) {
  if (accepted)
    stats.rx_frames++;
  else
    stats.rx_dropped++;
}

// Printed after the card's line (kernel/virtio_net.c), and only with a card.
static void print_stats(stats_out_fn *out) {
  if (!vnet_present())
    return;
  if (!net_started()) {
    out("     stack not started (the first socket starts it)\n");
    return;
  }
  struct net_stats ns;
  net_get_stats(&ns);
  out("     lwIP: rx %lu frames, %lu dropped; tx %lu frames, %lu refused (card and backlog full); timer runs %lu\n",
      ns.rx_frames, ns.rx_dropped, ns.tx_frames, ns.tx_full, ns.timer_runs);
  out("     lock (%s): sections %lu, found held %lu, combined %lu, handed over %lu; "
      "tries that found it held %lu\n",
      net_lock_is_spinlock() ? "spinlock" : "CES", ns.lock_sections, ns.lock_queued,
      ns.lock_combined, ns.lock_handoffs, ns.lock_tries_busy);
}
STATS_SOURCE(41, "net", print_stats);
