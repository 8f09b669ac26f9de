// Processes and threads: creation from the program archive, the run queue,
// thread create/exit/join, exit, wait, kill.
#include "proc.h"
#include "elf.h"
#include "file.h"
#include "hart.h"
#include "initrd.h"
#include "kco.h"
#include "klib.h"
#include "kmalloc.h"
#include "vdso_map.h"
#include "prio.h"
#include "ring.h"
#include "sysargs.h"
#include "palloc.h"
#include "printf.h"
#include "poweroff.h"
#include "stats.h"
#include "uintc.h"

static struct proc procs[NPROC];
static struct spinlock ptable_lock = SPINLOCK_INIT("ptable");   // state, pids, parent links
static int next_pid = 1;

// The run queue: one FIFO of runnable threads per priority (their process's),
// best first.
static struct spinlock runq_lock = SPINLOCK_INIT("runq");
static struct thread *rq_head[NPRIO_DEFAULT], *rq_tail[NPRIO_DEFAULT];
uint64_t rq_bitmap;                // (read lock-free by proc_runq_best, proc.h)
static struct waitq runq_wait;                                   // idle switching coroutines

// The first user process (set by the boot job, kernel/job.c): its end is
// reported and may end the run.
static int init_pid;
static int shutdown_when_init_exits;

void proc_set_init(int pid, int shutdown_on_exit) {
  init_pid = pid;
  shutdown_when_init_exits = shutdown_on_exit;
}

static void init_exited(int pid, int status) {
  if (pid != init_pid)
    return;
  kprintf("coral: init (pid %d) exited with status %d\n", pid, status);
  if (shutdown_when_init_exits)
    poweroff(status != 0);
}

void proc_init(void) {
  waitq_init(&runq_wait, "runq");
  for (int i = 0; i < NPROC; i++) {
    struct proc *p = &procs[i];
    spin_init(&p->lock, "proc");
    spin_init(&p->ring_lock, "ring");
    spin_init(&p->vm_lock, "vm");
    waitq_init(&p->child_exit, "wait");
    waitq_init(&p->async_done, "async");
    waitq_init(&p->thread_done, "threads");
  }
}

// Thread tid of p, new and T_FREE, or 0 when memory is short. A thread is
// allocated when its tid is taken and freed when it is joined (thread_join)
// or its process ends (free_slot); p->threads[i] is 0 in between.
static struct thread *thread_alloc(struct proc *p, int tid) {
  struct thread *t = kzalloc(sizeof *t);
  if (!t)
    return 0;
  t->proc = p;
  t->tid = tid;
  t->on_hart = -1;
  waitq_init(&t->uwait, "uwait");
  return t;
}

int proc_count(void) {
  int n = 0;
  spin_lock(&ptable_lock);
  for (int i = 0; i < NPROC; i++)
    n += procs[i].state != P_FREE;
  spin_unlock(&ptable_lock);
  return n;
}

// A process's heap only grows while it lives (umalloc keeps what it frees):
// free pages alone cannot tell a server's heap growing to its working size
// from a kernel leak, this figure can. brk is read without the process's
// lock: a stats figure, exact at rest.
uint64_t proc_heap_pages(void) {
  uint64_t n = 0;
  spin_lock(&ptable_lock);
  for (int i = 0; i < NPROC; i++) {
    struct proc *p = &procs[i];
    if (p->state != P_FREE && p->state != P_ZOMBIE)
      n += (ALIGN_UP(p->brk, PAGE_SIZE) - ALIGN_UP(p->heap_base, PAGE_SIZE)) / PAGE_SIZE;
  }
  spin_unlock(&ptable_lock);
  return n;
}

// How many of p's children have exited and wait for p to reap them.
int proc_zombie_children(struct proc *p) {
  int n = 0;
  spin_lock(&ptable_lock);
  for (int i = 0; i < NPROC; i++)
    n += procs[i].state == P_ZOMBIE && procs[i].parent == p;
  spin_unlock(&ptable_lock);
  return n;
}

static int active(enum thread_state s) { return s == T_RUNNABLE || s == T_RUNNING; }

void thread_set_state(struct thread *t, enum thread_state s) {
  int change = active(s) - active(t->state);
  t->state = s;
  if (change) {
    __atomic_fetch_add(&t->proc->nactive, change, __ATOMIC_RELAXED);
    prio_publish(t->proc);
  }
}

// ---- run queue ----
// (runq_lock held)
static void rq_push(struct thread *t, uint32_t prio) {
  t->state = T_RUNNABLE;
  t->rq_next = 0;
  if (rq_tail[prio])
    rq_tail[prio]->rq_next = t;
  else
    rq_head[prio] = t;
  rq_tail[prio] = t;
  rq_bitmap |= 1ULL << prio;
}

// (runq_lock held, the queue not empty.) Inlined in both callers: as a call
// it cost a process switch 14 instructions (497.2 -> 483.2 with it inline).
static inline __attribute__((always_inline)) struct thread *rq_pop_best(void) {
  uint32_t prio = exec_ctz64(rq_bitmap);
  struct thread *t = rq_head[prio];
  rq_head[prio] = t->rq_next;
  if (!rq_head[prio]) {
    rq_tail[prio] = 0;
    rq_bitmap &= ~(1ULL << prio);
  }
  t->state = T_RUNNING;
  return t;
}

void thread_make_runnable(struct thread *t) {
  struct proc *p = t->proc;
  uint32_t prio = prio_of(p);
  int was_active = active(t->state);
  if (!was_active)               // before t is queued: once queued it may run, and end, elsewhere
    __atomic_fetch_add(&p->nactive, 1, __ATOMIC_RELAXED);
  spin_lock(&runq_lock);
  rq_push(t, prio);
  spin_unlock(&runq_lock);
  if (!was_active)               // (outside runq_lock; p, not t: procs[] is never freed)
    prio_publish(p);
  waitq_wake_one(&runq_wait);
}

// ---- parked calls (struct thread_park; syswork.c parks and resumes them) ----
// Whoever moves park.state out of PARK_BLOCKED queues the thread, so it is
// queued once: the waker (PARK_WOKEN), a kill (PARK_KICKED), or the parker
// itself when it finds the kill flag after blocking.

void thread_park_notify(struct waiter *w) {
  // (called by the waker, with the queue's lock held, after it unlinked w)
  struct thread *t = (struct thread *)(void *)((char *)w - offsetof(struct thread, park.waiter));
  if (__atomic_exchange_n(&t->park.state, PARK_WOKEN, __ATOMIC_ACQ_REL) == PARK_BLOCKED)
    thread_make_runnable(t);
}

void thread_park_kick(struct thread *t) {
  int blocked = PARK_BLOCKED;
  if (__atomic_compare_exchange_n(&t->park.state, &blocked, PARK_KICKED, 0, __ATOMIC_SEQ_CST,
                                  __ATOMIC_RELAXED))
    thread_make_runnable(t);
}

int thread_park_block(struct thread *t) {
  struct proc *p = t->proc;      // (read before: t may be gone once it is blocked)
  int waiting = PARK_WAITING;
  if (!__atomic_compare_exchange_n(&t->park.state, &waiting, PARK_BLOCKED, 0, __ATOMIC_SEQ_CST,
                                   __ATOMIC_ACQUIRE))
    return 0;                    // the queue fired (or a kill came) while it registered
  // A kill sets the flag and then kicks parked threads; we blocked and then
  // look at the flag (both sequentially consistent): one of us sees the other.
  if (__atomic_load_n(&p->killed, __ATOMIC_SEQ_CST))
    thread_park_kick(t);
  return 1;
}

static struct thread *runq_pop(void) {
  if (!__atomic_load_n(&rq_bitmap, __ATOMIC_RELAXED))
    return 0;                    // empty: no lock (a waiter re-checks after linking)
  spin_lock(&runq_lock);
  struct thread *t = rq_bitmap ? rq_pop_best() : 0;
  spin_unlock(&runq_lock);
  return t;
}

struct thread *runq_switch(struct thread *t, uint32_t prio) {
  spin_lock(&runq_lock);
  rq_push(t, prio);              // behind its equals: round robin
  struct thread *next = rq_pop_best();
  spin_unlock(&runq_lock);
  if (next != t)                 // t waits now: an idle switcher may take it
    waitq_wake_one(&runq_wait);
  return next;
}

struct thread *runq_pop_wait(void) {
  struct thread *t = runq_pop();  // the common case: no need to queue as a waiter
  if (!t)
    KCO_WAIT_UNTIL(&runq_wait, (t = runq_pop()) != 0);
  return t;
}

// ---- creation ----
static struct proc *alloc_slot(void) {
  spin_lock(&ptable_lock);
  for (int i = 0; i < NPROC; i++) {
    struct proc *p = &procs[i];
    if (p->state == P_FREE) {
      p->state = P_EMBRYO;
      p->pid = next_pid++;
      p->nactive = 0;
      p->pub_prio = PRIO_UNRANKED;
      spin_unlock(&ptable_lock);
      return p;
    }
  }
  spin_unlock(&ptable_lock);
  return 0;
}

// Free everything a process holds except its slot (files, address space).
static void release_resources(struct proc *p) {
  ring_release(p);
  for (int i = 0; i < p->nthreads; i++)
    if (p->threads[i])
      uintr_release(p->threads[i]);
  for (int fd = 0; fd < NOFILE_MAX && p->fds.open > 0; fd++) {
    struct file *f = fdt_take(&p->fds, (uint64_t)fd);   // (no thread of p runs now)
    if (f)
      file_close(f);
  }
  fdt_release(&p->fds);
  uvm_free(p->pagetable);
  p->pagetable = 0;
}

static void free_slot(struct proc *p) {   // ptable_lock held
  p->exec_page = 0;              // (its pages are freed: publish must not write there)
  p->nactive = 0;                // every thread has stopped: unrank it
  prio_publish(p);
  p->state = P_FREE;
  p->async_workers = 0;
  p->apark_total = 0;            // (apark_used and apark[] are empty: exit took every parked read)
  p->uwait_kicks = 0;
  p->ready_since = 0;
  p->parent = 0;
  p->killed = 0;
  p->name[0] = 0;
  p->live_threads = 0;
  for (int t = 0; t < p->nthreads; t++) {
    struct thread *th = p->threads[t];
    __atomic_store_n(&p->threads[t], 0, __ATOMIC_RELEASE);
    kfree(th);
  }
  p->nthreads = 0;
}

static uint64_t elf_perm(uint32_t flags) {
  return ((flags & ELF_R) ? PTE_R : 0) | ((flags & ELF_W) ? PTE_W : 0) | ((flags & ELF_X) ? PTE_X : 0);
}

// Lay out argv at the top of the stack: the strings, then the pointer array.
static int push_args(struct proc *p, int argc, char *const argv[], uint64_t *sp_out, uint64_t *argv_out) {
  uint64_t sp = USER_STACK_TOP, ptrs[MAXARG + 1];
  for (int i = argc - 1; i >= 0; i--) {
    size_t len = strlen(argv[i]) + 1;
    sp -= len;
    if (copyout(p->pagetable, sp, argv[i], len) < 0)
      return -E2BIG;
    ptrs[i] = sp;
  }
  ptrs[argc] = 0;
  sp = ALIGN_DOWN(sp - (uint64_t)(argc + 1) * 8, 16);
  if (copyout(p->pagetable, sp, ptrs, (size_t)(argc + 1) * 8) < 0)
    return -E2BIG;
  *sp_out = sp;
  *argv_out = sp;
  return 0;
}

static int load_program(struct proc *p, const char *name, int argc, char *const argv[]) {
  const void *img;
  size_t size;
  struct elf_info info;
  if (initrd_find(name, &img, &size) != 0)
    return -ENOENT;
  int err = elf_parse(img, size, &info);
  if (err)
    return err;
  if (!(p->pagetable = uvm_create()))
    return -ENOMEM;
  for (uint32_t i = 0; i < info.nsegs; i++) {
    struct elf_seg *s = &info.seg[i];
    if (uvm_alloc(p->pagetable, s->vaddr, s->vaddr + s->memsz, elf_perm(s->flags)) < 0)
      return -ENOMEM;
    if (uvm_load(p->pagetable, s->vaddr, (const char *)img + s->offset, s->filesz) < 0)
      return -ENOEXEC;
  }
  if ((err = vdso_map(p->pagetable)) != 0 || (err = ring_setup(p)) != 0)
    return err;
  if (uvm_map_shared(p->pagetable, USER_VVAR, prio_vvar_page(), PTE_R) < 0)
    return -ENOMEM;
  // The executor page: the kernel reads the ready bitmap and running priority
  // from it. Until the runtime runs, the process counts as running main.
  p->exec_page = (struct executor *)uvm_translate(p->pagetable, USER_EXEC_PAGE, PTE_W);
  *(uint32_t *)((char *)p->exec_page + EXEC_PAGE_RUNNING_PRIO) = PROC_START_PRIO;
  // The stack; the page below it stays unmapped as a guard.
  if (uvm_alloc(p->pagetable, USER_STACK_TOP - USER_STACK_SIZE, USER_STACK_TOP, PTE_R | PTE_W) < 0)
    return -ENOMEM;
  uint64_t sp, uargv;
  if ((err = push_args(p, argc, argv, &sp, &uargv)) != 0)
    return err;
  p->heap_base = p->brk = info.end;
  struct thread *t = p->threads[0];        // the main thread
  memset(&t->uc, 0, sizeof t->uc);
  t->uc.pc = info.entry;
  t->uc.x[REG_SP] = sp;
  t->uc.x[REG_A0] = (uint64_t)argc;
  t->uc.x[REG_A1] = uargv;
  uintr_init(t);
  return 0;
}

struct proc *proc_spawn(const char *name, int argc, char *const argv[], struct proc *parent, int *err) {
  struct proc *p = alloc_slot();
  if (!p) {
    *err = -EAGAIN;
    return 0;
  }
  size_t n = strnlen(name, MAXNAME - 1);
  memcpy(p->name, name, n);
  p->name[n] = 0;
  p->syscalls = p->traps = 0;
  __atomic_store_n(&p->threads[0], thread_alloc(p, 0), __ATOMIC_RELEASE);
  p->nthreads = p->threads[0] != 0;
  *err = p->threads[0] ? load_program(p, name, argc, argv) : -ENOMEM;
  // Standard descriptors: shared with the parent, or the console.
  for (int fd = 0; fd < 3 && !*err; fd++) {
    // (the parent is the caller, blocked in spawn: its slots 0-2 stay put)
    struct file *pf = parent ? fdt_lookup(&parent->fds, (uint64_t)fd) : 0;
    struct file *f = pf ? file_dup(pf) : file_console();
    if (!f || fdt_alloc(&p->fds, f) != fd) {
      if (f)
        file_close(f);
      *err = -ENOMEM;
    }
  }
  if (*err) {
    release_resources(p);
    spin_lock(&ptable_lock);
    free_slot(p);
    spin_unlock(&ptable_lock);
    return 0;
  }
  spin_lock(&ptable_lock);
  p->parent = parent;
  p->state = P_RUNNING;                    // alive: it has a thread
  spin_unlock(&ptable_lock);
  p->live_threads = 1;
  p->kmode = parent ? parent->kmode : KMODE_COROUTINE;
  p->exit_code = 0;
  thread_make_runnable(p->threads[0]);
  return p;
}

// ---- exit, wait, kill ----
void proc_async_start(struct proc *p) {
  __atomic_fetch_add(&p->async_inflight, 1, __ATOMIC_SEQ_CST);
}

void proc_async_done(struct proc *p) {
  __atomic_fetch_sub(&p->async_inflight, 1, __ATOMIC_SEQ_CST);
  waitq_wake_all(&p->async_done);
}

void proc_async_register(struct proc *p, struct async_worker *w, cid_t kcid) {
  spin_lock(&p->lock);
  w->kcid = kcid;
  w->prev = 0;
  w->next = p->async_workers;
  if (w->next)
    w->next->prev = w;
  p->async_workers = w;
  spin_unlock(&p->lock);
}

void proc_async_unregister(struct proc *p, struct async_worker *w) {
  spin_lock(&p->lock);
  if (w->prev)
    w->prev->next = w->next;
  else
    p->async_workers = w->next;
  if (w->next)
    w->next->prev = w->prev;
  spin_unlock(&p->lock);
}

// ---- threads ----
int thread_create(struct proc *p, uint64_t entry, uint64_t arg, uint64_t sp) {
  if (entry >= USER_VA_END || sp >= USER_VA_END || (sp & 15))
    return -EINVAL;
  spin_lock(&p->lock);
  int i = 1;                               // the lowest free tid
  while (i < MAXTHREADS && p->threads[i] && p->threads[i]->state != T_FREE)
    i++;
  if (i < MAXTHREADS && !p->threads[i])    // first use of tid i (kzalloc only spins)
    __atomic_store_n(&p->threads[i], thread_alloc(p, i), __ATOMIC_RELEASE);
  struct thread *t = i < MAXTHREADS ? p->threads[i] : 0;
  if (t && t->tid >= p->nthreads)
    __atomic_store_n(&p->nthreads, t->tid + 1, __ATOMIC_RELAXED);
  if (!t || p->killed) {
    spin_unlock(&p->lock);
    return -EAGAIN;
  }
  t->state = T_BLOCKED;                    // not yet queued
  p->live_threads++;
  spin_unlock(&p->lock);
  memset(&t->uc, 0, sizeof t->uc);
  t->uc.pc = entry;
  t->uc.x[REG_SP] = sp;
  t->uc.x[REG_A0] = arg;
  t->worker = 0;
  uintr_init(t);
  thread_make_runnable(t);
  return t->tid;
}

static int joinable(struct proc *p, int tid) {
  struct thread *t = __atomic_load_n(&p->threads[tid], __ATOMIC_ACQUIRE);
  return !t || t->state == T_DONE || t->state == T_FREE || p->killed;   // gone: another join took it
}

int thread_join(struct proc *p, int tid, int *status, int may_block) {
  if (tid <= 0 || tid >= MAXTHREADS)
    return -ESRCH;
  for (;;) {
    spin_lock(&p->lock);
    struct thread *t = p->threads[tid];
    if (!t || t->state == T_FREE) {
      spin_unlock(&p->lock);
      return -ESRCH;
    }
    if (t->state == T_DONE) {
      *status = t->exit_status;
      t->state = T_FREE;                   // the tid can be reused
      // Its memory too, unless an async call is in flight: a call's completion
      // is posted to the thread that made it, even one that has ended since
      // (a thread kept here is reused, or freed with the process).
      if (__atomic_load_n(&p->async_inflight, __ATOMIC_SEQ_CST) == 0) {
        uintr_release(t);
        __atomic_store_n(&p->threads[tid], 0, __ATOMIC_RELEASE);
        kfree(t);
      }
      spin_unlock(&p->lock);
      return 0;
    }
    spin_unlock(&p->lock);
    if (!may_block)
      return -EAGAIN;
    KCO_WAIT_UNTIL(&p->thread_done, joinable(p, tid));
    if (p->killed)
      return -EINTR;
  }
}

static void proc_exit(struct proc *p, int status);

void thread_stop(struct thread *t, int status) {
  struct proc *p = t->proc;
  spin_lock(&p->lock);
  thread_set_state(t, T_DONE);
  t->exit_status = status;
  int last = --p->live_threads == 0;
  spin_unlock(&p->lock);
  waitq_wake_all(&p->thread_done);
  if (last)
    proc_exit(p, p->exit_code);
}

void proc_terminate(struct proc *p, int status) {
  spin_lock(&p->lock);
  if (!p->killed)
    p->exit_code = status;                 // the first reason wins
  __atomic_store_n(&p->killed, 1, __ATOMIC_SEQ_CST);
  // Blocked threads re-test `killed` when woken; running ones see it at their
  // next trap (a tick at the latest).
  for (int i = 0; i < p->nthreads; i++) {
    struct thread *t = p->threads[i];
    cid_t worker = t ? __atomic_load_n(&t->worker, __ATOMIC_SEQ_CST) : 0;
    if (worker)
      kco_wake(worker);       // (a worker that names itself later sees `killed`)
    else if (t)
      thread_park_kick(t);           // (does nothing unless a call of t is parked)
  }
  spin_unlock(&p->lock);
  waitq_wake_all(&p->child_exit);
  waitq_wake_all(&p->thread_done);
}

static void proc_exit(struct proc *p, int status) {
  int pid = p->pid;           // an orphan's slot may be reused once it is freed below
  // Async calls still running in the kernel use p's memory and files: make them
  // give up (killed, then a wake so that each re-tests it) and wait for every
  // one to finish before freeing anything. One that has not started yet sees
  // `killed` in its first wait.
  __atomic_store_n(&p->killed, 1, __ATOMIC_SEQ_CST);
  spin_lock(&p->lock);
  for (struct async_worker *w = p->async_workers; w; w = w->next)
    kco_wake(w->kcid);
  spin_unlock(&p->lock);
  syswork_cancel_parked(p);   // (reads parked on a pipe have no coroutine to wake)
  KCO_WAIT_UNTIL(&p->async_done, __atomic_load_n(&p->async_inflight, __ATOMIC_SEQ_CST) == 0);
  release_resources(p);       // the caller has already switched to the kernel page table
  spin_lock(&ptable_lock);
  for (int i = 0; i < NPROC; i++) {
    struct proc *c = &procs[i];
    if (c->state != P_FREE && c->parent == p) {
      c->parent = 0;          // orphans are freed when they exit
      if (c->state == P_ZOMBIE)
        free_slot(c);
    }
  }
  struct proc *parent = p->parent;
  p->exit_status = status;
  if (parent)
    p->state = P_ZOMBIE;
  else
    free_slot(p);
  spin_unlock(&ptable_lock);
  if (parent)
    waitq_wake_all(&parent->child_exit);
  init_exited(pid, status);
}

// A zombie child matching pid, or 0; *any_child says whether one exists at all.
static struct proc *find_child(struct proc *p, int pid, int *any_child) {
  *any_child = 0;
  for (int i = 0; i < NPROC; i++) {
    struct proc *c = &procs[i];
    if (c->state == P_FREE || c->parent != p || (pid != -1 && c->pid != pid))
      continue;
    *any_child = 1;
    if (c->state == P_ZOMBIE)
      return c;
  }
  return 0;
}

static int zombie_ready(struct proc *p, int pid) {
  int any;
  spin_lock(&ptable_lock);
  int r = find_child(p, pid, &any) != 0 || !any;
  spin_unlock(&ptable_lock);
  return r;
}

int proc_wait(struct proc *p, int pid, int *status, int may_block) {
  for (;;) {
    int any;
    spin_lock(&ptable_lock);
    struct proc *c = find_child(p, pid, &any);
    if (c) {
      int cpid = c->pid;
      *status = c->exit_status;
      free_slot(c);
      spin_unlock(&ptable_lock);
      return cpid;
    }
    spin_unlock(&ptable_lock);
    if (!any)
      return -ECHILD;
    if (!may_block)
      return -EAGAIN;
    KCO_WAIT_UNTIL(&p->child_exit, p->killed || zombie_ready(p, pid));
    if (p->killed)
      return -EINTR;
  }
}

int proc_kill(int pid) {
  if (pid <= 0)
    return -ESRCH;
  spin_lock(&ptable_lock);
  struct proc *victim = 0;
  for (int i = 0; i < NPROC; i++) {
    struct proc *p = &procs[i];
    if (p->pid == pid && p->state == P_RUNNING)
      victim = p;
  }
  if (!victim) {
    spin_unlock(&ptable_lock);
    return -ESRCH;
  }
  spin_unlock(&ptable_lock);
  proc_terminate(victim, -1);
  return 0;
}

// ---- the `procs` listing (the monitor, the status key) ----
// What a process and its threads are waiting for, to tell a lost wake from a
// busy system: the ring's head and tail (entries the process has not taken),
// completions held for lack of space, async calls in the kernel, and for each
// thread its state, hart, uwait, and pending and enabled user interrupts.
// Each process is copied under its locks and printed after they are let go:
// the process table's lock keeps its threads from being freed (free_slot),
// and its own lock keeps thread_join from freeing one.
#define LIST_THREADS 8             // threads shown per process (the rest counted)

struct thread_snap {
  int tid, state, on_hart, uwait_state, parked, in_handler, uintc;
  cid_t worker;
  uint64_t uip, uie, ustatus, posted, delivered;
};

static const char *const thread_state_names[] = {
  [T_FREE] = "free", [T_RUNNABLE] = "runnable", [T_RUNNING] = "running",
  [T_BLOCKED] = "blocked", [T_DONE] = "done",
};
static const char *const uwait_names[] = {
  [UWAIT_NONE] = "-", [UWAIT_WAITING] = "waiting", [UWAIT_KICKED] = "kicked",
};

static void print_procs(stats_out_fn *out) {
  out("procs: pid name state kmode | ring head tail held | async calls, parked reads | "
      "user ready | threads\n");
  for (int i = 0; i < NPROC; i++) {
    struct proc *p = &procs[i];
    struct thread_snap ts[LIST_THREADS];
    int nts = 0, nthreads, pid, state, kmode, killed, inflight, workers = 0, ready = 0;
    uint32_t head = 0, tail = 0, nwaiting = 0;
    char name[MAXNAME];
    spin_lock(&ptable_lock);
    if (p->state == P_FREE) {
      spin_unlock(&ptable_lock);
      continue;
    }
    pid = p->pid;
    state = p->state;
    kmode = p->kmode;
    killed = __atomic_load_n(&p->killed, __ATOMIC_RELAXED);
    inflight = __atomic_load_n(&p->async_inflight, __ATOMIC_RELAXED);
    memcpy(name, p->name, sizeof name);
    name[MAXNAME - 1] = 0;
    if (state == P_RUNNING && !killed)
      ready = prio_user_has_ready(p);    // (its executor page lives until the process ends)
    spin_lock(&p->lock);
    nthreads = p->nthreads;
    for (struct async_worker *w = p->async_workers; w; w = w->next)
      workers++;
    for (int t = 0; t < nthreads && nts < LIST_THREADS; t++) {
      struct thread *th = p->threads[t];
      if (!th || th->state == T_FREE)
        continue;
      ts[nts++] = (struct thread_snap){
        .tid = th->tid, .state = th->state, .on_hart = th->on_hart,
        .uwait_state = th->uwait_state, .parked = th->park.wq != 0,
        .in_handler = (int)th->ui.in_handler, .uintc = th->ui.uintc_entry1,
        .worker = th->worker, .uip = th->ui.n.uip, .uie = th->ui.n.uie,
        .ustatus = th->ui.n.ustatus, .posted = th->ui.posted, .delivered = th->ui.delivered,
      };
      if (th->ui.uintc_entry1 && uintc_pending(th->ui.uintc_entry1 - 1))
        ts[nts - 1].uip |= NM_USIP;      // (waiting in its controller entry)
    }
    spin_unlock(&p->lock);
    spin_lock(&p->ring_lock);
    if (p->ring) {
      head = p->ring->head;
      tail = p->ring->tail;
      nwaiting = p->ring_nwaiting;
    }
    spin_unlock(&p->ring_lock);
    uint64_t parked = 0;          // (no popcount: libgcc's is not built for the kernel)
    for (uint64_t u = __atomic_load_n(&p->apark_used, __ATOMIC_RELAXED); u; u &= u - 1)
      parked++;
    spin_unlock(&ptable_lock);

    static const char *const state_names[] = { "free", "embryo", "running", "zombie" };
    static const char *const kmode_names[] = {
      [KMODE_COROUTINE] = "coroutine", [KMODE_THREAD] = "thread", [KMODE_POLLER] = "poller",
    };
    out("  %d %s %s%s kmode %s | ring %u %u (%u untaken) held %u | async %d (%d coroutines), "
        "parked %lu | ready %d | %d\n",
        pid, name, state_names[state], killed ? " killed" : "",
        kmode >= 0 && kmode <= KMODE_POLLER ? kmode_names[kmode] : "?", head, tail, tail - head,
        nwaiting, inflight, workers, parked, ready, nthreads);
    for (int t = 0; t < nts; t++)
      out("    thread %d %s hart %d uwait %s%s worker 0x%lx | uip 0x%lx uie 0x%lx ustatus 0x%lx "
          "in handler %d | posted %lu delivered %lu%s\n",
          ts[t].tid, thread_state_names[ts[t].state], ts[t].on_hart, uwait_names[ts[t].uwait_state],
          ts[t].parked ? " parked" : "", (unsigned long)ts[t].worker, ts[t].uip, ts[t].uie,
          ts[t].ustatus, ts[t].in_handler, ts[t].posted, ts[t].delivered,
          ts[t].uintc ? " (controller entry)" : "");
    if (nthreads > nts)
      out("    (%d more thread slots not shown)\n", nthreads - nts);
  }
}
STATS_LISTING(50, "procs", print_procs);
