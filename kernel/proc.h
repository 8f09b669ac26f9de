// Processes and their threads. A process is an address space, open files, a
// completion ring and up to MAXTHREADS user threads; a thread runs when a
// switching coroutine (kernel/switcher.c) picks it from the run queue and enters
// U-mode with user_return(). Traps come back as the return of that call.
// Blocking system calls run as kernel coroutines (kernel/syscall.c, syswork.c)
// while the calling thread waits in T_BLOCKED. A process's own state is only
// P_FREE, P_EMBRYO (being built), P_RUNNING (alive) or P_ZOMBIE; P_RUNNABLE and
// P_BLOCKED are not used.
#ifndef PROC_H
#define PROC_H
#include <stdint.h>
#include "abi.h"
#include "executor.h"
#include "spinlock.h"
#include "fd.h"
#include "uvm.h"
#include "waitq.h"
#include "uintr.h"

#define NPROC 64
#define APARK_SLOTS 64            // parked async pipe reads per process (one bit each)
#define USER_PRIO_CEILING 1      // the best priority a process (or its kernel work) may get; 0 is the kernel's
#define PROC_START_PRIO 4        // a new process's priority until its runtime reports (COPS_MAIN_PRIO)

// Saved by user_return/uservec (kernel/uservec.S); offsets are fixed there.
struct uctx {
  uint64_t k[4];         // kernel side: ra, sp, s0, tp             (0..24)
  uint64_t x[32];        // user x0..x31 (x[0] unused)              (32..280)
  uint64_t pc;           // user pc                                 (288)
};
_Static_assert(__builtin_offsetof(struct uctx, x) == 32 && __builtin_offsetof(struct uctx, pc) == 288,
               "kernel/uservec.S has these offsets");
#define REG_SP 2
#define REG_A0 10
#define REG_A1 11
#define REG_A7 17

enum proc_state { P_FREE = 0, P_EMBRYO, P_RUNNING, P_ZOMBIE };

#define MAXTHREADS MAXTHREADS_ABI   // user threads per process (thread 0 runs main)

// A user thread: the unit a switching coroutine runs. Threads of a process share
// its address space, files and completion ring; each has its own registers and
// its own (shadow) user-interrupt state, as the N extension keeps u-CSRs per hart.
enum thread_state { T_FREE = 0, T_RUNNABLE, T_RUNNING, T_BLOCKED, T_DONE };

// A synchronous call that waits on a wait queue with no kernel coroutine of
// its own (KMODE_COROUTINE; kernel/syswork.c, syswork_park): the thread's own
// waiter is on the queue, and the waker makes the thread runnable; the
// switcher that takes it repeats the call before returning to U-mode.
enum park_state {
  PARK_NONE = 0,
  PARK_WAITING,    // registered; the thread is still in its trap
  PARK_BLOCKED,    // T_BLOCKED: whoever moves it out of here queues the thread
  PARK_WOKEN,      // the queue fired (its waker unlinked the waiter first)
  PARK_KICKED,     // kill: queued to notice; the waiter may still be linked
};

struct file;
struct socket;
struct sysargs;
struct thread;
struct thread_park {
  struct waiter waiter;           // on wq while parked (notify: thread_park_notify)
  struct waitq *wq;               // 0: no call parked
  struct file *file;              // the call's references while it waits (sysargs'
  struct socket *sock;            //   file and sock: they keep wq alive)
  long (*call)(struct thread *, struct sysargs *, int);   // its handler (a syscall_fn)
  int state;                      // enum park_state (atomic)
};

// Where a thread is in uwait(): a sibling's kernel entry may kick a waiting
// thread (WAITING -> KICKED) when the process has ready coroutines.
enum uwait_state { UWAIT_NONE = 0, UWAIT_WAITING, UWAIT_KICKED };

struct thread {
  struct uctx uc;                 // first: uservec finds it through sscratch
  struct proc *proc;
  int tid;                        // index in proc->threads
  enum thread_state state;
  int exit_status;                // thread_exit's status, for thread_join
  struct uintr_state ui;          // shadow u-CSRs (emulated backend)
  int on_hart;                    // hart index while in U-mode, else -1
  cid_t worker;                   // kernel coroutine serving its blocking call (it names
                                  // itself here before it first waits: publish_worker), or 0
  struct thread_park park;        // or its blocking call parked on a wait queue (no coroutine)
  struct waitq uwait;             // uwait() sleeps here
  int uwait_state;                // enum uwait_state (atomic; kernel/syscall.c, sys_uwait)
  struct thread *rq_next;         // run-queue link
  uint64_t quiet_until;           // kstat(KSTAT_QUIET) under way: its safety net's deadline
                                  // across the rounds it gives the hart up for (kernel/syscall.c), or 0
};

struct file;
struct waiting_completion;
struct worker;

// An async call's kernel coroutine, as the process knows it (so exit can wake it).
struct async_worker {
  struct async_worker *next, *prev;
  cid_t kcid;
};

struct proc {
  int live_threads;               // not T_FREE or T_DONE; guarded by lock
  int nactive;                    // T_RUNNABLE or T_RUNNING (atomic; thread_set_state)
  uint32_t pub_prio;              // the priority prio_publish ranks it at, or PRIO_UNRANKED
  int nthreads;                   // threads[0, nthreads) are allocated and have been used: loops stop there
  int uwaiters;                   // threads asleep in uwait (atomic; every kernel entry looks)
  uint64_t ready_since;           // rdtime when a kernel entry first saw ready coroutines with
                                  //   a sibling asleep in uwait; 0: none since (uwait_kick_siblings)
  uint64_t uwait_kicks;           // sibling threads its kernel entries woke (KSTAT_UWAIT_KICKS)
  int exit_code;                  // status the process ends with once all threads stop
  struct waitq thread_done;       // thread_join and exit wait here
  struct spinlock lock;           // state, killed, parent/child links
  enum proc_state state;
  int pid;
  char name[MAXNAME];
  pte_t *pagetable;
  uint64_t heap_base, brk;        // brk in [heap_base, USER_HEAP_MAX]
  struct spinlock vm_lock;        // serializes changes to a running process's address space (brk, uintr_recv)
  struct proc *parent;
  int exit_status;
  int killed;
  struct waitq child_exit;        // the parent's wait() sleeps here
  struct executor *exec_page;     // kernel address of its executor page (untrusted contents)
  uint64_t syscalls, traps;       // counters
  // async calls
  struct completion_ring *ring;   // kernel address of the ring page
  struct spinlock ring_lock;
  struct waiting_completion *ring_waiting;   // completions waiting for ring space
  struct waiting_completion *ring_waiting_tail;   // (appends in O(1))
  uint32_t ring_nwaiting;                    // its length (ring->waiting tells the process)
  uint64_t ring_overflows;
  int async_inflight;             // async calls still running in the kernel
  struct async_worker *async_workers;        // those that have started, guarded by lock
  struct waitq async_done;        // exit waits here until they have all finished
  // Async pipe reads parked with no coroutine, completed by their waker
  // (kernel/syswork.c): slot i is taken while bit i is set, and holds the
  // call while nobody has claimed it (its claimer swaps it for 0).
  uint64_t apark_used;
  uint64_t apark_total;           // how many have parked (KSTAT_ASYNC_PARKED)
  struct worker *apark[APARK_SLOTS];
  int kmode;                      // KMODE_*: how calls that wait are served (kernel/syswork.c)
  struct poller *poller;          // KMODE_POLLER: the polling kernel thread, guarded by lock
  struct fdtable fds;             // descriptors (kernel/fd.c); changed under lock
  // threads[i] is allocated (kzalloc) when tid i is first used and freed with
  // the process's slot, so an idle slot costs one pointer per thread, not a
  // whole thread each (a static table of them was 19 MiB of .bss). Last,
  // with the descriptors before them: the fields above, used on every trap,
  // then sit at small offsets (one load each, not an address computation first).
  struct thread *threads[MAXTHREADS];
};

void proc_init(void);
// Create a process running program `name` with argv (kernel copies). Returns the
// new process (P_RUNNING, its first thread queued) or NULL with *err set to a
// negative errno.
struct proc *proc_spawn(const char *name, int argc, char *const argv[], struct proc *parent, int *err);
// Make pid the init process: its exit is reported on the console and, with
// shutdown_on_exit, shuts the machine down with its status (failure if non-zero).
void proc_set_init(int pid, int shutdown_on_exit);
void thread_make_runnable(struct thread *t);
struct thread *runq_pop_wait(void);        // block the calling stackful coroutine until one is runnable
// t, running, was preempted: queue it at prio (behind its equals; the caller
// knows t's rank: its process published it at this trap) and take the best
// runnable thread, in one step: t itself if nothing better or equal waits.
struct thread *runq_switch(struct thread *t, uint32_t prio);

// The best priority waiting for a switcher, NPRIO if none (lock-free: a
// glance, on every yield and tick; the queue's own decisions take its lock).
static inline uint32_t proc_runq_best(void) {
  extern uint64_t rq_bitmap;     // (kernel/proc.c; bit p: a thread of priority p waits)
  uint64_t bm = __atomic_load_n(&rq_bitmap, __ATOMIC_RELAXED);
  return bm ? exec_ctz64(bm) : NPRIO_DEFAULT;
}
// Every change of a thread's state goes through here: it keeps p->nactive
// and so the process's count in the vvar page's ranks (prio_publish) right.
void thread_set_state(struct thread *t, enum thread_state s);
// Parking (struct thread_park). thread_park_block: t, registered
// (PARK_WAITING) and already T_BLOCKED, blocks: 1, or 0 if it was woken
// meanwhile (then it is the caller's to run again). After 1 the caller must
// not touch t: it may run on another hart at once.
int thread_park_block(struct thread *t);
void thread_park_notify(struct waiter *w);   // the waiter's notify: the queue fired
void thread_park_kick(struct thread *t);     // kill: queue a parked thread to notice
// The calling switcher's thread t stops for good (status for thread_join). The
// last thread of a process to stop ends the process with p->exit_code.
void thread_stop(struct thread *t, int status);
// End the whole process with status: every thread stops at its next trap (a
// blocked one is woken); the last one frees the process.
void proc_terminate(struct proc *p, int status);
int thread_create(struct proc *p, uint64_t entry, uint64_t arg, uint64_t sp);   // tid or -errno
int thread_join(struct proc *p, int tid, int *status, int may_block);          // 0 or -errno
int proc_kill(int pid);
int proc_count(void);
uint64_t proc_heap_pages(void);   // KSTAT_HEAP_PAGES: pages below every process's brk
int proc_zombie_children(struct proc *p);
// Wait for a child (pid or -1) to exit; status is written to *status_kernel.
// may_block 0: returns -EAGAIN instead of blocking.
int proc_wait(struct proc *p, int pid, int *status_kernel, int may_block);

void proc_async_start(struct proc *p);
void proc_async_done(struct proc *p);
void proc_async_register(struct proc *p, struct async_worker *w, cid_t kcid);
void proc_async_unregister(struct proc *p, struct async_worker *w);

// kernel/uservec.S
void user_return(struct uctx *uc);   // only through switcher.c's enter_user (see uservec.S)

#endif
