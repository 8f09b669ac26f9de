// The system-call layer's shared mechanism (sysargs.h): descriptor slots, user
// range checks, and releasing what a call's arguments hold. The files above it
// (syscall.c, sys_net.c, syswork.c) call down into it; it calls none of them.
#include "sysargs.h"
#include "file.h"
#include "klib.h"
#include "palloc.h"
#include "socket.h"
#include "uvm.h"

struct file *fd_file_hold(struct proc *p, uint64_t fd) {
  spin_lock(&p->lock);
  struct file *f = fd_file(p, fd);
  if (f)
    file_dup(f);
  spin_unlock(&p->lock);
  return f;
}

// Threads of a process share its descriptor table: slots are claimed and
// cleared under the process lock.
int fd_alloc(struct proc *p, struct file *f) {
  spin_lock(&p->lock);
  int r = fdt_alloc(&p->fds, f);
  spin_unlock(&p->lock);
  return r;
}

struct file *fd_take(struct proc *p, uint64_t fd) {
  spin_lock(&p->lock);
  struct file *f = fdt_take(&p->fds, fd);
  spin_unlock(&p->lock);
  return f;
}

// Is all of [uva, uva + len) mapped for the user with permission perm? Checked
// before a call does anything, so a bad buffer fails the whole call cleanly
// (-EFAULT) instead of after a partial transfer that cannot be undone.
int user_range_ok(struct proc *p, uint64_t uva, uint64_t len, uint64_t perm) {
  if (uva + len < uva || uva + len > USER_VA_END)
    return 0;
  for (uint64_t va = ALIGN_DOWN(uva, PAGE_SIZE); va < uva + len; va += PAGE_SIZE)
    if (!uvm_translate(p->pagetable, va < uva ? uva : va, perm))
      return 0;
  return 1;
}

void sysargs_release(struct sysargs *sa) {
  if (sa->sock)
    sock_put(sa->sock);
  sa->sock = 0;
  if (sa->file)
    file_close(sa->file);
  sa->file = 0;
}
