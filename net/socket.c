// Kernel TCP sockets over lwIP's raw API (see net/socket.h).
//
// Nearly everything here runs under the network lock (net/netlock.c): the
// calls below take it (send, and a receive that must see the connection's
// state, as requests a combiner may run for them), and lwIP's callbacks
// (accept_cb, recv_cb, sent_cb, err_cb) are called by lwIP with it held. The
// callbacks only record what happened and wake the socket's wait queue; the
// data moves when a system call asks for it, so a process that does not read
// leaves the data in lwIP's window, and TCP flow control slows the peer down
// (tcp_recved opens the window as the process reads).
//
// The exceptions are a receive that finds data ("Receiving without the network
// lock" below): it takes the data under the socket's own spinlock, and the
// window update waits for the network lock's next section; and a send that
// finds the lock held ("Sending without the network lock"): it leaves its
// bytes on the socket for the lock's holder to give lwIP. So the two calls a
// request-answer connection makes most never wait for the lock.
#include "socket.h"
#include "net.h"
#include "abi.h"
#include "klib.h"
#include "kmalloc.h"
#include "spinlock.h"
#include "stats.h"
#include "virtio_net.h"
#include "lwip/pbuf.h"
#include "lwip/tcp.h"
#include "lwip/priv/tcp_priv.h"

enum sock_state { S_NEW, S_BOUND, S_LISTEN, S_CONN, S_CLOSED, S_CONNECTING };

struct socket {
  int refs;                      // the descriptor's and every call in flight's (atomic:
                                 // sock_get takes one without the network lock)
  enum sock_state state;
  struct tcp_pcb *pcb;           // NULL once lwIP freed it (err_cb) or we let it go (close)
  // a connection
  struct spinlock rxl;           // guards rx: recv_cb appends under the network lock too,
                                 // a receive takes from it with this lock alone
  struct pbuf *rx;               // received, not yet read; the first pbuf's payload starts at the unread byte
  uint32_t unacked;              // bytes read, not yet given back to lwIP's window (atomic)
  // sent by calls that found the network lock held ("Sending without the
  // network lock" below); lwIP has not seen them yet
  struct spinlock txl;           // guards the five below
  struct tx_chunk *tx_head, *tx_tail;
  uint32_t tx_pending, tx_pending_slots;   // their bytes, and the queue entries they may take
  uint32_t tx_room, tx_slots;    // what such a call may still add (0: none may)
  int later_listed;              // on later_list (atomic), holding a reference
  struct socket *later_next;
  int rx_eof;                    // the peer sent FIN
  int err;                       // -ECONNRESET, ... once the connection failed
  int rd_shut, wr_shut;          // shutdown() directions
  int conn_new;                  // connect() completed and no connect call has said so yet
  // a listener: connections waiting for accept (each holds one reference)
  struct socket *aq_head, *aq_tail, *aq_next;
  int aq_len, backlog;
  struct waitq wq;
};

static int nsockets;
static struct sock_stats stats;

static void tx_look_locked(struct socket *s);
static void tx_stop_locked(struct socket *s);

static void wake(struct socket *s) { waitq_wake_all(&s->wq); }

static struct socket *sock_alloc(void) {
  if (nsockets >= SOCK_MAX)
    return 0;
  struct socket *s = kzalloc(sizeof *s);
  if (!s)
    return 0;
  s->refs = 1;
  spin_init(&s->rxl, "socket-rx");
  spin_init(&s->txl, "socket-tx");
  waitq_init(&s->wq, "socket");
  nsockets++;
  return s;
}

static void put_locked(struct socket *s) {
  if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0)
    return;
  if (s->rx)
    pbuf_free(s->rx);
  tx_stop_locked(s);
  nsockets--;
  kfree(s);
}

static int lwip_errno(err_t err) {
  switch (err) {
  case ERR_RST: return -ECONNRESET;
  case ERR_ABRT: return -ECONNABORTED;
  case ERR_CLSD: return -ENOTCONN;
  case ERR_MEM: return -ENOMEM;
  default: return -EIO;
  }
}

// How a connection that never came up failed. lwIP frees a SYN_SENT pcb with
// ERR_RST when the peer answers the SYN with a reset (nobody listens), and with
// ERR_ABRT when its SYN retransmissions ran out (we never abort a connecting
// pcb while our callbacks are attached: close detaches them first).
static int connect_errno(err_t err) {
  return err == ERR_RST ? -ECONNREFUSED : err == ERR_ABRT ? -ETIMEDOUT : lwip_errno(err);
}

// Take our callbacks off a pcb and forget it: from here on lwIP alone
// decides when to free it, and tells us nothing.
static struct tcp_pcb *detach(struct socket *s) {
  struct tcp_pcb *pcb = s->pcb;
  s->pcb = 0;
  if (pcb) {
    tcp_arg(pcb, 0);
    tcp_recv(pcb, 0);            // lwIP then drops late data itself
    tcp_sent(pcb, 0);
    tcp_err(pcb, 0);
  }
  return pcb;
}

// ---- lwIP callbacks (network lock held) ----
static err_t recv_cb(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err) {
  struct socket *s = arg;
  (void)pcb;
  (void)err;                      // lwIP passes ERR_OK here in 2.1
  if (!p) {
    s->rx_eof = 1;
    // The peer's FIN after our own (shutdown SHUT_WR): the connection has
    // nothing left to carry, and its pcb goes on to CLOSING or TIME_WAIT,
    // whose end lwIP frees without calling err_cb (tcp_slowtmr, or
    // tcp_kill_timewait when memory runs out). Holding on to it would leave
    // a dangling pointer for close() to free a second time, or to close a
    // new connection whose pcb reused the memory. Let lwIP have it now.
    if (s->wr_shut)
      detach(s);
  } else {
    stats.bytes_in += p->tot_len;
    spin_lock(&s->rxl);
    if (s->rx)
      pbuf_cat(s->rx, p);        // the window bounds the total (TCP_WND < 64 KiB)
    else
      __atomic_store_n(&s->rx, p, __ATOMIC_RELEASE);
    spin_unlock(&s->rxl);
  }
  wake(s);
  return ERR_OK;
}

static err_t sent_cb(void *arg, struct tcp_pcb *pcb, u16_t len) {
  (void)pcb;
  (void)len;
  tx_look_locked(arg);            // send buffer space came back: for sends without the lock
  wake(arg);                      // and for those that wait
  return ERR_OK;
}

// lwIP has already freed the pcb when it calls this.
static void err_cb(void *arg, err_t err) {
  struct socket *s = arg;
  s->pcb = 0;
  tx_stop_locked(s);
  s->err = s->state == S_CONNECTING ? connect_errno(err) : lwip_errno(err);
  stats.resets++;
  wake(s);
}

static void attach(struct socket *s, struct tcp_pcb *pcb) {
  s->pcb = pcb;
  tcp_arg(pcb, s);
  tcp_recv(pcb, recv_cb);
  tcp_sent(pcb, sent_cb);
  tcp_err(pcb, err_cb);
}

// A connection completed its handshake on listener `arg`. Returning an error
// makes lwIP abort it (a reset to the peer): that is how a full accept queue or
// the socket limit refuses a connection cleanly.
static err_t accept_cb(void *arg, struct tcp_pcb *newpcb, err_t err) {
  struct socket *l = arg;
  if (err != ERR_OK || !newpcb)
    return ERR_VAL;               // lwIP could not allocate the connection
  struct socket *s = 0;
  if (l && l->state == S_LISTEN && l->aq_len < l->backlog)
    s = sock_alloc();
  if (!s) {
    stats.refused++;
    return ERR_MEM;
  }
  s->state = S_CONN;
  attach(s, newpcb);
  tx_look_locked(s);
  if (l->aq_tail)
    l->aq_tail->aq_next = s;
  else
    l->aq_head = s;
  l->aq_tail = s;
  l->aq_len++;
  stats.accepted++;
  wake(l);
  return ERR_OK;
}

// ---- the calls ----
int sock_create(struct socket **out) {
  int err = net_start();
  if (err)
    return err;
  net_lock();
  struct socket *s = sock_alloc();
  struct tcp_pcb *pcb = s ? tcp_new() : 0;
  if (s && pcb) {
    // Restarting a server must not fail while old connections on its port
    // linger in TIME_WAIT (accepted connections inherit the option).
    ip_set_option(pcb, SOF_REUSEADDR);
    attach(s, pcb);
    *out = s;
  } else if (s)
    put_locked(s);
  err = !s ? (nsockets >= SOCK_MAX ? -EMFILE : -ENOMEM) : !pcb ? -ENOMEM : 0;
  net_unlock();
  return err;
}

// SOF_REUSEADDR (set on every socket) lets lwIP bind a port that connections
// in TIME_WAIT still use, but also one that another socket has bound or listens
// on. Refuse those two here, as POSIX systems do.
static int port_in_use(u16_t port) {
  for (struct tcp_pcb_listen *l = tcp_listen_pcbs.listen_pcbs; l; l = l->next)
    if (l->local_port == port)
      return 1;
  for (struct tcp_pcb *b = tcp_bound_pcbs; b; b = b->next)
    if (b->local_port == port)
      return 1;
  return 0;
}

int sock_bind(struct socket *s, int port) {
  if (port <= 0 || port > 65535)
    return -EINVAL;
  net_lock();
  int r = -EINVAL;
  if (s->state == S_NEW && s->pcb && port_in_use((u16_t)port))
    r = -EADDRINUSE;
  else if (s->state == S_NEW && s->pcb) {
    err_t e = tcp_bind(s->pcb, IP_ADDR_ANY, (u16_t)port);
    r = e == ERR_OK ? 0 : e == ERR_USE ? -EADDRINUSE : lwip_errno(e);
    if (r == 0)
      s->state = S_BOUND;
  }
  net_unlock();
  return r;
}

int sock_listen(struct socket *s, int backlog) {
  net_lock();
  int r = -EINVAL;
  if (s->state == S_BOUND && s->pcb) {
    err_t e;
    // lwIP's own backlog limits half-open connections only (its maximum):
    // the accept queue below enforces the caller's backlog.
    struct tcp_pcb *lpcb = tcp_listen_with_backlog_and_err(s->pcb, 255, &e);
    if (lpcb) {
      s->pcb = lpcb;             // lwIP freed the old pcb
      tcp_arg(lpcb, s);
      tcp_accept(lpcb, accept_cb);
      s->backlog = backlog < 1 ? 1 : backlog > SOCK_BACKLOG_MAX ? SOCK_BACKLOG_MAX : backlog;
      s->state = S_LISTEN;
      r = 0;
    } else
      r = lwip_errno(e);
  }
  net_unlock();
  return r;
}

static void abort_conn(struct socket *c) {
  struct tcp_pcb *pcb = detach(c);
  if (pcb)
    tcp_abort(pcb);            // a reset to the peer
  put_locked(c);
}

int sock_refuse(struct socket *s) {
  struct socket *c;
  int r = sock_accept(s, &c);
  if (r == 0) {
    net_lock();
    stats.refused++;
    abort_conn(c);
    net_unlock();
  }
  return r;
}

int sock_accept(struct socket *s, struct socket **out) {
  net_lock();
  int r = s->state == S_CLOSED ? -EBADF : s->state != S_LISTEN ? -EINVAL : -EAGAIN;
  struct socket *c = s->state == S_LISTEN ? s->aq_head : 0;
  if (c) {
    s->aq_head = c->aq_next;
    if (!s->aq_head)
      s->aq_tail = 0;
    c->aq_next = 0;
    s->aq_len--;
    *out = c;                    // the queue's reference becomes the caller's
    r = 0;
  }
  net_unlock();
  return r;
}

// The state checks recv and send share. 0 if the transfer may proceed.
static int conn_check(struct socket *s) {
  if (s->state == S_CLOSED)
    return -EBADF;
  return s->state == S_CONN ? 0 : -ENOTCONN;
}

// Copy up to n unread bytes to uva and free what was read; the bytes read,
// or -EFAULT, or -EAGAIN if there were none. Under s->rxl (pbuf_free is
// kfree, which any hart may call). The window is the caller's business.
static long take_data(struct socket *s, pte_t *pt, uint64_t uva, long n) {
  long done = 0;
  int fault = 0;
  spin_lock(&s->rxl);
  while (done < n && s->rx) {
    struct pbuf *q = s->rx;
    if (q->len == 0) {            // an empty pbuf in the chain: unlink and free it alone
      s->rx = q->next;           // the chain's reference to the rest becomes ours
      q->next = 0;
      q->tot_len = 0;
      pbuf_free(q);
      continue;
    }
    u16_t m = (u16_t)(q->len < n - done ? q->len : n - done);
    if (copyout(pt, uva + (uint64_t)done, q->payload, m) < 0) {
      fault = 1;
      break;
    }
    done += m;
    s->rx = pbuf_free_header(q, m);     // frees the pbufs read to their end
  }
  spin_unlock(&s->rxl);
  return done ? done : fault ? -EFAULT : -EAGAIN;
}

// ---- Work for the network lock's next section ----
// Receives that found data and sends that found the lock held leave their
// part under the lock (a window update, bytes for lwIP) to the lock's next
// section: the caller puts its socket on later_list, a lock-free stack, and
// every section's end (net_section_end calls sock_section_end) takes the whole
// list. The list holds a reference to each socket on it.
// Order, for work that is never left behind: a caller records its work (in
// s->unacked, or s->tx_head under s->txl), then lists the socket unless it is
// listed; the section unlists it, then takes the work (all sequentially
// consistent, the lists' flag and s->unacked; s->txl's acquire after the
// unlisting), so either the section takes the work or the caller lists the
// socket again. Whoever lists must then see a section come: net_later
// (net/netlock.c) runs one if the lock is free, and otherwise the lock's
// holder will, at its section's end or, past it, when it lets the lock go.
static struct socket *later_list;

static void list_for_later(struct socket *s) {
  if (__atomic_exchange_n(&s->later_listed, 1, __ATOMIC_SEQ_CST))
    return;
  sock_get(s);
  struct socket *head = __atomic_load_n(&later_list, __ATOMIC_RELAXED);
  do
    s->later_next = head;
  while (!__atomic_compare_exchange_n(&later_list, &head, s, 1, __ATOMIC_RELEASE,
                                      __ATOMIC_RELAXED));
}

int sock_later_waiting(void) { return __atomic_load_n(&later_list, __ATOMIC_RELAXED) != 0; }

static void give_window_locked(struct socket *s, uint32_t more);
static void tx_flush_locked(struct socket *s);

// Network lock held (net/net.c, the end of every section).
void sock_section_end(void) {
  if (!__atomic_load_n(&later_list, __ATOMIC_RELAXED))
    return;
  struct socket *s = __atomic_exchange_n(&later_list, 0, __ATOMIC_ACQUIRE);
  while (s) {
    struct socket *next = s->later_next;
    __atomic_store_n(&s->later_listed, 0, __ATOMIC_SEQ_CST);
    give_window_locked(s, 0);
    tx_flush_locked(s);
    put_locked(s);               // the list's reference
    s = next;
  }
}

// ---- Receiving without the network lock ----
// A receive that finds data takes it under s->rxl alone (sock_recv) and adds
// the bytes to s->unacked; lwIP's window grows by them (tcp_recved) in a
// section of the network lock: its own if the lock is free, else the next
// one anybody runs (the later list, above). Until then the peer sees a window
// smaller by those bytes, so past WINDOW_NOW of them a receive gives them
// back itself, waiting for the lock as the call may (a peer that has filled
// the window would otherwise wait for the next section, which nothing might
// bring; a call that may not wait, NET_TRY, takes no more than stays below
// it). So at most a quarter of the window waits, and a peer that still has
// the rest goes on sending, whose frames bring sections; lwIP's own timers
// bring one every 250 ms while a connection is open.
#define WINDOW_NOW (TCP_WND / 4)
static long window_held;         // the sum of every socket's unacked (atomic; kstat)
static int recv_locked_only;     // bootargs netrecv=locked: every receive under the lock, as before

void sock_recv_always_locked(int on) { recv_locked_only = on; }

long sock_window_held(void) { return __atomic_load_n(&window_held, __ATOMIC_RELAXED); }

// Give lwIP's window the socket's held bytes and `more` just read under the lock.
static void give_window_locked(struct socket *s, uint32_t more) {
  uint32_t n = __atomic_exchange_n(&s->unacked, 0, __ATOMIC_SEQ_CST);
  if (n)
    __atomic_sub_fetch(&window_held, (long)n, __ATOMIC_RELAXED);
  n += more;
  if (s->pcb)
    for (long left = n; left > 0; left -= 0xffff)
      tcp_recved(s->pcb, (u16_t)(left < 0xffff ? left : 0xffff));
}

static void window_section(void *arg) { give_window_locked(arg, 0); }

static void window_later(struct socket *s, long n, enum net_wait how) {
  __atomic_add_fetch(&window_held, n, __ATOMIC_RELAXED);
  uint32_t total = __atomic_add_fetch(&s->unacked, (uint32_t)n, __ATOMIC_SEQ_CST);
  if (total >= WINDOW_NOW && how != NET_TRY) {
    net_run(window_section, s, how);
    return;
  }
  list_for_later(s);
  net_run(window_section, s, NET_TRY);   // the lock free: now; held: its holder's section end
}

// With the lock held (a section of sock_recv's, below).
static long recv_locked(struct socket *s, pte_t *pt, uint64_t uva, long n) {
  long r = conn_check(s);
  if (r == 0 && s->rd_shut)
    r = 0;
  else if (r == 0 && s->rx) {
    r = take_data(s, pt, uva, n);
    if (r > 0)
      give_window_locked(s, (uint32_t)r);
  }
  if (r == 0 && !s->rd_shut && !s->rx && s->state == S_CONN)
    r = s->err ? s->err : s->rx_eof ? 0 : s->pcb ? -EAGAIN : -ENOTCONN;
  return r;
}

// ---- Sending without the network lock ----
// A send that finds the network lock held copies its bytes into a chunk of
// its own, appends it to s->tx_head under s->txl, lists the socket for the
// lock's next section (above) and returns: the lock's holder gives the bytes
// to lwIP (tcp_write, tcp_output) at its section's end, while the caller goes
// on. (Waiting for the lock, spinning, cost a two-hart matrixd request about
// a tenth of its instructions: docs/results/ab-netsend.md.) The bytes are then
// queued, as a send's are once lwIP has them, so the call returns their count.
// It takes this way only if the whole send fits in what lwIP is sure to
// take: s->tx_room and s->tx_slots, lwIP's free send buffer and segment
// queue entries as a section last saw them (tx_look_locked), less what
// chunks already hold. Every tcp_write is made under the lock, between a
// tx_take under s->txl that closes the room and a look that opens it again,
// and lwIP's free space only grows otherwise (acknowledgements, and sent_cb
// looks again), so the chunks always fit when a section writes them,
// and lwIP's own memory bounds the bytes a socket holds, as before. A send
// that does not fit waits for the lock as it did (send_locked): it first
// writes the chunks, so bytes leave in the order the calls returned. If
// tcp_write still fails (lwIP out of memory) the connection is reset: its
// calls then fail, and the peer knows, rather than losing bytes in silence.
struct tx_chunk {
  struct tx_chunk *next;
  uint32_t len;
  char data[];
};

// Queue entries a tcp_write of len bytes may take: one per segment, and one
// for the piece that may extend the last queued segment.
#define TX_SLOTS(len) ((len) / TCP_MSS + 2)

static long tx_held;             // bytes in every socket's chunks (atomic; kstat)
static uint64_t tx_later;        // sends that took this way, so far (atomic; kstat)
static int send_locked_only;     // bootargs netsend=locked: every send waits for the lock, as before

void sock_send_always_locked(int on) { send_locked_only = on; }
long sock_send_held(void) { return __atomic_load_n(&tx_held, __ATOMIC_RELAXED); }
uint64_t sock_sends_later(void) { return __atomic_load_n(&tx_later, __ATOMIC_RELAXED); }

// Look at lwIP's send buffer again. Network lock held.
static void tx_look_locked(struct socket *s) {
  long room = 0, slots = 0;
  spin_lock(&s->txl);
  if (s->pcb && !s->err && !s->wr_shut && s->state == S_CONN && !send_locked_only) {
    room = (long)tcp_sndbuf(s->pcb) - (long)s->tx_pending;
    slots = (long)TCP_SND_QUEUELEN - (long)tcp_sndqueuelen(s->pcb) - (long)s->tx_pending_slots;
  }
  s->tx_room = room > 0 ? (uint32_t)room : 0;
  s->tx_slots = slots > 0 ? (uint32_t)slots : 0;
  spin_unlock(&s->txl);
}

// Take the socket's chunks and let no send add more until the next look.
static struct tx_chunk *tx_take(struct socket *s) {
  spin_lock(&s->txl);
  struct tx_chunk *c = s->tx_head;
  s->tx_head = s->tx_tail = 0;
  if (s->tx_pending)
    __atomic_sub_fetch(&tx_held, (long)s->tx_pending, __ATOMIC_RELAXED);
  s->tx_pending = s->tx_pending_slots = 0;
  s->tx_room = s->tx_slots = 0;
  spin_unlock(&s->txl);
  return c;
}

// The connection ended or the socket is going: drop the chunks, refuse more.
// Network lock held.
static void tx_stop_locked(struct socket *s) {
  for (struct tx_chunk *c = tx_take(s), *next; c; c = next) {
    next = c->next;
    kfree(c);
  }
}

// Give the socket's chunks to lwIP, in order; no send adds more until the
// caller's next look. Network lock held.
static void tx_write_locked(struct socket *s) {
  struct tx_chunk *c = tx_take(s);
  long sent = 0;
  int failed = !s->pcb;
  while (c) {
    struct tx_chunk *next = c->next;
    u8_t flags = TCP_WRITE_FLAG_COPY | (next ? TCP_WRITE_FLAG_MORE : 0);
    if (!failed && tcp_write(s->pcb, c->data, (u16_t)c->len, flags) == ERR_OK)
      sent += c->len;
    else
      failed = 1;
    kfree(c);
    c = next;
  }
  if (sent) {
    stats.bytes_out += (uint64_t)sent;
    tcp_output(s->pcb);
  }
  if (failed && s->pcb)
    tcp_abort(s->pcb);           // (err_cb: the calls fail with the error)
}

static void tx_flush_locked(struct socket *s) {
  if (!__atomic_load_n(&s->tx_head, __ATOMIC_RELAXED))
    return;                      // (a chunk added after this look lists s again)
  tx_write_locked(s);
  tx_look_locked(s);
}

// Queue the whole send as a chunk if it fits: n, or 0 (it does not: nothing
// was done). The caller has glanced at s->tx_room; the test under s->txl decides.
static long send_later(struct socket *s, pte_t *pt, uint64_t uva, long n) {
  struct tx_chunk *c = kmalloc(sizeof *c + (size_t)n);
  if (!c)
    return 0;
  if (copyin(pt, c->data, uva, (size_t)n) < 0) {
    kfree(c);
    return 0;                    // (the locked way says -EFAULT)
  }
  c->next = 0;
  c->len = (uint32_t)n;
  uint32_t slots = TX_SLOTS(c->len);
  spin_lock(&s->txl);
  int fits = s->tx_room >= c->len && s->tx_slots >= slots;
  if (fits) {
    s->tx_room -= c->len;
    s->tx_slots -= slots;
    s->tx_pending += c->len;
    s->tx_pending_slots += slots;
    if (s->tx_tail)
      s->tx_tail->next = c;
    else
      s->tx_head = c;
    s->tx_tail = c;
  }
  spin_unlock(&s->txl);
  if (!fits) {
    kfree(c);
    return 0;
  }
  __atomic_add_fetch(&tx_held, n, __ATOMIC_RELAXED);
  __atomic_add_fetch(&tx_later, 1, __ATOMIC_RELAXED);
  list_for_later(s);
  net_later();
  return n;
}

#define SEND_CHUNK 512                // bytes copied from user memory per tcp_write

static long send_locked(struct socket *s, pte_t *pt, uint64_t uva, long n) {
  char tmp[SEND_CHUNK];
  tx_write_locked(s);            // the bytes of sends that returned before this one, first
  long r = conn_check(s);
  if (r == 0)
    r = s->err ? s->err : (s->wr_shut || !s->pcb) ? -EPIPE : 0;
  if (r == 0) {
    long done = 0;
    while (done < n) {
      long room = tcp_sndbuf(s->pcb);
      if (room == 0 || tcp_sndqueuelen(s->pcb) >= TCP_SND_QUEUELEN)
        break;
      long m = n - done;
      if (m > room)
        m = room;
      if (m > SEND_CHUNK)
        m = SEND_CHUNK;
      if (copyin(pt, tmp, uva + (uint64_t)done, (size_t)m) < 0) {
        if (!done)
          done = -EFAULT;
        break;
      }
      u8_t flags = TCP_WRITE_FLAG_COPY | (done + m < n ? TCP_WRITE_FLAG_MORE : 0);
      if (tcp_write(s->pcb, tmp, (u16_t)m, flags) != ERR_OK)
        break;                   // out of segments for now: what is queued goes out
      done += m;
    }
    if (done > 0) {
      stats.bytes_out += (uint64_t)done;
      tcp_output(s->pcb);
    }
    r = done ? done : -EAGAIN;
  }
  tx_look_locked(s);
  return r;
}

// recv and send run as requests (net_run), so that under contention a caller
// that may block sleeps while the holder runs them for it, and one that may
// not goes to wait where it may (SOCK_LOCK_BUSY; kernel/sys_net.c).
struct xfer {
  int send;
  struct socket *s;
  pte_t *pt;
  uint64_t uva;
  long n, r;
};

static void xfer_section(void *arg) {
  struct xfer *x = arg;
  x->r = (x->send ? send_locked : recv_locked)(x->s, x->pt, x->uva, x->n);
}

// A receive that would find nothing, seen without the network lock: a
// connection with no data, no end of stream and no error. Most receive attempts
// look like this (matrixd's KCUC tries about five per request, three of them
// too early), and each used to take the lock only to answer -EAGAIN; on two
// harts that was a third of the lock's acquisitions, and its waiters spin.
// The look is safe because every change it could miss that makes a receive
// possible is made under the lock and followed by a wake of s->wq (recv_cb,
// err_cb, close, shutdown; a receive that empties rx without the lock only
// makes "nothing" true), and a
// caller that will wait registers on s->wq before its attempt: the fence
// below orders that registration before these loads, as waitq_wake_all's
// fence orders the writer's change before its look at the queue, so either
// this look sees the change or the wake sees the waiter. A "no" here is only
// a hint: the section under the lock decides.
static int recv_finds_nothing(struct socket *s) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  return __atomic_load_n(&s->state, __ATOMIC_RELAXED) == S_CONN &&
         !__atomic_load_n(&s->rx, __ATOMIC_RELAXED) &&
         !__atomic_load_n(&s->rx_eof, __ATOMIC_RELAXED) &&
         !__atomic_load_n(&s->rd_shut, __ATOMIC_RELAXED) &&
         !__atomic_load_n(&s->err, __ATOMIC_RELAXED) &&
         __atomic_load_n(&s->pcb, __ATOMIC_RELAXED);
}

long sock_recv(struct socket *s, pte_t *pt, uint64_t uva, long n, enum net_wait how) {
  if (recv_finds_nothing(s))
    return -EAGAIN;
  // Data, on a connection open for reading: take it without the network lock.
  // A caller that may not wait for the lock (NET_TRY) takes no more than
  // leaves the window update below WINDOW_NOW, which it could not give itself.
  long most = n;
  if (how == NET_TRY) {
    long room = (long)WINDOW_NOW - 1 - (long)__atomic_load_n(&s->unacked, __ATOMIC_RELAXED);
    most = room < n ? room : n;
  }
  if (most > 0 && !recv_locked_only && __atomic_load_n(&s->state, __ATOMIC_RELAXED) == S_CONN &&
      !__atomic_load_n(&s->rd_shut, __ATOMIC_RELAXED) && __atomic_load_n(&s->rx, __ATOMIC_ACQUIRE)) {
    long r = take_data(s, pt, uva, most);
    if (r > 0)
      window_later(s, r, how);
    if (r != -EAGAIN)            // (-EAGAIN: another call took it first; ask under the lock)
      return r;
  }
  struct xfer x = { 0, s, pt, uva, n, 0 };
  return net_run(xfer_section, &x, how) ? x.r : SOCK_LOCK_BUSY;
}

// A send tries the lock first, if it could go without it ("Sending without
// the network lock"): with the lock free it is cheaper to write at once.
long sock_send(struct socket *s, pte_t *pt, uint64_t uva, long n, enum net_wait how) {
  struct xfer x = { 1, s, pt, uva, n, 0 };
  if (n <= (long)__atomic_load_n(&s->tx_room, __ATOMIC_RELAXED)) {
    if (net_run(xfer_section, &x, NET_TRY))
      return x.r;
    long r = send_later(s, pt, uva, n);
    if (r || how == NET_TRY)
      return r ? r : SOCK_LOCK_BUSY;
  }
  return net_run(xfer_section, &x, how) ? x.r : SOCK_LOCK_BUSY;
}

int sock_shutdown(struct socket *s, int how) {
  if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
    return -EINVAL;
  net_lock();
  int r = conn_check(s);
  if (r == 0) {
    if (how != SHUT_WR)
      s->rd_shut = 1;
    if (how != SHUT_RD && !s->wr_shut) {
      tx_write_locked(s);        // the bytes of sends that returned, before the FIN
      s->wr_shut = 1;
      if (s->pcb)
        tcp_shutdown(s->pcb, 0, 1);   // sends FIN once queued data is out
    }
    wake(s);
  }
  net_unlock();
  return r;
}

// The handshake of a connection we opened completed (lwIP passes ERR_OK).
static err_t connected_cb(void *arg, struct tcp_pcb *pcb, err_t err) {
  struct socket *s = arg;
  (void)pcb;
  (void)err;
  s->state = S_CONN;
  s->conn_new = 1;
  tx_look_locked(s);
  wake(s);
  return ERR_OK;
}

// Addresses a TCP connection can never go to: 0.0.0.0/8, multicast
// (224/4) and the reserved block with the broadcast address (240/4).
static int ip_unreachable(uint32_t ip) {
  return (ip >> 24) == 0 || (ip >> 28) >= 14;
}

int sock_connect(struct socket *s, uint32_t ip, int port) {
  if (port <= 0 || port > 65535)
    return -EINVAL;
  if (ip_unreachable(ip))
    return -ENETUNREACH;
  net_lock();
  int r;
  if ((s->state == S_NEW || s->state == S_BOUND) && s->pcb) {
    ip_addr_t addr;
    ip_addr_set_ip4_u32(&addr, lwip_htonl(ip));
    // Sends the SYN (or queues it for the loopback coroutine): never done at once.
    err_t e = tcp_connect(s->pcb, &addr, (u16_t)port, connected_cb);
    if (e == ERR_OK)
      s->state = S_CONNECTING;
    r = e == ERR_OK ? -EAGAIN : e == ERR_RTE ? -ENETUNREACH : e == ERR_USE ? -EADDRINUSE
        : e == ERR_BUF ? -EADDRNOTAVAIL : lwip_errno(e);
  } else if (s->state == S_CONNECTING)
    r = s->err ? s->err : -EAGAIN;   // still going, or failed (the socket is spent then)
  else if (s->state == S_CONN) {
    r = s->conn_new ? 0 : -EISCONN;  // the call that waited for it gets 0, later ones -EISCONN
    s->conn_new = 0;
  } else
    r = s->state == S_CLOSED ? -EBADF : -EINVAL;   // a listener (or a socket without a pcb)
  net_unlock();
  return r;
}

// Let go of a connection's pcb: detach our callbacks, then close it gracefully
// (FIN), or reset it if there is unread data or lwIP cannot close it now.
static void release_conn_pcb(struct socket *s) {
  tx_write_locked(s);            // the bytes of sends that returned; none may add more
  struct tcp_pcb *pcb = detach(s);
  if (!pcb)
    return;
  if (s->rx || tcp_close(pcb) != ERR_OK)
    tcp_abort(pcb);
}

void sock_close(struct socket *s) {
  net_lock();
  if (s->state == S_LISTEN) {
    if (s->pcb) {
      tcp_arg(s->pcb, 0);
      tcp_accept(s->pcb, 0);
      tcp_close(s->pcb);         // always succeeds for a listening pcb
      s->pcb = 0;
    }
    // Connections nobody accepted: reset them.
    while (s->aq_head) {
      struct socket *c = s->aq_head;
      s->aq_head = c->aq_next;
      abort_conn(c);
    }
    s->aq_tail = 0;
    s->aq_len = 0;
  } else
    release_conn_pcb(s);
  spin_lock(&s->rxl);            // (a receive may be taking from it)
  struct pbuf *rx = s->rx;
  s->rx = 0;
  spin_unlock(&s->rxl);
  if (rx)
    pbuf_free(rx);
  s->state = S_CLOSED;
  wake(s);                       // calls still waiting fail with -EBADF
  put_locked(s);
  net_unlock();
}

// A reference is taken by someone who holds one already (a descriptor's
// file, under its process's lock: kernel/sys_net.c), so it needs no network
// lock: a few instructions, and the caller holds a spinlock.
void sock_get(struct socket *s) { __atomic_fetch_add(&s->refs, 1, __ATOMIC_RELAXED); }

// Only the last reference frees (with lwIP's pbufs, so under the lock).
void sock_put(struct socket *s) {
  int refs = __atomic_load_n(&s->refs, __ATOMIC_RELAXED);
  while (refs > 1)
    if (__atomic_compare_exchange_n(&s->refs, &refs, refs - 1, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED))
      return;
  net_lock();
  put_locked(s);
  net_unlock();
}

struct waitq *sock_waitq(struct socket *s) { return &s->wq; }

// Called in a KCO_WAIT_UNTIL condition, after its waiter is registered on
// s->wq. A receive, an accept or a connect looks without the lock, as
// recv_finds_nothing does (and for the same reason: every field read changes
// under the lock and is followed by a wake of s->wq, and the fence orders the
// registration before the loads). On two harts KTUT waited in here 2.2 times
// a request, each time spinning for the lock (ces_lock_spin). A send needs
// lwIP's count of free buffer space, read under the lock (net_lock, spinning:
// a sleep here could swallow the wake the wait is for).
int sock_ready(struct socket *s, enum sock_op op) {
  if (op == SOCK_RECV)
    return !recv_finds_nothing(s);
  if (op != SOCK_SEND) {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    enum sock_state st = __atomic_load_n(&s->state, __ATOMIC_RELAXED);
    if (op == SOCK_ACCEPT)
      return st != S_LISTEN || __atomic_load_n(&s->aq_head, __ATOMIC_RELAXED);
    return st != S_CONNECTING || __atomic_load_n(&s->err, __ATOMIC_RELAXED) ||
           !__atomic_load_n(&s->pcb, __ATOMIC_RELAXED);
  }
  net_lock();
  int r;
  if (s->state != S_CONN || s->err || !s->pcb)
    r = 1;
  else
    r = s->wr_shut || (tcp_sndbuf(s->pcb) > __atomic_load_n(&s->tx_pending, __ATOMIC_RELAXED) &&
                       tcp_sndqueuelen(s->pcb) < TCP_SND_QUEUELEN);
  net_unlock();
  return r;
}

int sock_count(void) {
  net_lock();
  int n = nsockets;
  net_unlock();
  return n;
}

static int list_len(struct tcp_pcb *pcb) {
  int n = 0;
  for (; pcb; pcb = pcb->next)
    n++;
  return n;
}

int sock_tcp_pcbs(void) {
  if (!net_started())
    return 0;
  net_lock();
  int n = list_len(tcp_bound_pcbs) + list_len(tcp_active_pcbs) + list_len(tcp_tw_pcbs);
  for (struct tcp_pcb_listen *l = tcp_listen_pcbs.listen_pcbs; l; l = l->next)
    n++;
  net_unlock();
  return n;
}

// How far lwIP's hash of connections and its counts of port users
// (net/patches/0002-tcp-pcb-hash.patch) are out of step with its lists: 0
// unless broken. For tests: it looks every pcb up and walks every bucket.
int sock_tcp_hash_bad(void) {
  if (!net_started())
    return 0;
  net_lock();
  int n = (int)tcp_pcb_hash_check();
  net_unlock();
  return n;
}

void sock_get_stats(struct sock_stats *st) {
  net_lock();
  *st = stats;
  net_unlock();
}

// Printed after the stack's line (net/net.c), once the stack runs.
static void print_stats(stats_out_fn *out) {
  if (!vnet_present() || !net_started())
    return;
  struct sock_stats ss;
  sock_get_stats(&ss);
  out("     sockets %d, tcp pcbs %d; accepted %lu, refused %lu, reset %lu; bytes in %lu, out %lu\n",
      sock_count(), sock_tcp_pcbs(), ss.accepted, ss.refused, ss.resets, ss.bytes_in, ss.bytes_out);
  out("     sends left to the lock's holder %lu (bytes waiting %ld); receive window bytes waiting %ld\n",
      sock_sends_later(), sock_send_held(), sock_window_held());
}
STATS_SOURCE(42, "net", print_stats);

// ---- the `sockets` listing (the monitor, the status key: kernel/status.c) ----
// Every TCP connection's lwIP state and what our socket holds: unread bytes,
// the peer's FIN, an error, references, and whether anyone waits on it. A
// connection whose peer has closed (CLOSE_WAIT) with its FIN unread and
// nobody waiting is a process that stopped asking; one with a waiter is a
// wake that never came. Copied under the network lock, printed after it.
#define LIST_CONNS 32              // connections shown (every one is counted by state)

struct conn_snap {
  uint16_t local, remote;
  uint8_t state, rx_eof, waiter, has_sock;
  int err, refs, rx_bytes;
};

static void print_sockets(stats_out_fn *out) {
  if (!vnet_present() || !net_started())
    return;
  struct conn_snap cs[LIST_CONNS];
  int n = 0, by_state[TIME_WAIT + 1] = { 0 }, listeners = 0;
  net_lock();
  struct tcp_pcb *lists[] = { tcp_active_pcbs, tcp_tw_pcbs };
  for (unsigned int l = 0; l < sizeof lists / sizeof lists[0]; l++)
    for (struct tcp_pcb *pcb = lists[l]; pcb; pcb = pcb->next) {
      if (pcb->state <= TIME_WAIT)
        by_state[pcb->state]++;
      if (n == LIST_CONNS)
        continue;
      struct socket *s = pcb->callback_arg;
      int unread = 0;
      if (s) {
        spin_lock(&s->rxl);
        unread = s->rx ? s->rx->tot_len : 0;
        spin_unlock(&s->rxl);
      }
      cs[n++] = (struct conn_snap){
        .local = pcb->local_port, .remote = pcb->remote_port, .state = (uint8_t)pcb->state,
        .has_sock = s != 0, .rx_eof = s && s->rx_eof, .waiter = s && s->wq.head != 0,
        .err = s ? s->err : 0, .refs = s ? s->refs : 0, .rx_bytes = unread,
      };
    }
  for (struct tcp_pcb_listen *lp = tcp_listen_pcbs.listen_pcbs; lp; lp = lp->next)
    listeners++;
  int nsock = nsockets;
  net_unlock();
  out("sockets: %d, listening %d; connections:", nsock, listeners);
  for (int st = 0; st <= TIME_WAIT; st++)
    if (by_state[st])
      out(" %s %d", tcp_debug_state_str((enum tcp_state)st), by_state[st]);
  out("%s\n", n ? "" : " none");
  for (int i = 0; i < n; i++) {
    if (!cs[i].has_sock) {
      out("  port %u peer %u %s (no socket: closed by us)\n", cs[i].local, cs[i].remote,
          tcp_debug_state_str((enum tcp_state)cs[i].state));
      continue;
    }
    out("  port %u peer %u %s | unread %d%s err %d refs %d | %s\n", cs[i].local, cs[i].remote,
        tcp_debug_state_str((enum tcp_state)cs[i].state), cs[i].rx_bytes,
        cs[i].rx_eof ? " +FIN" : "", cs[i].err, cs[i].refs, cs[i].waiter ? "waited on" : "no waiter");
  }
  if (n == LIST_CONNS)
    out("  (only the first %d shown)\n", LIST_CONNS);
}
STATS_LISTING(55, "sockets", print_sockets);
