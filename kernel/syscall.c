// System-call dispatch. Every call validates its arguments: a bad pointer, length,
// descriptor or pid gets a negative errno, never a kernel fault.
//
// Blocking calls are tried inline first. One that would have to wait returns
// WOULD_BLOCK, and kernel/syswork.c hands the call to a kernel coroutine of the
// kind the process's kernel mode picks (setkmode; syswork.c has the rules and
// the exceptions): a stackless one that retries the call each time its event
// fires, a stackful one that repeats it with may_block = 1 and blocks inside
// it, or the process's polling thread. A synchronous caller's thread meanwhile
// sits in T_BLOCKED and the switching coroutine runs others; an asynchronous
// caller gets -EINPROGRESS and keeps running. This is the COPS model: a system
// call becomes a kernel coroutine.
#include "syscall.h"
#include "file.h"
#include "hart.h"
#include "kco.h"
#include "klib.h"
#include "kmalloc.h"
#include "palloc.h"
#include "printf.h"
#include "riscv.h"
#include "timer.h"
#include "ring.h"
#include "uintr.h"
#include "prio.h"
#include "trace.h"

#include "sysargs.h"
#include "purecalls.h"
#include "socket.h"
#include "net.h"
#include "stats.h"

// The records kept for reuse (worker records, coroutine stacks) are not in
// use: back to the allocators before memory is counted.
static void drain_caches(void) {
  syswork_drain();
  kco_drain_stacks();
}

static int user_writable(struct proc *p, uint64_t uva, uint64_t len) {
  return user_range_ok(p, uva, len, PTE_W);
}

// ---- the calls ----
static long sys_getpid(struct thread *t, struct sysargs *sa, int may_block) {
  struct proc *p = t->proc;
  (void)sa;
  (void)may_block;
  return p->pid;
}

// A transfer's length and buffer: 1 if it may go ahead, else its result (0
// for a length of 0, or an error). A bad buffer must fail the whole call,
// never after part of it moved. A pipe transfer that fits one chunk
// (FILE_CHUNK bytes) in one page is checked by its only copy, before anything
// is committed; the rest are checked here.
static inline long rw_args(struct proc *p, struct file *f, uint64_t uva, long n, int is_write) {
  if (n < 0)
    return -EINVAL;
  if (n == 0)
    return 0;
  int one_copy = f->type != F_CONSOLE && (uint64_t)n <= FILE_CHUNK &&
                 (uva & (PAGE_SIZE - 1)) + (uint64_t)n <= PAGE_SIZE;
  if (!one_copy && !user_range_ok(p, uva, (uint64_t)n, is_write ? PTE_R : PTE_W))
    return -EFAULT;
  return 1;
}

static long sys_rw(struct thread *t, struct sysargs *sa, int may_block, int is_write) {
  struct proc *p = t->proc;
  // A transfer that waited holds its file (sa->file): the queue it waits on
  // must outlive the wait even if the descriptor is closed meanwhile. A call
  // holds its file from the start too (released with sa when it ends), unless
  // nobody can close the descriptor under it: the calling thread itself, in
  // the trap, alone in its process. (Without that reference, a close() on
  // another thread, or by the process while a kernel coroutine runs the call,
  // could free the file while the call used it.)
  struct file *f = sa->file;
  if (!f) {
    if (sysargs_in_trap(t, sa) && __atomic_load_n(&p->live_threads, __ATOMIC_RELAXED) == 1)
      f = fd_file(p, sa->a[0]);
    else
      f = sa->file = fd_file_hold(p, sa->a[0]);
  }
  long n = (long)sa->a[2];
  if (!f)
    return -EBADF;
  if (f->type == F_SOCKET)                   // read/write on a socket are recv/send
    return is_write ? sys_send(t, sa, may_block) : sys_recv(t, sa, may_block);
  long bad = rw_args(p, f, sa->a[1], n, is_write);
  if (bad <= 0)
    return bad;
  long r = is_write ? file_write(f, p->pagetable, sa->a[1], n, may_block, &p->killed)
                    : file_read(f, p->pagetable, sa->a[1], n, may_block, &p->killed);
  if (r != -EAGAIN || may_block)
    return r;
  // Name the event, so a stackless kernel coroutine can wait for it (syswork.c).
  sa->wq = file_waitq(f, is_write);
  if (sa->wq && !sa->file)
    sa->file = file_dup(f);
  return WOULD_BLOCK;
}

static long sys_read(struct thread *t, struct sysargs *sa, int may_block) {
  return sys_rw(t, sa, may_block, 0);
}

static long sys_write(struct thread *t, struct sysargs *sa, int may_block) {
  return sys_rw(t, sa, may_block, 1);
}

static long sys_close(struct thread *t, struct sysargs *sa, int may_block) {
  struct proc *p = t->proc;
  (void)may_block;
  struct file *f = fd_take(p, sa->a[0]);
  if (!f)
    return -EBADF;
  file_close(f);
  return 0;
}

static long sys_dup(struct thread *t, struct sysargs *sa, int may_block) {
  struct proc *p = t->proc;
  (void)may_block;
  spin_lock(&p->lock);             // (so a concurrent close cannot free it under us)
  struct file *f = fd_file(p, sa->a[0]);
  if (f)
    file_dup(f);
  spin_unlock(&p->lock);
  if (!f)
    return -EBADF;
  int fd = fd_alloc(p, f);
  if (fd < 0)
    file_close(f);
  return fd;
}

static long sys_pipe(struct thread *t, struct sysargs *sa, int may_block) {
  struct proc *p = t->proc;
  (void)may_block;
  uint64_t ufds = sa->a[0];
  if (!user_writable(p, ufds, 2 * sizeof(int)))
    return -EFAULT;
  struct file *rd, *wr;
  int err = pipe_create(&rd, &wr);
  if (err)
    return err;
  int fds[2] = { fd_alloc(p, rd), -1 };
  if (fds[0] >= 0)
    fds[1] = fd_alloc(p, wr);
  if (fds[0] < 0 || fds[1] < 0) {
    if (fds[0] >= 0)
      fd_take(p, (uint64_t)fds[0]);
    file_close(rd);
    file_close(wr);
    return fds[0] < 0 ? fds[0] : fds[1];
  }
  copyout(p->pagetable, ufds, fds, sizeof fds);   // cannot fail: checked above
  return 0;
}

static long sys_sleep(struct thread *t, struct sysargs *sa, int may_block) {
  struct proc *p = t->proc;
  long ms = (long)sa->a[0];
  if (ms < 0)
    return -EINVAL;
  if (ms == 0)
    return 0;
  if (!sa->deadline)                         // the first attempt fixes the deadline
    sa->deadline = rdtime() + (uint64_t)ms * board.timebase_hz / 1000;
  if (!may_block)
    return rdtime() >= sa->deadline ? 0 : WOULD_BLOCK;
  while (rdtime() < sa->deadline && !p->killed) {
    timer_add(sa->deadline, kco_current());
    kco_block();
  }
  return p->killed ? -EINTR : 0;
}

static long sys_yield(struct thread *t, struct sysargs *sa, int may_block) {
  (void)t;
  (void)sa;
  (void)may_block;
  return 0;
}

// spawn(name, argv): copy and check everything before creating anything.
static long sys_spawn(struct thread *t, struct sysargs *sa, int may_block) {
  struct proc *p = t->proc;
  (void)may_block;
  char name[MAXNAME];
  long r = copyinstr(p->pagetable, name, sa->a[0], sizeof name);
  if (r < 0)
    return r;
  char (*args)[MAXARGLEN] = kmalloc(MAXARG * MAXARGLEN);
  char *argv[MAXARG];
  if (!args)
    return -ENOMEM;
  int argc = 0;
  uint64_t uargv = sa->a[1];
  if (!uargv) {                              // no argv: just the name
    memcpy(args[0], name, sizeof name);
    argc = 1;
  }
  while (uargv) {
    uint64_t ptr;
    if (copyin(p->pagetable, &ptr, uargv + (uint64_t)argc * 8, 8) < 0) {
      r = -EFAULT;
      break;
    }
    if (!ptr)
      break;
    if (argc == MAXARG) {
      r = -E2BIG;
      break;
    }
    long len = copyinstr(p->pagetable, args[argc], ptr, MAXARGLEN);
    if (len < 0) {
      r = len == -ENAMETOOLONG ? -E2BIG : len;
      break;
    }
    argc++;
  }
  if (r >= 0) {
    for (int i = 0; i < argc; i++)
      argv[i] = args[i];
    int err;
    struct proc *c = proc_spawn(name, argc, argv, p, &err);
    r = c ? c->pid : err;
  }
  kfree(args);
  return r;
}

static long sys_wait(struct thread *t, struct sysargs *sa, int may_block) {
  struct proc *p = t->proc;
  int pid = (int)sa->a[0];
  uint64_t ustatus = sa->a[1];
  if (pid < -1 || pid == 0)
    return -ECHILD;
  if (ustatus && !user_writable(p, ustatus, sizeof(int)))
    return -EFAULT;                          // checked first: a child is never lost
  int status;
  int r = proc_wait(p, pid, &status, may_block);
  if (r == -EAGAIN)
    return WOULD_BLOCK;
  if (r > 0 && ustatus)
    copyout(p->pagetable, ustatus, &status, sizeof status);
  return r;
}

static long sys_kill(struct thread *t, struct sysargs *sa, int may_block) {
  (void)t;
  (void)may_block;
  long pid = (long)sa->a[0];
  return pid <= 0 || pid > 0x7fffffff ? -ESRCH : proc_kill((int)pid);
}

// Two threads of a process may call brk at once: vm_lock keeps their page
// table changes apart (unserialized, both could map a page at one address and
// one page was lost, or both free one). Growing zeroes pages under it, with
// interrupts off; a shrink waits for every hart's TLB flush (uvm_dealloc).
static long sys_brk(struct thread *t, struct sysargs *sa, int may_block) {
  struct proc *p = t->proc;
  (void)may_block;
  uint64_t want = sa->a[0];
  if (want == 0)
    return (long)__atomic_load_n(&p->brk, __ATOMIC_RELAXED);
  if (want < p->heap_base || want > USER_HEAP_MAX)
    return -ENOMEM;
  long r = (long)want;
  spin_lock(&p->vm_lock);
  uint64_t old_top = ALIGN_UP(p->brk, PAGE_SIZE), new_top = ALIGN_UP(want, PAGE_SIZE);
  if (new_top > old_top && uvm_alloc(p->pagetable, old_top, new_top, PTE_R | PTE_W) < 0)
    r = -ENOMEM;
  else if (new_top < old_top)
    uvm_dealloc(p->pagetable, new_top, old_top);
  if (r >= 0)
    __atomic_store_n(&p->brk, want, __ATOMIC_RELAXED);
  spin_unlock(&p->vm_lock);
  return r;
}

static long sys_uptime(struct thread *t, struct sysargs *sa, int may_block) {
  (void)t;
  (void)sa;
  (void)may_block;
  return (long)(rdtime() / (board.timebase_hz / 1000));
}

// KSTAT_QUIET. The memory counters count what is in use, and work in flight
// elsewhere uses memory too, for a moment: a call's stackful coroutine still
// holds its 16 KiB stack and its record after it has made its thread runnable,
// until it is back in its hart's loop, and the thread may run again on another
// hart first; a process between two calls has not yet freed what the first
// took, nor taken what the second will hold (init, just after spawning a test:
// spawn's argument buffer, then the coroutine of its wait). A leak check whose
// baseline caught one of those found "3 pages and one object" changed at the
// end. So wait until this switcher is the only coroutine running, none is
// ready and no thread waits for a hart: then nothing is in flight.
// Kernel coroutines run while this switcher yields. A thread that waits for a
// hart only runs on a switcher, and on one hart this one is the only one, busy
// with this call: waiting here for such a thread only ran into the safety net,
// and the sample was taken with it still waiting. (init preempted between
// spawn and wait: socktest's baseline then lacked the record and coroutine of
// init's wait, 256 + 96 bytes, which its end found "leaked", at -smp 1 under
// host load.) So the caller gives its hart up instead, if such a thread could
// run in its place (equal or better priority, as at a tick), and makes the
// call again after it: 1. The safety net's deadline holds across the rounds.
static int wait_quiet(struct thread *t) {
  struct proc *p = t->proc;
  if (!t->quiet_until)
    t->quiet_until = rdtime() + board.timebase_hz;   // 1 s at most: a safety net
  uint64_t until = t->quiet_until;
  uint32_t prio = this_hart()->cur->prio;           // (the priority the switcher carries)
  for (;;) {
    struct exec_stats es;
    exec_get_stats(&kexec, &es);
    uint32_t waiting = proc_runq_best();
    if ((es.ready == 0 && es.running == 1 && waiting == NPRIO_DEFAULT &&
         !__atomic_load_n(&uvm_ndying, __ATOMIC_SEQ_CST)) || rdtime() >= until)
      break;
    if (waiting <= prio) {
      kco_reprio_self(prio);
      return 1;                  // (the deadline stays for the next round)
    }
    // Let the rest go first, on this hart too (on one hart nothing else could
    // run): at the worst priority, as the switcher yields. Then pause before
    // the next look: it takes the executor's lock.
    kco_reprio_self(NPRIO_DEFAULT - 1);
    uintr_leave(t);              // (this switcher may resume on another hart)
    kco_yield();
    uvm_activate(p->pagetable);
    for (uint64_t t0 = rdtime(); rdtime() - t0 < board.timebase_hz / 20000;)   // 50 us
      ;
  }
  kco_reprio_self(prio);
  t->quiet_until = 0;
  return 0;
}

static long sys_kstat(struct thread *t, struct sysargs *sa, int may_block) {
  struct proc *p = t->proc;
  (void)may_block;
  struct palloc_stats ps;
  struct kmalloc_stats ks;
  struct exec_stats es;
  uint64_t what = sa->a[0];
  if (what & KSTAT_QUIET) {
    what &= ~(uint64_t)KSTAT_QUIET;
    if (what == 0 || what >= KSTAT_COUNT)
      return -EINVAL;
    if (wait_quiet(t))
      return AGAIN_AFTER_OTHERS;
  }
  switch (what) {
  case KSTAT_FREE_PAGES:
    drain_caches();              // caches first: what they hold is not in use
    kmalloc_reclaim();
    palloc_get_stats(&ps);
    return (long)ps.free_pages;
  case KSTAT_KMALLOC_PAGES:      // as KSTAT_FREE_PAGES does: empty slabs are free
    drain_caches();
    kmalloc_reclaim();
    kmalloc_get_stats(&ks);
    return (long)(ks.slab_pages + ks.large_pages);
  case KSTAT_KMALLOC_BYTES:
    drain_caches();
    kmalloc_get_stats(&ks);
    return (long)ks.live_bytes;
  case KSTAT_KMALLOC_OBJECTS:
    drain_caches();
    kmalloc_get_stats(&ks);
    return (long)ks.live_objects;
  case KSTAT_LIVE_COROUTINES:
    exec_get_stats(&kexec, &es);
    return es.live;
  case KSTAT_NPROCS:
    return proc_count();
  case KSTAT_POLLER_ATTEMPTS:
    return (long)syswork_poller_attempts(p);
  case KSTAT_UINTR_NATIVE:
    return uintr_is_native();
  case KSTAT_UINTR_POST_COST:
    return (long)t->ui.post_cost;
  case KSTAT_UINTR_POST_INSTRET:
    return (long)t->ui.post_instret;
  case KSTAT_ZOMBIES:
    return proc_zombie_children(p);
  case KSTAT_UINTR_POSTED:
    return (long)t->ui.posted;
  case KSTAT_RING_OVERFLOWS:
    return (long)p->ring_overflows;
  case KSTAT_NOFILE:
    return fdt_limit();
  case KSTAT_SOCKETS:
    return sock_count();
  case KSTAT_TCP_PCBS:
    return sock_tcp_pcbs();
  case KSTAT_NET_TIMER_RUNS:
    return (long)net_timer_runs();
  case KSTAT_TCP_HASH_BAD:
    return sock_tcp_hash_bad();
  case KSTAT_NET_WINDOW_HELD:
    return sock_window_held();
  case KSTAT_NET_SEND_HELD:
    return sock_send_held();
  case KSTAT_NET_SENDS_LATER:
    return (long)sock_sends_later();
  case KSTAT_TIMERS:
    return timer_live();
  case KSTAT_HEAP_PAGES:
    return (long)proc_heap_pages();
  case KSTAT_ASYNC_PARKED:
    return (long)__atomic_load_n(&p->apark_total, __ATOMIC_RELAXED);
  case KSTAT_UWAIT_KICKS:
    return (long)__atomic_load_n(&p->uwait_kicks, __ATOMIC_RELAXED);
  case KSTAT_HARTS:
    return __atomic_load_n(&nharts_online, __ATOMIC_RELAXED);
  case KSTAT_CACHE_BYTES:
  case KSTAT_CACHE_OBJECTS: {
    uint64_t bytes, objects;
    kernel_caches(&bytes, &objects);
    fdt_caches(&bytes, &objects);
    return (long)(what == KSTAT_CACHE_BYTES ? bytes : objects);
  }
  default:
    return -EINVAL;
  }
}

// thread_create(entry, arg, stack_top): a new thread of this process starts at
// entry(arg) on the given stack (which the caller allocated). -> tid
static long sys_thread_create(struct thread *t, struct sysargs *sa, int may_block) {
  (void)may_block;
  return thread_create(t->proc, sa->a[0], sa->a[1], sa->a[2]);
}

// thread_join(tid, &status): wait for thread tid to finish. -> 0
static long sys_thread_join(struct thread *t, struct sysargs *sa, int may_block) {
  struct proc *p = t->proc;
  uint64_t ustatus = sa->a[1];
  if ((int64_t)sa->a[0] == t->tid)
    return -EINVAL;                          // joining oneself would never return
  if (ustatus && !user_writable(p, ustatus, sizeof(int)))
    return -EFAULT;
  int status;
  int r = thread_join(p, (int)sa->a[0], &status, may_block);
  if (r == -EAGAIN)
    return WOULD_BLOCK;
  if (r == 0 && ustatus)
    copyout(p->pagetable, ustatus, &status, sizeof status);
  return r;
}

// uwait(): block until a user interrupt is pending. The runtime calls it when
// its executor has nothing ready but async calls are still in flight. If its
// executor has a ready coroutine by now, return at once: the user-interrupt
// handler may have run (and woken one) between the runtime's look at its
// queues and this call, and then no interrupt is pending to end the wait.
//
// A process with several executor threads (alloc_cpu): a thread that sleeps
// here is woken, too, when a sibling enters the kernel while the executor has
// ready coroutines (uwait_kick_siblings): a wake in user space queues a
// coroutine with no system call, and the kernel sees it in the executor's
// bitmap (COPS). So an idle thread comes back to take a share of the work
// without polling. Announced (uwaiters) before the bitmap is looked at, both
// sequentially consistent: either the look here sees the bitmap a sibling
// set, or that sibling's next kernel entry sees this thread waiting.
//
// The thread waits parked on its own queue t->uwait (no kernel coroutine, no
// memory: an idle executor thread costs nothing), in every kernel mode: this
// is the runtime's own wait, not one of the calls the modes compare. Posts
// and kicks wake the queue, and the switcher repeats the call.
static int uwait_over(struct thread *t) {
  struct proc *p = t->proc;
  return uintr_pending(t) || p->ring_waiting || prio_user_has_ready(p) ||
         __atomic_load_n(&p->killed, __ATOMIC_SEQ_CST) ||
         __atomic_load_n(&t->uwait_state, __ATOMIC_SEQ_CST) == UWAIT_KICKED;
}

// Counters for the console (`stats`): how often executor threads went idle,
// how many of those calls found their wait over at once, and how many waits a
// sibling's kick ended.
static uint64_t uwait_calls, uwait_at_once, uwait_kicks;

static long sys_uwait(struct thread *t, struct sysargs *sa, int may_block) {
  struct proc *p = t->proc;
  int first = t->uwait_state == UWAIT_NONE;   // (kept across the repeated attempts of one call)
  if (first) {
    // This thread found nothing ready in any lane: whatever a sibling's entry
    // saw ready before has been run (the kick delay starts again).
    __atomic_store_n(&p->ready_since, 0, __ATOMIC_RELAXED);
    __atomic_fetch_add(&uwait_calls, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&t->uwait_state, UWAIT_WAITING, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&p->uwaiters, 1, __ATOMIC_SEQ_CST);
  }
  if (uwait_over(t)) {
    if (first)
      __atomic_fetch_add(&uwait_at_once, 1, __ATOMIC_RELAXED);
  } else {
    if (!may_block) {
      sa->wq = &t->uwait;        // park here (syswork_park registers, then tries again)
      return WOULD_BLOCK;
    }
    KCO_WAIT_UNTIL(&t->uwait, uwait_over(t));   // (only if parking is refused)
  }
  __atomic_store_n(&t->uwait_state, UWAIT_NONE, __ATOMIC_SEQ_CST);   // (a kick after this fails)
  __atomic_fetch_sub(&p->uwaiters, 1, __ATOMIC_SEQ_CST);
  return p->killed ? -EINTR : 0;
}

static void print_uwait_stats(stats_out_fn *out) {
  out("uwait: idle executor threads' waits %lu (over at once %lu), ended by a sibling's kick %lu\n",
      __atomic_load_n(&uwait_calls, __ATOMIC_RELAXED), __atomic_load_n(&uwait_at_once, __ATOMIC_RELAXED),
      __atomic_load_n(&uwait_kicks, __ATOMIC_RELAXED));
}
STATS_SOURCE(11, "sched", print_uwait_stats);

// The kick waits until ready coroutines have been seen for a while. The
// thread that enters the kernel is about to go back to its executor, which
// runs what is ready: at light load it always does, and an eager kick (at the
// first entry that saw a ready coroutine, as the kernel did before) woke a
// sibling for nearly every request (4,328 kicks for 5,120 requests in 8 s of
// matrixd KCUC at 64 connections) to find the work taken, each wake an IPI to
// the other hart and both vCPUs taking QEMU's global lock. Ready work that
// outlasts the delay is a backlog, and a sibling is woken as before. The delay
// runs from the first entry that saw the work and starts again whenever a
// thread of the process goes idle (sys_uwait) or an entry sees nothing ready;
// a running thread enters at least every tick, so a ready coroutine waits for
// a sibling at most the delay and a tick longer than with eager kicks. A
// thread that will not go back to its executor soon (a synchronous call that
// blocks, a hart given up to other work) kicks with no delay: otherwise its
// ready coroutines could wait with nobody entering the kernel to kick.
static uint64_t kick_delay_ticks;   // (timebase ticks; set at boot)

void uwait_set_kick_delay_us(uint32_t us) {
  kick_delay_ticks = board.timebase_hz * us / 1000000;
}

void uwait_kick_siblings(struct thread *self, int leaving) {
  struct proc *p = self->proc;
  if (!prio_user_has_ready(p)) {
    if (__atomic_load_n(&p->ready_since, __ATOMIC_RELAXED))
      __atomic_store_n(&p->ready_since, 0, __ATOMIC_RELAXED);
    return;
  }
  if (kick_delay_ticks && !leaving) {
    // (Threads on other harts race here; a lost update moves the start by
    // one entry, which is all the rule needs.)
    uint64_t now = rdtime() | 1, since = __atomic_load_n(&p->ready_since, __ATOMIC_RELAXED);
    if (!since) {
      __atomic_store_n(&p->ready_since, now, __ATOMIC_RELAXED);
      return;
    }
    if (now - since < kick_delay_ticks)
      return;
  }
  int n = __atomic_load_n(&p->nthreads, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; i++) {
    struct thread *s = p->threads[i];
    int waiting = UWAIT_WAITING;
    if (s && s != self &&
        __atomic_compare_exchange_n(&s->uwait_state, &waiting, UWAIT_KICKED, 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST)) {
      __atomic_fetch_add(&uwait_kicks, 1, __ATOMIC_RELAXED);
      __atomic_fetch_add(&p->uwait_kicks, 1, __ATOMIC_RELAXED);
      __atomic_store_n(&p->ready_since, 0, __ATOMIC_RELAXED);   // (the next kick waits its turn)
      waitq_wake_all(&s->uwait);
      return;                    // one at a time: it may take all there is
    }
  }
}

// setkmode(mode): how the kernel serves this process's calls that must wait
// (KMODE_*, kernel/syswork.c). -> the previous mode
static long sys_uintr_recv(struct thread *t, struct sysargs *sa, int may_block) {
  (void)sa;
  (void)may_block;
  return (long)uintr_recv_page(t);
}

static long sys_setkmode(struct thread *t, struct sysargs *sa, int may_block) {
  struct proc *p = t->proc;
  (void)may_block;
  uint64_t mode = sa->a[0];
  if (mode != KMODE_COROUTINE && mode != KMODE_THREAD && mode != KMODE_POLLER)
    return -EINVAL;
  int old = __atomic_exchange_n(&p->kmode, (int)mode, __ATOMIC_RELAXED);
  return old;
}

static const syscall_fn calls[NSYSCALL] = {
  [SYS_getpid] = sys_getpid, [SYS_write] = sys_write, [SYS_read] = sys_read,
  [SYS_close] = sys_close,   [SYS_pipe] = sys_pipe,   [SYS_sleep] = sys_sleep,
  [SYS_yield] = sys_yield,   [SYS_spawn] = sys_spawn, [SYS_wait] = sys_wait,
  [SYS_kill] = sys_kill,     [SYS_brk] = sys_brk,     [SYS_uptime] = sys_uptime,
  [SYS_kstat] = sys_kstat,   [SYS_uwait] = sys_uwait,
  [SYS_thread_create] = sys_thread_create, [SYS_thread_join] = sys_thread_join,
  [SYS_socket] = sys_socket, [SYS_bind] = sys_bind,   [SYS_listen] = sys_listen,
  [SYS_accept] = sys_accept, [SYS_recv] = sys_recv,   [SYS_send] = sys_send,
  [SYS_shutdown] = sys_shutdown, [SYS_setkmode] = sys_setkmode,
  [SYS_uintr_recv] = sys_uintr_recv, [SYS_dup] = sys_dup,
  [SYS_connect] = sys_connect,
};

// Calls that may wait, and so have an asynchronous form.
static int can_be_async(uint64_t nr) {
  return nr == SYS_read || nr == SYS_write || nr == SYS_sleep || nr == SYS_wait ||
         nr == SYS_accept || nr == SYS_recv || nr == SYS_send || nr == SYS_connect;
}

_Static_assert(SYS_getpid < 32 && SYS_uptime < 32, "PURE_CALLS is one 32-bit mask");

// Called by uservec for a pure call (kernel/purecalls.h), on the switcher's stack, interrupts off,
// before the registers C code keeps (s1-s11) and the pc are saved: 0 if the
// call is answered (a0 set; uservec returns to U at once), 1 if the full path
// must take the trap (then nothing has been done here). The full path's
// per-trap duties are kept or shown unnecessary:
//   - COPS's rank at every kernel entry: published here too;
//   - kernel work of equal or better priority first: if any is ready, the
//     full path takes the trap (it yields to it); an answer here makes none
//     ready, and an interrupt that does waits, pending, until sret, then traps;
//   - user interrupts: a thread with one pending (uip), completions waiting for
//     ring space, a kill, or tracing on go the full way. t->on_hart keeps naming
//     this hart: a post from another hart meanwhile sends an IPI, which traps
//     right after the sret and is delivered there. On native N the u-CSRs
//     never left the hart.
// The short path's entry, shared by syscall_fast and syscall_fast_async:
// PRIO_KERNEL_FIRST if the full path must take the trap (nothing done), else
// the rank just published.
static inline __attribute__((always_inline)) uint32_t short_path_rank(struct thread *t) {
  struct proc *p = t->proc;
  if (trace_enabled || p->killed || p->ring_waiting ||
      __atomic_load_n(&t->ui.n.uip, __ATOMIC_RELAXED))
    return PRIO_KERNEL_FIRST;
  return prio_publish_unless_kernel(p);
}

// ... and what the short path then owes the trap: the switcher carries what
// its process published, and the trap and the call are counted.
static inline __attribute__((always_inline)) void short_path_taken(struct proc *p, uint32_t rank) {
  kco_reprio_self(rank);
  p->traps++;
  p->syscalls++;
}

int syscall_fast(struct thread *t) {
  uint64_t nr = t->uc.x[REG_A7];   // (uservec checked it is in PURE_CALLS)
  uint32_t rank = short_path_rank(t);
  if (rank == PRIO_KERNEL_FIRST)
    return 1;
  short_path_taken(t->proc, rank);
  // A pure call reads its arguments and nothing else of sa (it never waits
  // and takes no file or socket): only those fields are set. t->uc.pc is not
  // saved on this path either; uservec steps past the ecall itself.
  struct sysargs sa;
  sa.nr = nr;
  sa.a = &t->uc.x[REG_A0];
  sa.call = calls[nr];
  t->uc.x[REG_A0] = (uint64_t)sa.call(t, &sa, 0);
  return 0;
}

// The async form's clamp of the caller's priority (a4: the runtime supplies
// it, the kernel trusts nothing of it).
static uint32_t async_prio(uint64_t a4) {
  uint32_t prio = a4 < NPRIO_DEFAULT ? (uint32_t)a4 : NPRIO_DEFAULT - 1;
  return prio < USER_PRIO_CEILING ? USER_PRIO_CEILING : prio;
}

// Called by uservec for an async read or write (a7 = SYS_read or SYS_write
// | SYS_ASYNC), like syscall_fast: on the switcher's stack, interrupts off,
// before s1-s11 and the pc are saved. 0 if the call is answered here (a0
// set: its result, or -EINPROGRESS once a kernel coroutine has it), 1 if the
// full path must take the trap (nothing done yet). The submit of an async
// call never waits and never needs the switcher's loop afterwards, so it
// can take the short path; this saves the full trap's other half (about 190
// instructions of the async round trip). Only for a pipe, in a process
// with one thread (the descriptor then cannot be closed under the call), and
// only when the call's kernel coroutine will not be of better priority than
// the process (the full path would yield to it at once); with every other
// duty of the full path as in syscall_fast. Sockets take the full path:
// the network stack's lock may make its caller wait for other harts.
int syscall_fast_async(struct thread *t) {
  struct proc *p = t->proc;
  uint64_t *x = t->uc.x;
  if (__atomic_load_n(&p->live_threads, __ATOMIC_RELAXED) != 1 || x[REG_A0 + 5] == CID_NONE)
    return 1;
  struct file *f = fd_file(p, x[REG_A0]);
  if (!f || (f->type != F_PIPE_READ && f->type != F_PIPE_WRITE))
    return 1;
  uint32_t prio = async_prio(x[REG_A0 + 4]);
  uint32_t rank = short_path_rank(t);
  if (rank == PRIO_KERNEL_FIRST || prio < rank)
    return 1;
  short_path_taken(p, rank);
  long r;
  if (x[REG_A7] == (SYS_read | SYS_ASYNC) && f->type == F_PIPE_READ && pipe_looks_empty(f) &&
      __atomic_load_n(&p->kmode, __ATOMIC_RELAXED) == KMODE_COROUTINE) {
    // A read that would wait: straight to the park (kernel/syswork.c),
    // which reads under the same lock hold if bytes came after all, instead
    // of a read attempt that takes the pipe's lock only to find it empty.
    if ((r = rw_args(p, f, x[REG_A0 + 1], (long)x[REG_A0 + 2], 0)) == 1) {
      struct file *held = file_dup(f);
      r = syswork_park_read(t, held, x[REG_A0 + 1], (long)x[REG_A0 + 2], x[REG_A0 + 5]);
      if (r == 0) {
        x[REG_A0] = (uint64_t)-EINPROGRESS;
        return 0;
      }
      file_close(held);
    }
    if (r != 1) {                  // refused, or -ENOMEM
      x[REG_A0] = (uint64_t)r;
      return 0;
    }
    // (every park slot taken: as any call, below, which makes it a coroutine)
  }
  struct sysargs sa;
  sa.nr = x[REG_A7] & ~(uint64_t)SYS_ASYNC;
  sa.a = &x[REG_A0];
  sa.call = calls[sa.nr];
  sa.wq = 0;
  sa.deadline = 0;
  sa.sock = 0;
  sa.file = 0;
  r = sa.call(t, &sa, 0);
  if (r == WOULD_BLOCK && (r = syswork_start(t, &sa, x[REG_A0 + 5], prio)) == 0) {
    x[REG_A0] = (uint64_t)-EINPROGRESS;
    return 0;                      // (syswork_start took what sa held)
  }
  if (sa.sock || sa.file)
    sysargs_release(&sa);
  x[REG_A0] = (uint64_t)r;
  return 0;
}

// Try a parked call again (syswork_unpark gave it back to sa). Not
// registered first: it was woken, so it most likely completes, and if not,
// wait_for registers and tries once more.
static long try_again(struct thread *t, struct sysargs *sa) {
  if (__atomic_load_n(&t->proc->killed, __ATOMIC_SEQ_CST))
    return -EINTR;
  return sa->call(t, sa, 0);
}

// A synchronous call of t must wait (its handler returned WOULD_BLOCK). Its
// result, if it is over after all, or WOULD_BLOCK: t is T_BLOCKED and belongs
// to whoever wakes it (its waker, or the call's kernel coroutine). From the
// moment t can be woken it may run (and p even exit) on another hart; this
// hart keeps p's table loaded meanwhile (uvm_activate, uvm_free).
static long wait_for(struct thread *t, struct sysargs *sa) {
  struct proc *p = t->proc;
  long r;
  int parked;
  while (syswork_can_park(p, sa) && (parked = syswork_park(t, sa, &r)) >= 0) {
    if (!parked)
      return r;
    uintr_leave(t);              // t's N state leaves this hart with it
    thread_set_state(t, T_BLOCKED);
    if (thread_park_block(t))
      return WOULD_BLOCK;
    thread_set_state(t, T_RUNNING);   // woken while it registered: try again
    uvm_activate(p->pagetable);
    syswork_unpark(t, sa);
    if ((r = try_again(t, sa)) != WOULD_BLOCK)
      return r;
  }
  uintr_leave(t);
  thread_set_state(t, T_BLOCKED);
  // The kernel coroutine serves the process, so it runs at the process's
  // priority: a worse fixed priority would let a busy equal or better
  // process starve it.
  r = syswork_start(t, sa, CID_NONE, prio_of(p));
  if (r == 0)
    return WOULD_BLOCK;
  thread_set_state(t, T_RUNNING);
  uvm_activate(p->pagetable);
  return r;
}

// t's call was parked (syswork_park) and t has been woken: try it again,
// before t returns to U-mode. SC_DONE (result in a0) or SC_BLOCKED (parked
// again, or handed to a kernel coroutine).
enum syscall_outcome syscall_resume(struct thread *t) {
  struct sysargs sa;
  sa.nr = t->uc.x[REG_A7];       // (a synchronous call: no SYS_ASYNC)
  sa.a = &t->uc.x[REG_A0];       // the thread's registers kept the arguments
  syswork_unpark(t, &sa);        // the call and its references
  long r = try_again(t, &sa);
  if (r == WOULD_BLOCK && (r = wait_for(t, &sa)) == WOULD_BLOCK)
    return SC_BLOCKED;
  TRACE_THREAD(TR_COMPLETE, t, 0, r);
  if (sa.sock || sa.file)
    sysargs_release(&sa);
  t->uc.x[REG_A0] = (uint64_t)r;
  return SC_DONE;
}

enum syscall_outcome syscall_dispatch(struct thread *t) {
  struct proc *p = t->proc;
  uint64_t a7 = t->uc.x[REG_A7];
  int async = (a7 & SYS_ASYNC) != 0;
  // Field by field, not "= { ... }": that would clear a[] only to overwrite it
  // (this is on every system call's path).
  struct sysargs sa;
  sa.nr = a7 & ~(uint64_t)SYS_ASYNC;
  sa.a = &t->uc.x[REG_A0];       // (args: copied only if the call goes on elsewhere)
  sa.call = 0;
  sa.wq = 0;
  sa.deadline = 0;
  sa.sock = 0;
  sa.file = 0;
  p->syscalls++;
  TRACE_THREAD(TR_SYSCALL, t, async ? sa.a[5] : 0, (long)a7);
  if (sa.nr >= NSYSCALL || !calls[sa.nr] || (async && !can_be_async(sa.nr))) {
    if (sa.nr == SYS_exit && !async)
      return SC_EXIT;
    if (sa.nr == SYS_thread_exit && !async)
      return SC_THREAD_EXIT;
    if (sa.nr == SYS_uintr_ret && !async) {
      // Not a call: it returns to where the interrupt struck, a0 and a7 as they
      // were there (abi.h). A thread that misuses it has corrupted its own state.
      if (uintr_ecall_ret(t) == 0)
        return SC_DONE;
      t->uc.x[REG_A0] = (uint64_t)-1;
      return SC_FAULT;
    }
    t->uc.x[REG_A0] = (uint64_t)-ENOSYS;
    return SC_DONE;
  }
  sa.call = calls[sa.nr];
  long r = sa.call(t, &sa, 0);
  // The two internal results lie below every -errno: one test on the common path.
  if (__builtin_expect(r <= WOULD_BLOCK, 0)) {
    if (r == AGAIN_AFTER_OTHERS) {
      t->uc.pc -= 4;             // the same ecall again (a0..a7 untouched), after the
      return SC_YIELD;           // threads that wait for a hart (wait_quiet)
    }
    if (r == WOULD_BLOCK && async) {
      // The async form: the caller's coroutine (cid in a5) waits; the process
      // does not. The kernel coroutine runs at the caller's priority (a4, which
      // the runtime supplies and the kernel clamps: user values are untrusted).
      cid_t cid = sa.a[5];
      uint32_t prio = async_prio(sa.a[4]);
      r = cid == CID_NONE ? -EINVAL : syswork_start(t, &sa, cid, prio);
      if (r == 0) {
        t->uc.x[REG_A0] = (uint64_t)-EINPROGRESS;
        return SC_ASYNC_STARTED; // (syswork_start took what sa held)
      }
    } else if (r == WOULD_BLOCK) {
      // t waits in the kernel: what its executor has ready goes to an idle
      // sibling now (uwait itself is the runtime's idle: it had nothing).
      if (sa.nr != SYS_uwait)
        uwait_kick_if_waiting(t, 1);
      r = wait_for(t, &sa);
      if (r == WOULD_BLOCK)
        return SC_BLOCKED;
    }
  }
  if (sa.sock || sa.file)
    sysargs_release(&sa);        // the call is over (a worker took sa otherwise)
  t->uc.x[REG_A0] = (uint64_t)r;
  return sa.nr == SYS_yield ? SC_YIELD : SC_DONE;
}
