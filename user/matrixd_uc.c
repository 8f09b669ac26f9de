// matrixd's coroutine models, KCUC and KTUC (the kernel mode, set by main, is
// the only difference): every connection is three stackful user coroutines,
//
//   receiver --rxq--> handler --txq--> sender
//
// and every socket call that may wait is made with cops_async, so only the
// calling coroutine waits: the kernel completes the call later and wakes it
// through the completion ring and a user interrupt. The coroutines of a
// connection run at its priority, and cops_async passes that priority to the
// kernel with each call.
//
// The code below changes the server's state (queues, connection records, the
// lists of slots and watched connections) as if it ran on one thread:
// coroutines interleave only where one waits (uc_block, uc_async). With one
// executor thread that is simply true. With several (-t; by default one per
// hart), every coroutine here holds one lock while it runs, and lets go of it
// only while it waits, while its receiver parses what came (the connection's
// own parser; what others look at of it is copied out under the lock:
// ps_idle, ps_buffered) and while its handler answers a request (md_handle:
// the multiply and the formatting). Parsing and answering are most of a
// request's work, so they run on every hart at once, and the bookkeeping stays
// as simple as on one thread. Standing coroutines besides
// the connections: the accept loop, the watchdog (stalled requests, senders
// stuck on a peer that does not read) and main, which reports when the server
// is idle.
#include "matrixd.h"

#define WATCHDOG_MS 250

// ---- the server's lock (several executor threads) ----
// A spinlock that gives the hart up after a short spin (ulock, user/uthread.c),
// held only for bookkeeping: a few hundred instructions between one wait and
// the next, or between a wait and the parse or the answer. A coroutine mutex
// (the CES lock form, user/cops.h) was tried first, then held over the parse
// too: a coroutine that found it taken blocked, the unlock handed it to a
// coroutine that first had to be dispatched, and meanwhile every other one
// queued behind it; two threads served fewer requests than one in every run
// made with it. With one executor thread the lock is never taken.
static volatile int server_lock;
static int lock_on;

static void lock(void) {
  if (lock_on)
    ulock_acquire(&server_lock);
}

static void unlock(void) {
  if (lock_on)
    ulock_release(&server_lock);
}

// The only ways a coroutine here waits: the lock is let go meanwhile. A wake
// that comes between the unlock and the block is not lost (the executor
// remembers it), and every wait here is a loop on the state it waits for.
static void uc_block(void) {
  unlock();
  cops_block();
  lock();
}

static long uc_async(uint64_t nr, long a0, long a1, long a2) {
  unlock();
  long r = cops_async(nr, a0, a1, a2);
  lock();
  return r;
}

// The receiver's recv: uc_async with its call's entry kept in *op while it
// waits, so that the watchdog can tell bytes still to come (the call in
// flight in the kernel) from bytes that came and wait for this coroutine to
// run (the entry completed): a server too busy to run a low-priority
// receiver for the stall time must not blame its peer for it.
static long uc_recv(struct cops_op *volatile *op, int fd, char *buf, long want) {
  unlock();
  uintptr_t s = cops_async_submit(SYS_recv, fd, (long)buf, want);
  __atomic_store_n(op, (struct cops_op *)(s & ~(uintptr_t)1), __ATOMIC_RELEASE);
  long r = cops_async_wait(s);
  lock();
  *op = 0;
  return r;
}

// The receiver's call has not completed: what the stall rule waits on is
// still the peer's. (An entry is reused only by its coroutine's next call.)
static int recv_in_flight(struct cops_op *o) {
  return o && __atomic_load_n(&o->cid, __ATOMIC_ACQUIRE) != 0;
}

static void uc_yield(void) {
  unlock();
  cops_yield();
  lock();
}

// A FIFO of messages with at most one waiting coroutine. `closed`: nothing
// more will be put; get returns NULL once it is empty.
struct uq {
  struct md_msg *head, *tail;
  cid_t waiter;
  int closed;
};

struct uconn {
  struct uconn *next, *prev;   // in `watched` while watched is set
  int watched;                 // part of a request buffered, or a send under way
  int fd;
  int prio;
  int refs;                    // coroutines of this connection still running
  int dying;                   // every part stops; the last one frees
  struct md_parse ps;
  struct uq rxq, txq;          // receiver -> handler -> sender
  cid_t cid[3];                // receiver, handler, sender
  int outstanding;             // replies made and not yet sent
  int rx_throttled;            // the receiver waits for outstanding to drop
  int in_recv;                 // the receiver is inside recv: its parser is idle
  struct cops_op *volatile rx_op;   // its call's entry while it waits (uc_recv)
  int in_send;
  long send_since;
  int ps_idle, ps_buffered;    // md_parse_idle and mp_buffered of ps, as of the
                               // receiver's last parse (others must not read ps:
                               // with several threads it parses unlocked)
  char first;                  // an idle connection's one-byte receive (receiver)
  int slot;                    // holds one of the requests-in-flight slots (below)
  int slot_waiting;            // its receiver waits for one, linked in slot_waiters
  struct uconn *slot_prev, *slot_next;
};

static int lfd;
// The connections the watchdog must look at: those with part of a request
// buffered or a send under way. Not all of them: with 10,000 idle connections
// a walk over every one each WATCHDOG_MS would cost the active ones.
static struct uconn *watched;
static cid_t main_cid, watchdog_cid;
static int watchdog_parked, idle_due;

// ---- requests in flight ----
// A connection takes a slot when the first bytes of a message reach its idle
// receiver, and gives it back once nothing of it is left: its parser idle and
// every reply sent. At most md_cfg.max_inflight (-F) are held at once; the
// receivers of other connections wait for one, first come first served,
// before they read on. So what requests need (a receive buffer, the parser's
// buffers, the request and its reply: about 8 KiB at n = 15) is bounded by
// the slots, not by the connections, and thousands of connections that ask at
// once fit in memory (the paper's budget: docs/results/eval.md, Table 3),
// served in turn. A slot held by a peer that stops mid-request comes back by
// the watchdog's stall rule.
static int slots_held;
static struct uconn *slot_waiters, *slot_waiters_tail;

static void slot_unwait(struct uconn *c) {
  if (c->slot_prev)
    c->slot_prev->slot_next = c->slot_next;
  else
    slot_waiters = c->slot_next;
  if (c->slot_next)
    c->slot_next->slot_prev = c->slot_prev;
  else
    slot_waiters_tail = c->slot_prev;
  c->slot_prev = c->slot_next = 0;
  c->slot_waiting = 0;
}

// The receiver of c: take a slot, waiting for one if need be. 0, or -1 if the
// connection is dying meanwhile.
static int slot_take(struct uconn *c) {
  if (c->slot)
    return 0;
  if (!md_cfg.max_inflight || (slots_held < md_cfg.max_inflight && !slot_waiters)) {
    slots_held++;
    c->slot = 1;
    return 0;
  }
  c->slot_waiting = 1;
  c->slot_prev = slot_waiters_tail;
  c->slot_next = 0;
  if (slot_waiters_tail)
    slot_waiters_tail->slot_next = c;
  else
    slot_waiters = c;
  slot_waiters_tail = c;
  while (c->slot_waiting && !c->dying)
    uc_block();
  if (c->slot_waiting)         // dying: leave the queue
    slot_unwait(c);
  return c->slot ? 0 : -1;
}

// Give c's slot back if it holds one and is done with it (or force: it ends);
// the first waiter gets it.
static void slot_give(struct uconn *c, int force) {
  if (!c->slot || (!force && (!c->ps_idle || c->outstanding)))
    return;
  c->slot = 0;
  struct uconn *w = slot_waiters;
  if (!w) {
    slots_held--;
    return;
  }
  slot_unwait(w);
  w->slot = 1;                 // handed over: slots_held is unchanged
  cops_wake(w->cid[0]);
}

// ---- queues ----

static void msg_append(struct md_msg **head, struct md_msg **tail, struct md_msg *m) {
  m->next = 0;
  if (*tail)
    (*tail)->next = m;
  else
    *head = m;
  *tail = m;
}

static void q_put(struct uq *q, struct md_msg *m) {
  msg_append(&q->head, &q->tail, m);
  if (q->waiter) {
    cid_t w = q->waiter;
    q->waiter = 0;
    cops_wake(w);
  }
}

static void q_close(struct uq *q) {
  q->closed = 1;
  if (q->waiter) {
    cid_t w = q->waiter;
    q->waiter = 0;
    cops_wake(w);
  }
}

// The next message, or NULL when the queue is closed and empty or the
// connection is dying. (Wakes meant for someone else's reason, or left over
// from earlier, only make the loop look again.)
static struct md_msg *q_get(struct uconn *c, struct uq *q) {
  while (!q->head) {
    if (q->closed || c->dying)
      return NULL;
    q->waiter = cops_current();
    uc_block();
    q->waiter = 0;
  }
  struct md_msg *m = q->head;
  q->head = m->next;
  if (!q->head)
    q->tail = 0;
  return m;
}

static void q_free(struct uq *q) {
  while (q->head) {
    struct md_msg *m = q->head;
    q->head = m->next;
    md_msg_free(m);
  }
  q->tail = 0;
}

// ---- connection life ----

// Stop the connection now: shutting the socket down makes the kernel end the
// calls its coroutines are waiting in, and the wakes end their queue waits.
static void conn_kill(struct uconn *c) {
  if (c->dying)
    return;
  c->dying = 1;
  shutdown(c->fd, SHUT_RDWR);
  for (int i = 0; i < 3; i++)
    if (c->cid[i])
      cops_wake(c->cid[i]);
}

static void watch_set(struct uconn *c, int on) {
  if (on == c->watched)
    return;
  c->watched = on;
  if (on) {
    c->prev = 0;
    c->next = watched;
    if (watched)
      watched->prev = c;
    watched = c;
    return;
  }
  if (c->prev)
    c->prev->next = c->next;
  else
    watched = c->next;
  if (c->next)
    c->next->prev = c->prev;
}

// Call whenever what the watchdog looks at may have changed.
static void watch(struct uconn *c) { watch_set(c, !c->dying && (c->ps_buffered || c->in_send)); }

// After the receiver's parse, or the watchdog's stall rule, changed ps.
static void ps_note(struct uconn *c) {
  c->ps_idle = md_parse_idle(&c->ps);
  c->ps_buffered = mp_buffered(&c->ps.p) != 0;
}

static void conn_free(struct uconn *c) {
  if (c->slot_waiting)
    slot_unwait(c);
  slot_give(c, 1);
  watch_set(c, 0);
  q_free(&c->rxq);
  q_free(&c->txq);
  md_parse_free(&c->ps);
  close(c->fd);
  free(c);
  md_count(&md_tot.open, -1);
  if (md_get(&md_tot.open) == 0) {
    idle_due = 1;
    cops_wake(main_cid);
  }
}

// A coroutine of the connection is done with it.
static void conn_put(struct uconn *c) {
  if (--c->refs == 0)
    conn_free(c);
}

static void set_prio(struct uconn *c, int prio) {
  c->prio = prio;
  for (int i = 0; i < 3; i++)
    if (c->cid[i])
      cops_reprio(c->cid[i], (uint32_t)prio);
}

// ---- the three parts ----

static void emit_rx(void *ctx, struct md_msg *m) {
  struct uconn *c = ctx;
  c->outstanding++;
  q_put(&c->rxq, m);
}

// The receiver parses without the lock: what the parse makes is kept in a
// list of its own, and handed to the connection (emit_rx) once it has the
// lock back.
struct parsed {
  struct md_msg *head, *tail;
};

static void emit_parsed(void *ctx, struct md_msg *m) {
  struct parsed *l = ctx;
  msg_append(&l->head, &l->tail, m);
}

// Receive buffers (MD_RECV_BYTES), taken only for a receive into a connection
// that is in the middle of a message. One is kept spare for the next receive
// (under the lock).
static char *rx_spare;

static char *rx_get(void) {
  char *b = rx_spare;
  rx_spare = 0;
  return b ? b : malloc(MD_RECV_BYTES);
}

static void rx_put(char *b) {
  if (b && !rx_spare)
    rx_spare = b;
  else
    free(b);
}

// An idle connection (its parser holds nothing: the buffers of md_parse are
// back in their pool) waits for its next request with a one-byte receive
// into the connection itself, and takes a receive buffer only once bytes have
// come. So an idle connection holds no buffer, and the receiver's stack is
// small (MD_STACK_RECEIVER): with the paper's memory budget that is what lets
// thousands of connections in (docs/results/eval.md, Table 3). The price is
// one receive more per request, for bytes that are already there.
static void receiver(void *arg) {
  struct uconn *c = arg;
  lock();
  while (!c->dying) {
    // Back-pressure: a peer that sends but does not read gets no more than
    // MD_MAX_OUTSTANDING replies queued for it.
    while (c->outstanding >= MD_MAX_OUTSTANDING && !c->dying) {
      c->rx_throttled = 1;
      uc_block();
      c->rx_throttled = 0;
    }
    if (c->dying)
      break;
    int idle = c->ps_idle;
    long want = idle ? 1 : md_recv_size(&c->ps);
    char *buf = idle ? &c->first : rx_get();
    if (!buf) {
      conn_kill(c);
      break;
    }
    c->in_recv = 1;
    long r = uc_recv(&c->rx_op, c->fd, buf, want);
    c->in_recv = 0;
    if (c->dying || r <= 0) {
      if (!idle)
        rx_put(buf);
      if (c->dying)
        break;
      if (r < 0)               // reset (or another error): end it at once
        conn_kill(c);
      else                     // the peer has closed: answer what came, then close
        q_close(&c->rxq);
      break;
    }
    if (idle && slot_take(c) < 0)   // a new message: its requests in flight
      break;
    int prio = c->prio;
    struct parsed got = { 0, 0 };
    unlock();
    int f = md_parse_feed(&c->ps, buf, (size_t)r, md_more_pending(want, r), emit_parsed, &got, &prio);
    lock();
    ps_note(c);
    for (struct md_msg *m = got.head, *next; m; m = next) {
      next = m->next;
      emit_rx(c, m);
    }
    if (!idle)
      rx_put(buf);
    slot_give(c, 0);             // (nothing came of it, or all of it is answered)
    watch(c);
    if (prio != c->prio)
      set_prio(c, prio);
    if (f == MD_FEED_NOMEM) {
      conn_kill(c);
      break;
    }
    if (f == MD_FEED_CLOSE) {
      q_close(&c->rxq);
      break;
    }
  }
  md_stack_note(0);
  conn_put(c);
  unlock();
}

static void handler(void *arg) {
  struct uconn *c = arg;
  struct md_msg *m;
  lock();
  while ((m = q_get(c, &c->rxq)) != NULL) {
    if (m->kind == MD_REQUEST) {
      unlock();                  // the answer needs nothing shared
      m = md_handle(m);
      lock();
      if (!m) {
        conn_kill(c);
        break;
      }
    }
    q_put(&c->txq, m);
  }
  q_close(&c->txq);
  md_stack_note(1);
  conn_put(c);
  unlock();
}

static void sender(void *arg) {
  struct uconn *c = arg;
  struct md_msg *m;
  lock();
  while ((m = q_get(c, &c->txq)) != NULL) {
    size_t off = 0;
    while (off < m->len && !c->dying) {
      c->in_send = 1;
      c->send_since = uptime();
      watch(c);
      long r = uc_async(SYS_send, c->fd, (long)(m->text + off), (long)(m->len - off));
      c->in_send = 0;
      watch(c);
      if (r <= 0) {
        conn_kill(c);
        break;
      }
      off += (size_t)r;
    }
    if (off == m->len && m->answer)
      md_count(&md_tot.served, 1);
    md_msg_free(m);
    if (c->dying)
      break;
    if (--c->outstanding < MD_MAX_OUTSTANDING && c->rx_throttled)
      cops_wake(c->cid[0]);
    slot_give(c, 0);
  }
  // Everything queued is sent (or the connection died): close it. Graceful
  // ends come here with the receiver and handler already gone.
  c->dying = 1;
  md_stack_note(2);
  conn_put(c);
  unlock();
}

// ---- standing coroutines ----

// A connection for a new socket, with its three coroutines; NULL (and the
// socket closed) if that cannot be done.
static struct uconn *conn_new(int fd, long index) {
  struct uconn *c = calloc(1, sizeof *c);
  if (!c || md_parse_init(&c->ps) < 0) {
    free(c);
    close(fd);
    return NULL;
  }
  c->fd = fd;
  c->ps_idle = 1;
  c->prio = md_policy_prio(index);
  md_count(&md_tot.open, 1);
  static void (*const parts[3])(void *) = { receiver, handler, sender };
  static const size_t stacks[3] = { MD_STACK_RECEIVER, MD_STACK_HANDLER, MD_STACK_SENDER };
  // The acceptor does not wait between these spawns (and holds the lock), so
  // none of the new coroutines runs before refs and the cids are all set.
  for (int i = 0; i < 3; i++) {
    int64_t cid = cops_spawn_stackful_sized(parts[i], c, (uint32_t)c->prio, stacks[i]);
    if (cid < 0) {
      c->dying = 1;        // the ones that exist see it, end, and free it
      break;
    }
    c->cid[i] = (cid_t)cid;
    c->refs++;
  }
  if (c->refs == 0) {
    conn_free(c);
    return NULL;
  }
  return c->dying ? NULL : c;
}

// Pages to keep free for the requests in flight (-F of them, each a receive
// buffer, the parser's buffers, the request and its reply at the largest n):
// a connection that would leave fewer is refused at once, rather than
// accepted and then closed on its first request for want of memory to serve
// it. (Pages the heap already holds, free inside it, are not counted: the
// reserve errs on the safe side.)
static long reserve_pages(void) {
  size_t n = (size_t)md_cfg.max_n, one = MD_RECV_BYTES + MP_REQ_BYTES(n) + MP_ANSWER_BYTES(n) +
                                           3 * n * n * sizeof(int64_t) + 3 * sizeof(struct md_msg);
  return (long)((size_t)md_cfg.max_inflight * one / 4096) + 64;
}

static void acceptor(void *arg) {
  (void)arg;
  lock();
  int complained = 0;
  long reserve = reserve_pages();
  for (;;) {
    long fd = uc_async(SYS_accept, lfd, 0, 0);
    if (fd == -EMFILE) {
      md_count(&md_tot.refused, 1);          // the kernel reset it: no descriptor
      continue;
    }
    if (fd < 0) {
      if (!complained++)
        md_log("matrixd: accept failed: %ld %s (retrying)\n", fd, errname(fd));
      uc_async(SYS_sleep, 100, 0, 0);
      continue;
    }
    complained = 0;
    if (md_get(&md_tot.open) >= md_cfg.max_conns ||
        (md_cfg.max_inflight && kstat(KSTAT_FREE_PAGES) < reserve)) {
      close((int)fd);                        // over a limit: refused
      md_count(&md_tot.refused, 1);
      continue;
    }
    if (!conn_new((int)fd, md_get(&md_tot.conns))) {
      md_count(&md_tot.refused, 1);          // no memory
      continue;
    }
    md_count(&md_tot.conns, 1);
    md_opened();
    if (watchdog_parked)
      cops_wake(watchdog_cid);
  }
}

static void watchdog(void *arg) {
  (void)arg;
  lock();
  for (;;) {
    // With no connection there is nothing to watch: wait without a timer in
    // the kernel, so the idle counters match the baseline.
    while (md_get(&md_tot.open) == 0) {
      watchdog_parked = 1;
      uc_block();
    }
    watchdog_parked = 0;
    uc_async(SYS_sleep, WATCHDOG_MS, 0, 0);
    long now = uptime();
    for (struct uconn *c = watched, *next; c; c = next) {
      next = c->next;          // (a stall may take c off the list)
      if (c->dying)
        continue;
      // The receiver is parked in recv, which has not completed, and its
      // parser holds part of a request that has not grown for MD_STALL_MS:
      // answer "incomplete request". (A completed recv whose receiver has
      // not run yet is the server's delay, not the peer's: uc_recv.)
      if (c->in_recv && c->ps_buffered && now - c->ps.last_rx >= MD_STALL_MS &&
          recv_in_flight(c->rx_op)) {
        int prio = c->prio;
        // (A "close connection" that only the stall completes ends the
        // connection at once: the receiver is parked in recv.)
        int f = md_parse_stall(&c->ps, emit_rx, c, &prio);
        ps_note(c);
        if (f != MD_FEED_OK)
          conn_kill(c);
        else if (prio != c->prio)
          set_prio(c, prio);
      }
      if (c->in_send && now - c->send_since >= MD_SEND_TIMEOUT_MS)
        conn_kill(c);
      watch(c);
    }
  }
}

static void nap(long ms) { uc_async(SYS_sleep, ms, 0, 0); }

// Executor threads to run: -t, or one per hart online.
static int thread_count(void) {
  long n = md_cfg.threads ? md_cfg.threads : kstat(KSTAT_HARTS);
  return n < 1 ? 1 : n > MD_MAX_THREADS ? MD_MAX_THREADS : (int)n;
}

int md_run_uc(int listen_fd) {
  lfd = listen_fd;
  main_cid = cops_current();
  int threads = thread_count();
  if (threads > 1) {
    lock_on = 1;
    lock();
    // Before the baseline, so that the threads' kernel records are in it.
    threads = 1 + cops_alloc_cpu(threads - 1);
  }
  md_log("matrixd: %d executor thread%s\n", threads, threads == 1 ? "" : "s");
  int64_t a = cops_spawn_stackful(acceptor, 0, MD_PRIO_BEST);
  int64_t w = cops_spawn_stackful(watchdog, 0, MD_PRIO_BEST);
  if (a < 0 || w < 0) {
    printf("matrixd: cannot start the accept loop\n");
    return 1;
  }
  watchdog_cid = (cid_t)w;
  // Both are better than main: this yield lets the acceptor submit its accept
  // (which waits in the kernel from now on) and the watchdog park, so the
  // baseline counts the standing state the idle reports return to.
  uc_yield();
  md_print_baseline(nap);
  for (;;) {
    while (!idle_due)
      uc_block();
    idle_due = 0;
    // Compare only while the watchdog is parked: then no timer of ours is
    // pending in the kernel, as at the baseline.
    long deadline = uptime() + MD_IDLE_WAIT_MS;
    struct md_kstat k;
    for (;;) {
      if (md_get(&md_tot.open) > 0)
        break;
      md_kstat_read(&k);
      if ((watchdog_parked && md_kstat_at_baseline(&k)) || uptime() >= deadline) {
        md_print_idle(&k);
        break;
      }
      nap(MD_IDLE_POLL_MS);
    }
  }
}
