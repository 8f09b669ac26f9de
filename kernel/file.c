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
  struct spinlock lock;
  char buf[PIPE_SIZE];
  uint64_t nread, nwrite;       // total bytes read / written; nwrite - nread is in the buffer
  int readers, writers;         // open ends
  struct waitq can_read, can_write;
};

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

struct file *file_dup(struct file *f) {
  __atomic_fetch_add(&f->ref, 1, __ATOMIC_RELAXED);
  return f;
}

void file_close(struct file *f) {
  int last = __atomic_sub_fetch(&f->ref, 1, __ATOMIC_ACQ_REL) == 0;
  if (!last)
    return;
  if (f->sock)
    sock_close(f->sock);          // the last descriptor is gone: the connection ends
  struct pipe *pi = f->pipe;
  if (pi) {
    spin_lock(&pi->lock);
    if (f->type == F_PIPE_READ)
      pi->readers--;
    else
      pi->writers--;
    int gone = pi->readers == 0 && pi->writers == 0;
    spin_unlock(&pi->lock);
    // The other side may be waiting for data or space that will never come.
    waitq_wake_all(&pi->can_read);
    waitq_wake_all(&pi->can_write);
    if (gone)
      kfree(pi);
  }
  kfree(f);
}

int pipe_create(struct file **rd, struct file **wr) {
  struct pipe *pi = kzalloc(sizeof *pi);
  if (!pi)
    return -ENOMEM;
  spin_init(&pi->lock, "pipe");
  waitq_init(&pi->can_read, "pipe-read");
  waitq_init(&pi->can_write, "pipe-write");
  pi->readers = pi->writers = 1;
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
// wait, or an error. Copies go through a small kernel bounce buffer so that no
// spinlock is held while touching user memory.
#define CHUNK FILE_CHUNK

static long pipe_read_once(struct pipe *pi, pte_t *pt, uint64_t uva, long n) {
  char tmp[CHUNK];
  spin_lock(&pi->lock);
  uint64_t avail = pi->nwrite - pi->nread;
  if (avail == 0) {
    int eof = pi->writers == 0;
    spin_unlock(&pi->lock);
    return eof ? -EPIPE : 0;     // -EPIPE here means "end of file" to the caller
  }
  long m = (long)avail < n ? (long)avail : n;
  if (m > CHUNK)
    m = CHUNK;
  for (long i = 0; i < m; i++)
    tmp[i] = pi->buf[(pi->nread + (uint64_t)i) % PIPE_SIZE];
  spin_unlock(&pi->lock);
  if (copyout(pt, uva, tmp, (size_t)m) < 0)
    return -EFAULT;
  spin_lock(&pi->lock);
  pi->nread += (uint64_t)m;      // single reader side at a time is not assumed:
  spin_unlock(&pi->lock);        // concurrent readers may interleave chunks
  waitq_wake_all(&pi->can_write);
  return m;
}

static long pipe_write_once(struct pipe *pi, pte_t *pt, uint64_t uva, long n) {
  char tmp[CHUNK];
  long m = n < CHUNK ? n : CHUNK;
  spin_lock(&pi->lock);
  if (pi->readers == 0) {
    spin_unlock(&pi->lock);
    return -EPIPE;
  }
  uint64_t space = PIPE_SIZE - (pi->nwrite - pi->nread);
  spin_unlock(&pi->lock);
  if (space == 0)
    return 0;
  if ((uint64_t)m > space)
    m = (long)space;
  if (copyin(pt, tmp, uva, (size_t)m) < 0)
    return -EFAULT;
  spin_lock(&pi->lock);
  for (long i = 0; i < m; i++)
    pi->buf[(pi->nwrite + (uint64_t)i) % PIPE_SIZE] = tmp[i];
  pi->nwrite += (uint64_t)m;
  spin_unlock(&pi->lock);
  waitq_wake_all(&pi->can_read);
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
    KCO_WAIT_UNTIL(&pi->can_read, (killed && *killed) || pi->nwrite != pi->nread || pi->writers == 0);
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
    KCO_WAIT_UNTIL(&pi->can_write, (killed && *killed) || pi->readers == 0 ||
                                       pi->nwrite - pi->nread < PIPE_SIZE);
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
