// What the system-call layer shares between its files: the call's arguments as
// the kernel keeps them, the handler type, and the descriptor helpers.
//
//   kernel/syscall.c   dispatch, the call table, the general calls
//   kernel/sys_net.c   the socket calls
//   kernel/syswork.c   the kernel coroutines that finish calls that must wait
//   kernel/sysargs.c   what they share: descriptors, user ranges, sysargs_release
// Calls go down that list and never back up: syscall.c uses the other three,
// sys_net.c and syswork.c use only sysargs.c (syswork.c repeats a call through
// sa->call, the handler that dispatch looked up, not through the table).
#ifndef SYSARGS_H
#define SYSARGS_H
#include <stdint.h>
#include "proc.h"

#define WOULD_BLOCK (-1000)        // internal: never returned to user space
// internal too: the caller's thread must give up its hart to the threads that
// wait for one, then make the same call again (its ecall runs again, with the
// same arguments: kernel/syscall.c, KSTAT_QUIET on one hart)
#define AGAIN_AFTER_OTHERS (-1001)
_Static_assert(AGAIN_AFTER_OTHERS < WOULD_BLOCK, "syscall_dispatch tests r <= WOULD_BLOCK for both");

struct socket;
struct waitq;
struct sysargs;

// A call handler. may_block 0: never wait; return WOULD_BLOCK instead (and
// fill wq or deadline if the event is known). may_block 1: wait as needed
// (only ever on a stackful kernel coroutine).
typedef long (*syscall_fn)(struct thread *t, struct sysargs *sa, int may_block);

// A call's arguments, copied out of the user registers (an async call's kernel
// coroutine keeps running after the process has moved on), and what the call
// found out about waiting.
struct sysargs {                   // (syscall_dispatch sets every field: keep it in step)
  uint64_t nr;
  // The six arguments: while the call is tried in the trap (dispatch), the
  // thread's saved a0-a5 themselves; a call that goes on in a kernel
  // coroutine gets its own copy (args), since the thread's registers move on.
  // Handlers read sa->a[i] either way. (Copying them on every call cost a
  // dozen instructions for nothing in the common case.)
  const uint64_t *a;
  uint64_t args[6];
  syscall_fn call;                 // its handler, from the call table
  // Set by a call that returns WOULD_BLOCK (may_block = 0), so that a kernel
  // coroutine without a stack of its own can wait for it:
  struct waitq *wq;                // the queue its event is announced on
  uint64_t deadline;               // or the rdtime value it waits for (0: none)
  // Held for the whole call, across attempts: released by sysargs_release.
  struct socket *sock;             // the socket it works on (a reference)
  struct file *file;               // or the file (a reference), once a pipe transfer waits
};

// Is the call being tried in the trap, by the calling thread itself (not by a
// kernel coroutine that took it over)? Its arguments are then the thread's
// own registers (see a above).
static inline int sysargs_in_trap(const struct thread *t, const struct sysargs *sa) {
  return sa->a == &t->uc.x[REG_A0];
}

// Drop the references sa holds (kernel/sysargs.c).
void sysargs_release(struct sysargs *sa);

// Descriptors and user ranges (kernel/sysargs.c).
struct file;
static inline struct file *fd_file(struct proc *p, uint64_t fd) { return fdt_lookup(&p->fds, fd); }
// The same with a reference of the caller's own (file_close gives it back),
// taken under the lock close() clears slots under; 0 if fd is not open.
struct file *fd_file_hold(struct proc *p, uint64_t fd);
int fd_alloc(struct proc *p, struct file *f);          // fd, or -EMFILE / -ENOMEM
struct file *fd_take(struct proc *p, uint64_t fd);     // empty the slot: its file (the caller's now) or 0
int user_range_ok(struct proc *p, uint64_t uva, uint64_t len, uint64_t perm);

// The socket calls (kernel/sys_net.c).
long sys_socket(struct thread *t, struct sysargs *sa, int may_block);
long sys_bind(struct thread *t, struct sysargs *sa, int may_block);
long sys_listen(struct thread *t, struct sysargs *sa, int may_block);
long sys_accept(struct thread *t, struct sysargs *sa, int may_block);
long sys_recv(struct thread *t, struct sysargs *sa, int may_block);
long sys_send(struct thread *t, struct sysargs *sa, int may_block);
long sys_shutdown(struct thread *t, struct sysargs *sa, int may_block);
long sys_connect(struct thread *t, struct sysargs *sa, int may_block);

// Hand a call that returned WOULD_BLOCK to a kernel coroutine, chosen by the
// process's kernel mode (KMODE_*; kernel/syswork.c). cid != 0: an async call
// of user coroutine cid, completed through the ring; cid == 0: a synchronous
// call of thread t, which the caller has already marked T_BLOCKED. Takes over
// what sa holds. 0, or -ENOMEM / -EINTR (then sa is still the caller's).
int syswork_start(struct thread *t, struct sysargs *sa, cid_t cid, uint32_t prio);
// KMODE_COROUTINE's way for an async read of a pipe's read end f that looked
// empty, n bytes at uva (checked as a read's): no kernel coroutine, the call
// parks on the pipe and the writer completes it (kernel/syswork.c). Takes
// over the caller's reference to f unless it answers 1. 0: under way (or
// already completed through the ring); 1: all of the process's park slots are
// taken (nothing done: give it a coroutine); -ENOMEM.
int syswork_park_read(struct thread *t, struct file *f, uint64_t uva, long n, cid_t cid);
// KMODE_COROUTINE's way for a synchronous call that names its wait queue
// (sa->wq) and no deadline: no kernel coroutine. syswork_park registers t's
// own waiter (t->park) on sa->wq and tries the call again: 0 with *result if
// it is over after all (sa still the caller's), 1 if it must wait (t->park
// now holds what sa held: the caller blocks t with thread_park_block), -1 if
// the call no longer names a queue (sa as after a WOULD_BLOCK: give it a
// kernel coroutine). syswork_unpark takes a parked call back into sa (its
// handler and references), to be tried again.
static inline int syswork_can_park(struct proc *p, const struct sysargs *sa) {
  // (uwait parks in every mode: the runtime's own wait, kernel/syscall.c)
  return sa->wq && !sa->deadline &&
         (__atomic_load_n(&p->kmode, __ATOMIC_RELAXED) == KMODE_COROUTINE || sa->nr == SYS_uwait);
}
int syswork_park(struct thread *t, struct sysargs *sa, long *result);
void syswork_unpark(struct thread *t, struct sysargs *sa);
// Give every cached worker record back to kmalloc (before memory is counted).
void syswork_drain(void);
// Exit: end every async pipe read of p still parked (kernel/syswork.c).
void syswork_cancel_parked(struct proc *p);
// How many call attempts p's polling kernel thread has made (KMODE_POLLER).
uint64_t syswork_poller_attempts(struct proc *p);
#endif
