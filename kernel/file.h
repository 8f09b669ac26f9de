// Open files: the console, the two ends of pipes and sockets (net/socket.c),
// reference-counted so that a child can share its parent's descriptors.
//
// Reads and writes come in two forms. With may_block = 0 they never wait and
// return -EAGAIN when they would have to; the system-call layer then hands the
// call to a kernel coroutine, which repeats it with may_block = 1 (and must be
// a stackful coroutine).
#ifndef FILE_H
#define FILE_H
#include <stdint.h>
#include "uvm.h"
#include "spinlock.h"

enum file_type { F_CONSOLE = 1, F_PIPE_READ, F_PIPE_WRITE, F_SOCKET };

struct pipe;
struct socket;
struct worker;

// Transfers move at most this many bytes per copy (a kernel bounce buffer); a
// transfer no longer than this, within one page, is one copy, checked before
// anything is committed (kernel/syscall.c relies on it for pipes; the console
// takes its input before it copies it out).
#define FILE_CHUNK 256

struct file {
  enum file_type type;
  int ref;                      // references (descriptors, calls in progress); atomic
  struct pipe *pipe;
  struct socket *sock;          // F_SOCKET (net/socket.h): its transfers go through kernel/sys_net.c
};

struct file *file_console(void);              // a new reference to the console
// Another reference to f. (Inline: an async read of a pipe that parks takes
// one, and the call cost its round trip 10 instructions.)
static inline struct file *file_dup(struct file *f) {
  __atomic_fetch_add(&f->ref, 1, __ATOMIC_RELAXED);
  return f;
}
void file_close(struct file *f);
int pipe_create(struct file **rd, struct file **wr);   // 0 or -ENOMEM

// An async read parked on a pipe (kernel/syswork.c): a writer hands it bytes
// straight into its buffer, and a close of the last write end its end of
// file, with no coroutine to wake. Under the pipe's lock the pipe claims
// the read by swapping *owner from `mine` to 0 (the caller's ownership rule:
// whoever swaps it completes the read; a pipe that loses leaves it parked);
// after the lock is released it calls done() with `result` set (bytes, 0 at
// end of file, or -EFAULT). (A word to swap rather than a claim() to call:
// the call cost the async round trip 16 instructions.)
struct pipe_reader {
  struct pipe_reader *next, *prev;   // on the pipe's parked list, FIFO
  int linked;
  pte_t *pt;                    // the reader's page table, buffer and length
  uint64_t uva;
  long n;
  long result;
  struct worker **owner;        // the ownership word, and its value while parked
  struct worker *mine;          // (kernel/syswork.c's record: its only user)
  void (*done)(struct pipe_reader *r);
};
// f is a pipe's read end (that looked empty): park r, or, if bytes or the
// end of file are there after all, read now into r's buffer (1: parked; 0:
// not, r->result set as done() would find it). One lock hold either way.
int pipe_park_reader(struct file *f, struct pipe_reader *r);
// A pipe's lock and counts: the first member of its struct (kernel/file.c),
// so that pipe_looks_empty can glance at the counts inline.
struct pipe_head {
  struct spinlock lock;
  uint64_t nread, nwrite;       // total bytes read / written; nwrite - nread is in the buffer
  int readers, writers;         // open ends
};
// A glance without the lock: nothing buffered and a writer left (a read would
// wait). Only a hint: pipe_park_reader decides under the lock. (Inline: the
// async read's submit asks it; the call cost its round trip 13 instructions.)
static inline int pipe_looks_empty(struct file *f) {
  const struct pipe_head *h = (const struct pipe_head *)(const void *)f->pipe;
  return __atomic_load_n(&h->nwrite, __ATOMIC_RELAXED) == __atomic_load_n(&h->nread, __ATOMIC_RELAXED) &&
         __atomic_load_n(&h->writers, __ATOMIC_RELAXED) > 0;
}
// Take r off f's pipe if it is still parked (exit; r is the caller's by the owner word's rule).
void pipe_unpark_reader(struct file *f, struct pipe_reader *r);
// The queue a transfer that returned -EAGAIN waits on (its event: data or
// space in a pipe), or 0 if the file cannot name one (the console).
struct waitq *file_waitq(struct file *f, int is_write);
// After a waiter has registered on file_waitq(f, ...) = q (and fenced, as
// waitq_add does): 0 if the event q announces has certainly not come yet, so
// a transfer tried now would find nothing to do and the caller may simply
// wait; 1 if it may have (or f cannot tell). Lock-free: a glance.
int file_wait_may_be_over(struct file *f, struct waitq *q);
struct file *file_socket(struct socket *s);           // takes over the caller's socket reference; NULL: no memory
// Transfer between the file and user memory at uva in pagetable pt.
// killed (may be NULL) is polled while blocked: a kill ends the wait with -EINTR.
long file_read(struct file *f, pte_t *pt, uint64_t uva, long n, int may_block, volatile int *killed);
long file_write(struct file *f, pte_t *pt, uint64_t uva, long n, int may_block, volatile int *killed);

#endif
