// matrixd's thread models, KCUT and KTUT (the kernel mode, set by main, is the
// only difference): every connection is three user threads making ordinary,
// synchronous calls, so a thread that waits is blocked by the kernel:
//
//   receiver --pipe a--> handler --pipe b--> sender
//
// There is no futex, so the queues are pipes that carry message pointers (8
// bytes each); a thread waiting for work blocks in read. End of file carries
// "no more": each part closes the write end it owns when it stops, and the
// next one finishes what is queued and stops too. The last of the three hands
// the connection to the reaper (main's thread) through another pipe; it joins
// the threads, closes the socket and frees everything.
//
// What the thread models do not do, and why:
//   - Priorities. Threads have no priority of their own: the kernel ranks a
//     process by its executor (the coroutine main runs on), and these threads
//     run no coroutines. prio=P in the handshake and -P are accepted and
//     ignored; every connection gets the process's priority.
//   - A timer for stalled requests. A receiver blocked in recv has nobody to
//     wake it after 2 s, so the stall rule is applied when the next bytes
//     arrive: a request whose first part has waited MD_STALL_MS or more gets
//     "error: incomplete request" then, and the new bytes start afresh.
//   - A timer of its own for a sender stuck on a peer that does not read: the
//     receiver watches it while it waits for the sender (back-pressure, or the
//     end of the connection). A receiver blocked in recv cannot, so a peer that
//     keeps its connection open, idle, and never reads holds on to that
//     connection (and only that one) until it goes away.
// At most (MAXTHREADS_ABI - 2) / 3 connections: two threads (main, the accept
// loop) plus three per connection.
#include "matrixd.h"

struct tconn {
  int fd;
  int a[2], b[2];            // receiver -> handler -> sender
  int tid[3];                // receiver, handler, sender; -1 if never started
  int refs;                  // threads still running, plus the creator's
  int dead;                  // stop: the socket is shut down
  long outstanding;          // replies made and not yet sent
  long send_since;           // uptime when the sender's current send began; 0: none
  struct md_parse ps;
};

static int lfd;
static int reap[2];          // finished connections, to the reaper
// uthread_create and uthread_join share ulib's table of thread stacks: the
// accept loop creates and the reaper joins, never both at once.
static volatile int thread_lock;

static void tlock(void) { ulock_acquire(&thread_lock); }
static void tunlock(void) { ulock_release(&thread_lock); }

// Whole pointers through a pipe (a read or write may in principle move fewer
// bytes than asked). 1 = done, 0 = end of file, < 0 = error.
static int put(int fd, void *p) {
  const char *s = (const char *)&p;
  for (long off = 0; off < (long)sizeof p;) {
    long r = write(fd, s + off, (long)sizeof p - off);
    if (r <= 0)
      return r < 0 ? (int)r : -EPIPE;
    off += r;
  }
  return 1;
}

static int get(int fd, void *pp) {
  char *s = pp;
  for (long off = 0; off < (long)sizeof(void *);) {
    long r = read(fd, s + off, (long)sizeof(void *) - off);
    if (r <= 0)
      return off == 0 && r == 0 ? 0 : (r < 0 ? (int)r : -EIO);
    off += r;
  }
  return 1;
}

static void conn_kill(struct tconn *c) {
  if (__atomic_exchange_n(&c->dead, 1, __ATOMIC_SEQ_CST) == 0)
    shutdown(c->fd, SHUT_RDWR);   // ends a recv or send another part waits in
}

static void conn_put(struct tconn *c) {
  if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_SEQ_CST) == 0)
    put(reap[1], c);
}

// ---- the three parts ----

static void emit_ut(void *ctx, struct md_msg *m) {
  struct tconn *c = ctx;
  md_count(&c->outstanding, 1);
  if (put(c->a[1], m) < 0) {
    md_msg_free(m);
    md_count(&c->outstanding, -1);
  }
}

static int dead(struct tconn *c) { return __atomic_load_n(&c->dead, __ATOMIC_SEQ_CST); }

// Wait (polling: there is no futex) while more than `limit` replies are
// outstanding. This thread is the sender's watchdog meanwhile: a send stuck
// for MD_SEND_TIMEOUT_MS ends the connection. Only a peer that does not read
// keeps us here for long.
static void wait_sender(struct tconn *c, long limit) {
  while (md_get(&c->outstanding) > limit && !dead(c)) {
    long since = __atomic_load_n(&c->send_since, __ATOMIC_SEQ_CST);
    if (since && uptime() - since >= MD_SEND_TIMEOUT_MS)
      conn_kill(c);
    else
      sleep(5);
  }
}

static int receiver(void *arg) {
  struct tconn *c = arg;
  char buf[MD_RECV_BYTES];
  while (!dead(c)) {
    wait_sender(c, MD_MAX_OUTSTANDING - 1);     // back-pressure
    long want = md_recv_size(&c->ps);
    long r = recv(c->fd, buf, want);
    if (dead(c))
      break;
    if (r < 0) {               // reset (or another error): end it at once
      conn_kill(c);
      break;
    }
    if (r == 0)                // the peer has closed: answer what came, then close
      break;
    int prio = 0;              // (ignored: see the top of this file)
    int f = MD_FEED_OK;
    if (mp_buffered(&c->ps.p) && uptime() - c->ps.last_rx >= MD_STALL_MS)
      f = md_parse_stall(&c->ps, emit_ut, c, &prio);
    if (f == MD_FEED_OK)
      f = md_parse_feed(&c->ps, buf, (size_t)r, md_more_pending(want, r), emit_ut, c, &prio);
    if (f == MD_FEED_NOMEM)
      conn_kill(c);
    if (f != MD_FEED_OK)
      break;
  }
  // A graceful end (the peer closed or said "close connection"): the replies
  // still queued go out first, unless the peer stops reading them.
  wait_sender(c, 0);
  close(c->a[1]);              // the handler sees end of file
  conn_put(c);
  return 0;
}

static int handler(void *arg) {
  struct tconn *c = arg;
  struct md_msg *m;
  while (get(c->a[0], &m) == 1) {
    if (m->kind == MD_REQUEST) {
      if (dead(c) || (m = md_handle(m)) == NULL) {
        if (m)
          md_msg_free(m);
        conn_kill(c);
        md_count(&c->outstanding, -1);
        continue;              // drain the rest: the receiver must not block on a full pipe
      }
    }
    if (put(c->b[1], m) < 0) {
      md_msg_free(m);
      md_count(&c->outstanding, -1);
    }
  }
  close(c->a[0]);
  close(c->b[1]);              // the sender sees end of file
  conn_put(c);
  return 0;
}

static int sender(void *arg) {
  struct tconn *c = arg;
  struct md_msg *m;
  while (get(c->b[0], &m) == 1) {
    size_t off = 0;
    while (off < m->len && !dead(c)) {
      __atomic_store_n(&c->send_since, uptime(), __ATOMIC_SEQ_CST);
      long r = send(c->fd, m->text + off, (long)(m->len - off));
      __atomic_store_n(&c->send_since, 0, __ATOMIC_SEQ_CST);
      if (r <= 0) {
        conn_kill(c);
        break;
      }
      off += (size_t)r;
    }
    if (off == m->len && m->answer)
      md_count(&md_tot.served, 1);
    md_msg_free(m);
    md_count(&c->outstanding, -1);
  }
  close(c->b[0]);
  conn_put(c);
  return 0;
}

// ---- accept loop and reaper ----

// Start a connection's threads; on failure, close what the missing parts
// would have closed, so the started ones end. The connection always reaches
// the reaper (the creator holds a reference until here).
static int conn_start(struct tconn *c) {
  static int (*const parts[3])(void *) = { sender, handler, receiver };
  static const int slot[3] = { 2, 1, 0 };
  int ok = 1;
  c->refs = 1;
  tlock();
  for (int i = 0; i < 3; i++) {
    __atomic_add_fetch(&c->refs, 1, __ATOMIC_SEQ_CST);
    int tid = uthread_create(parts[i], c);
    if (tid < 0) {
      __atomic_sub_fetch(&c->refs, 1, __ATOMIC_SEQ_CST);
      // Ends owned by the parts that did not start: sender b[0];
      // handler a[0], b[1]; receiver a[1].
      if (i == 0)
        close(c->b[0]);
      if (i <= 1) {
        close(c->a[0]);
        close(c->b[1]);
      }
      close(c->a[1]);
      conn_kill(c);
      ok = 0;
      break;
    }
    c->tid[slot[i]] = tid;
  }
  tunlock();
  conn_put(c);
  return ok;
}

static int acceptor(void *arg) {
  (void)arg;
  int complained = 0;
  for (;;) {
    int fd = accept(lfd);
    if (fd == -EMFILE) {
      md_count(&md_tot.refused, 1);          // the kernel reset it: no descriptor
      continue;
    }
    if (fd < 0) {
      if (!complained++)
        md_log("matrixd: accept failed: %d %s (retrying)\n", fd, errname(fd));
      sleep(100);
      continue;
    }
    complained = 0;
    if (md_get(&md_tot.open) >= md_cfg.max_conns) {
      close(fd);
      md_count(&md_tot.refused, 1);
      continue;
    }
    struct tconn *c = calloc(1, sizeof *c);
    if (c && md_parse_init(&c->ps) < 0) {
      free(c);
      c = 0;
    }
    if (c && pipe(c->a) < 0) {
      md_parse_free(&c->ps);
      free(c);
      c = 0;
    }
    if (c && pipe(c->b) < 0) {
      close(c->a[0]);
      close(c->a[1]);
      md_parse_free(&c->ps);
      free(c);
      c = 0;
    }
    if (!c) {
      close(fd);
      md_count(&md_tot.refused, 1);
      continue;
    }
    c->fd = fd;
    c->tid[0] = c->tid[1] = c->tid[2] = -1;
    md_count(&md_tot.open, 1);
    if (conn_start(c)) {
      md_count(&md_tot.conns, 1);
      md_opened();
    } else
      md_count(&md_tot.refused, 1);
  }
  return 0;
}

static void nap(long ms) { sleep(ms); }

int md_run_ut(int listen_fd) {
  lfd = listen_fd;
  if (pipe(reap) < 0 || uthread_create(acceptor, 0) < 0) {
    printf("matrixd: cannot start the accept loop\n");
    return 1;
  }
  // The baseline waits for the accept loop to be in accept, where it waits
  // from now on: the standing state the idle reports return to.
  md_print_baseline(nap);
  for (;;) {
    struct tconn *c;
    if (get(reap[0], &c) != 1)
      return 1;
    tlock();
    for (int i = 0; i < 3; i++)
      if (c->tid[i] >= 0)
        uthread_join(c->tid[i], 0);
    tunlock();
    close(c->fd);
    md_parse_free(&c->ps);
    free(c);
    md_count(&md_tot.open, -1);
    if (md_get(&md_tot.open) > 0)
      continue;
    // The last connection is gone: report once the kernel has let go of it
    // too (TIME_WAIT, memory freed after close), or after MD_IDLE_WAIT_MS.
    long deadline = uptime() + MD_IDLE_WAIT_MS;
    struct md_kstat k;
    for (;;) {
      if (md_get(&md_tot.open) > 0)
        break;
      md_kstat_read(&k);
      if (md_kstat_at_baseline(&k) || uptime() >= deadline) {
        md_print_idle(&k);
        break;
      }
      sleep(MD_IDLE_POLL_MS);
    }
  }
}
