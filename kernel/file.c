// Console and pipe files (see file.h).
#include "file.h"
#include "abi.h"
#include "kco.h"
#include "klib.h"
#include "kmalloc.h"
#include "printf.h"
#include "uart.h"
#include "waitq.h"
#include "socket.h"

struct pipe {
  struct pipe_head h;           // first: pipe_looks_empty (file.h) reads it through f->pipe
  char buf[PIPE_SIZE];
  struct waitq can_read, can_write;
  struct pipe_reader *parked, *parked_tail;   // async reads fed by writers (file.h)
};

_Static_assert(offsetof(struct pipe, h) == 0, "pipe_looks_empty reads a pipe as its head");

static void feed_parked(struct pipe *pi, int eof, struct pipe_reader **done);
static void finish_parked(struct pipe_reader *r);

static struct file *file_new(enum file_type type, struct pipe *pi) {
  struct file *f = kmalloc(sizeof *f);
  if (!f)
    return 0;
  f->type = type;
  f->ref = 1;
  f->pipe = pi;
  f->sock = 0;
  return f;
}

struct file *file_socket(struct socket *s) {
  struct file *f = file_new(F_SOCKET, 0);
  if (f)
    f->sock = s;
  return f;
}

struct file *file_console(void) { return file_new(F_CONSOLE, 0); }

void file_close(struct file *f) {
  int last = __atomic_sub_fetch(&f->ref, 1, __ATOMIC_ACQ_REL) == 0;
  if (!last)
    return;
  if (f->sock)
    sock_close(f->sock);          // the last descriptor is gone: the connection ends
  struct pipe *pi = f->pipe;
  struct pipe_reader *fed = 0;
  if (pi) {
    spin_lock(&pi->h.lock);
    if (f->type == F_PIPE_READ)
      pi->h.readers--;
    else
      pi->h.writers--;
    if (pi->h.writers == 0 && pi->parked)
      feed_parked(pi, 1, &fed);  // end of file for the parked reads
    int gone = pi->h.readers == 0 && pi->h.writers == 0;
    spin_unlock(&pi->h.lock);
    // The other side may be waiting for data or space that will never come.
    waitq_wake_all(&pi->can_read);
    waitq_wake_all(&pi->can_write);
    if (gone)
      kfree(pi);
  }
  kfree(f);
  finish_parked(fed);            // last: each holds the read end, so pi was not gone; done() may free it
}

int pipe_create(struct file **rd, struct file **wr) {
  struct pipe *pi = kzalloc(sizeof *pi);
  if (!pi)
    return -ENOMEM;
  spin_init(&pi->h.lock, "pipe");
  waitq_init(&pi->can_read, "pipe-read");
  waitq_init(&pi->can_write, "pipe-write");
  pi->h.readers = pi->h.writers = 1;
  *rd = file_new(F_PIPE_READ, pi);
  *wr = file_new(F_PIPE_WRITE, pi);
  if (!*rd || !*wr) {
    kfree(*rd);
    kfree(*wr);
    kfree(pi);
    return -ENOMEM;
  }
  return 0;
}

// ---- pipes ----
// One attempt: move what can be moved now. Returns bytes moved, 0 if it must
// wait, or an error. The bytes go straight between the user's buffer and the
// pipe's, with the lock held: copyin/copyout walk the page table in software
// and never fault, so holding a spinlock across them is safe, and one lock
// round per transfer (it was two, with a bounce buffer between) halves a
// pipe's locking. A transfer is at most CHUNK bytes per lock hold, to bound
// how long the hart runs with interrupts masked; an address that turns out
// bad fails the attempt before anything is committed.
#define CHUNK FILE_CHUNK

// The ring buffer's bytes [pos, pos + m) are at most two runs: up to the end
// of buf, then from its start.
static long pipe_span(uint64_t pos, long m) {
  long first = PIPE_SIZE - (long)(pos % PIPE_SIZE);
  return m < first ? m : first;
}

// pipe_take's bytes [nread, nread + m) wrap around the buffer's end: two
// copies. (Out of line: the values the second copy keeps live cost the
// common single copy saved registers.)
static __attribute__((noinline)) long pipe_take_wrapped(struct pipe *pi, pte_t *pt, uint64_t uva,
                                                        long m, long first) {
  if (copyout(pt, uva, &pi->buf[pi->h.nread % PIPE_SIZE], (size_t)first) < 0 ||
      copyout(pt, uva + (uint64_t)first, pi->buf, (size_t)(m - first)) < 0)
    return -EFAULT;
  pi->h.nread += (uint64_t)m;    // (concurrent readers get whole chunks each)
  return m;
}

// (lock held, bytes buffered) Move up to n of them to the user's buffer:
// how many, or -EFAULT with nothing moved. (Inline: in a parked read's feed
// the call cost 8 instructions.)
static inline __attribute__((always_inline)) long pipe_take(struct pipe *pi, pte_t *pt, uint64_t uva, long n) {
  uint64_t avail = pi->h.nwrite - pi->h.nread;
  long m = (long)avail < n ? (long)avail : n;
  if (m > CHUNK)
    m = CHUNK;
  long first = pipe_span(pi->h.nread, m);
  if (m > first)
    return pipe_take_wrapped(pi, pt, uva, m, first);
  if (copyout(pt, uva, &pi->buf[pi->h.nread % PIPE_SIZE], (size_t)m) < 0)
    return -EFAULT;
  pi->h.nread += (uint64_t)m;
  return m;
}

// pipe_take as a call, where it is rare: inlined in pipe_park_reader, its
// registers cost every park 9 instructions more.
static __attribute__((noinline)) long pipe_take_call(struct pipe *pi, pte_t *pt, uint64_t uva, long n) {
  return pipe_take(pi, pt, uva, n);
}

static long pipe_read_once(struct pipe *pi, pte_t *pt, uint64_t uva, long n) {
  spin_lock(&pi->h.lock);
  if (pi->h.nwrite == pi->h.nread) {
    int eof = pi->h.writers == 0;
    spin_unlock(&pi->h.lock);
    return eof ? -EPIPE : 0;     // -EPIPE here means "end of file" to the caller
  }
  long m = pipe_take(pi, pt, uva, n);
  spin_unlock(&pi->h.lock);
  if (m > 0)
    waitq_wake_all(&pi->can_write);
  return m;
}

// ---- async reads parked on the pipe (file.h) ----
// The writer serves them before anyone else, in the order they parked, while
// it holds the lock it took for its own copy: a read completed this way costs
// no lock round, no wait queue and no kernel coroutine.
static void unlink_reader(struct pipe *pi, struct pipe_reader *r) {
  if (r->prev)
    r->prev->next = r->next;
  else
    pi->parked = r->next;
  if (r->next)
    r->next->prev = r->prev;
  else
    pi->parked_tail = r->prev;
  r->linked = 0;
}

// feed_parked's step for one read r: 1 if this side claimed and fed it.
// (Out of line: in the loop, GCC kept the copy's constants and values in
// saved registers, twelve of them.)
static __attribute__((noinline)) int feed_one(struct pipe *pi, struct pipe_reader *r) {
  struct worker *mine = r->mine;
  if (!__atomic_compare_exchange_n(r->owner, &mine, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    return 0;                    // its owner takes it off (pipe_unpark_reader)
  unlink_reader(pi, r);
  r->result = pi->h.nwrite != pi->h.nread ? pipe_take(pi, r->pt, r->uva, r->n) : 0;
  return 1;
}

// (lock held) Give the buffered bytes (then, if eof, the end of file) to the
// parked reads this side claims (file.h); they go on *done (to be done()
// once the lock is released).
static void feed_parked(struct pipe *pi, int eof, struct pipe_reader **done) {
  for (struct pipe_reader *r = pi->parked, *next; r && (eof || pi->h.nwrite != pi->h.nread); r = next) {
    next = r->next;
    if (feed_one(pi, r)) {
      r->next = *done;
      *done = r;
    }
  }
}

static void finish_parked(struct pipe_reader *r) {
  for (struct pipe_reader *next; r; r = next) {
    next = r->next;              // (done() may free r)
    r->done(r);
  }
}

int pipe_park_reader(struct file *f, struct pipe_reader *r) {
  struct pipe *pi = f->pipe;
  spin_lock(&pi->h.lock);
  int park = pi->h.nwrite == pi->h.nread && pi->h.writers > 0;
  if (park) {
    r->next = 0;
    r->prev = pi->parked_tail;
    if (pi->parked_tail)
      pi->parked_tail->next = r;
    else
      pi->parked = r;
    pi->parked_tail = r;
    r->linked = 1;
  } else {                       // bytes or the end of file came meanwhile: read now
    r->result = pi->h.nwrite != pi->h.nread ? pipe_take_call(pi, r->pt, r->uva, r->n) : 0;
  }
  spin_unlock(&pi->h.lock);
  if (!park && r->result > 0)
    waitq_wake_all(&pi->can_write);
  return park;
}

void pipe_unpark_reader(struct file *f, struct pipe_reader *r) {
  struct pipe *pi = f->pipe;
  spin_lock(&pi->h.lock);
  if (r->linked)
    unlink_reader(pi, r);
  spin_unlock(&pi->h.lock);
}

static long pipe_write_once(struct pipe *pi, pte_t *pt, uint64_t uva, long n) {
  long m = n < CHUNK ? n : CHUNK;
  spin_lock(&pi->h.lock);
  if (pi->h.readers == 0) {
    spin_unlock(&pi->h.lock);
    return -EPIPE;
  }
  uint64_t space = PIPE_SIZE - (pi->h.nwrite - pi->h.nread);
  if ((uint64_t)m > space)
    m = (long)space;
  long first = pipe_span(pi->h.nwrite, m);
  int bad = m > 0 && (copyin(pt, &pi->buf[pi->h.nwrite % PIPE_SIZE], uva, (size_t)first) < 0 ||
                      (m > first && copyin(pt, pi->buf, uva + (uint64_t)first, (size_t)(m - first)) < 0));
  struct pipe_reader *fed = 0;
  if (!bad) {
    pi->h.nwrite += (uint64_t)m; // (bytes past nwrite are not data until this)
    if (pi->parked)
      feed_parked(pi, 0, &fed);
  }
  spin_unlock(&pi->h.lock);
  if (bad)
    return -EFAULT;
  if (m)
    waitq_wake_all(&pi->can_read);
  finish_parked(fed);            // (our write end keeps the pipe)
  return m;
}

static long pipe_read(struct pipe *pi, pte_t *pt, uint64_t uva, long n, int may_block,
                      volatile int *killed) {
  long r;
  for (;;) {
    r = pipe_read_once(pi, pt, uva, n);
    if (r != 0)
      break;
    if (!may_block)
      return -EAGAIN;
    KCO_WAIT_UNTIL(&pi->can_read, (killed && *killed) || pi->h.nwrite != pi->h.nread || pi->h.writers == 0);
    if (killed && *killed)
      return -EINTR;
  }
  return r == -EPIPE ? 0 : r;    // no writers and nothing buffered: end of file
}

static long pipe_write(struct pipe *pi, pte_t *pt, uint64_t uva, long n, int may_block,
                       volatile int *killed) {
  long done = 0;
  while (done < n) {
    long r = pipe_write_once(pi, pt, uva + (uint64_t)done, n - done);
    if (r < 0)
      return done ? done : r;
    if (r > 0) {
      done += r;
      continue;
    }
    if (!may_block)
      return done ? done : -EAGAIN;
    KCO_WAIT_UNTIL(&pi->can_write, (killed && *killed) || pi->h.readers == 0 ||
                                       pi->h.nwrite - pi->h.nread < PIPE_SIZE);
    if (killed && *killed)
      return done ? done : -EINTR;
  }
  return done;
}

// ---- console ----
// (noinline: inlined into file_write, its buffer would give every pipe write a
// 300-byte frame and eight saved registers; bench-micro saw 14 instructions)
static __attribute__((noinline)) long console_write(pte_t *pt, uint64_t uva, long n) {
  char tmp[CHUNK];
  long done = 0;
  while (done < n) {
    long m = n - done < CHUNK ? n - done : CHUNK;
    if (copyin(pt, tmp, uva + (uint64_t)done, (size_t)m) < 0)
      return done ? done : -EFAULT;
    console_put(tmp, (size_t)m);
    done += m;
  }
  return done;
}

static long console_read(pte_t *pt, uint64_t uva, long n, int may_block, volatile int *killed) {
  char tmp[CHUNK];
  long m = 0;
  int c;
  while (m < n && m < CHUNK && console_trygetc(&c)) {
    tmp[m++] = (char)c;
    if (c == '\n' || c == '\r')
      break;
  }
  if (m == 0) {
    if (!may_block)
      return -EAGAIN;
    c = console_getc_killable(killed);
    if (c < 0)
      return -EINTR;
    tmp[m++] = (char)c;
  }
  return copyout(pt, uva, tmp, (size_t)m) < 0 ? -EFAULT : m;
}

struct waitq *file_waitq(struct file *f, int is_write) {
  if (f->type == F_PIPE_READ && !is_write)
    return &f->pipe->can_read;
  if (f->type == F_PIPE_WRITE && is_write)
    return &f->pipe->can_write;
  return 0;
}

// A waiter links itself and fences (waitq_add) before this glance; a pipe's
// side changes its counts and then looks for waiters (waitq_wake_all, after
// a fence). So either this sees the change or the changer sees the waiter.
int file_wait_may_be_over(struct file *f, struct waitq *q) {
  struct pipe *pi = f->pipe;
  if (!pi)
    return 1;
  uint64_t nread = __atomic_load_n(&pi->h.nread, __ATOMIC_RELAXED);
  uint64_t nwrite = __atomic_load_n(&pi->h.nwrite, __ATOMIC_RELAXED);
  if (q == &pi->can_read)
    return nwrite != nread || __atomic_load_n(&pi->h.writers, __ATOMIC_RELAXED) == 0;
  if (q == &pi->can_write)
    return nwrite - nread < PIPE_SIZE || __atomic_load_n(&pi->h.readers, __ATOMIC_RELAXED) == 0;
  return 1;
}

long file_read(struct file *f, pte_t *pt, uint64_t uva, long n, int may_block, volatile int *killed) {
  switch (f->type) {
  case F_CONSOLE:
    return console_read(pt, uva, n, may_block, killed);
  case F_PIPE_READ:
    return pipe_read(f->pipe, pt, uva, n, may_block, killed);
  default:
    return -EBADF;
  }
}

long file_write(struct file *f, pte_t *pt, uint64_t uva, long n, int may_block, volatile int *killed) {
  switch (f->type) {
  case F_CONSOLE:
    return console_write(pt, uva, n);
  case F_PIPE_WRITE:
    return pipe_write(f->pipe, pt, uva, n, may_block, killed);
  default:
    return -EBADF;
  }
}
