// The user-kernel ABI: system call numbers, error numbers and fixed user
// addresses. Shared by the kernel and by user/ (which includes this file), so it
// holds only #defines and plain structs. docs/ABI.md explains each call.
//
// Calling convention: a7 = call number, a0..a5 = arguments, `ecall`;
// the result comes back in a0: >= 0 on success, -errno on failure.
#ifndef CORAL_ABI_H
#define CORAL_ABI_H

// ---- system calls ----
#define SYS_exit 1        // exit(int status)                      -> does not return
#define SYS_getpid 2      // getpid()                              -> pid
#define SYS_write 3       // write(int fd, const void *buf, long n) -> bytes written
#define SYS_read 4        // read(int fd, void *buf, long n)        -> bytes read, 0 = end of file
#define SYS_close 5       // close(int fd)                         -> 0
#define SYS_pipe 6        // pipe(int fds[2])                      -> 0; fds[0] reads, fds[1] writes
#define SYS_sleep 7       // sleep(long ms)                        -> 0
#define SYS_yield 8       // yield()                               -> 0
#define SYS_spawn 9       // spawn(const char *name, const char *const argv[]) -> child pid
#define SYS_wait 10       // wait(int pid, int *status)            -> pid of the reaped child; pid -1 = any
#define SYS_kill 11       // kill(int pid)                         -> 0; the process exits with status -1
#define SYS_brk 12        // brk(void *addr)                       -> the new break (addr 0: query)
#define SYS_uptime 13     // uptime()                              -> milliseconds since boot
#define SYS_kstat 14      // kstat(int what)                       -> a kernel counter (KSTAT_*), for tests
#define SYS_uwait 15      // uwait()                               -> 0 once a user interrupt is pending
#define SYS_thread_create 16  // thread_create(void (*entry)(void *), void *arg, void *stack_top) -> tid
#define SYS_thread_exit 17    // thread_exit(int status)           -> does not return
#define SYS_thread_join 18    // thread_join(int tid, int *status)  -> 0
// TCP sockets (net/socket.c, over lwIP; the calls are in kernel/sys_net.c). IPv4 only; the address is always
// the guest's own (10.0.2.15 under QEMU user networking).
#define SYS_socket 19     // socket()                              -> fd of a new TCP socket
#define SYS_bind 20       // bind(int fd, int port)                -> 0
#define SYS_listen 21     // listen(int fd, int backlog)           -> 0
#define SYS_accept 22     // accept(int fd)                        -> fd of the new connection
#define SYS_recv 23       // recv(int fd, void *buf, long n)       -> bytes received, 0 = peer closed
#define SYS_send 24       // send(int fd, const void *buf, long n) -> bytes queued (1..n)
#define SYS_shutdown 25   // shutdown(int fd, int how)             -> 0; how: SHUT_RD/WR/RDWR
#define SYS_setkmode 26   // setkmode(int mode)                    -> previous mode (KMODE_*)
#define SYS_uintr_recv 27 // uintr_recv()                          -> user address of this thread's receive page, or 0
#define SYS_uintr_ret 28  // (user-interrupt entry only) acknowledge + uret in one trap; see below
#define SYS_dup 29        // dup(int fd)                           -> the lowest free descriptor, for the same file
#define SYS_connect 30    // connect(int fd, uint32_t ip, int port) -> 0; ip in host order (127.0.0.1 = 0x7f000001)
#define NSYSCALL 31

// shutdown() directions
#define SHUT_RD 0
#define SHUT_WR 1
#define SHUT_RDWR 2

// How the kernel serves this process's calls that must wait (setkmode; chosen at
// run time, inherited by spawn). The user side picks coroutines or threads itself.
#define KMODE_COROUTINE 0 // a stackless kernel coroutine per waiting call (default)
#define KMODE_THREAD 1    // a stackful kernel coroutine per waiting call that blocks, as a kernel thread does
#define KMODE_POLLER 2    // one kernel thread per process polls all of its waiting async calls

// The asynchronous form of a call that may wait (read, write, sleep, wait,
// accept, recv, send):
// a7 = SYS_x | SYS_ASYNC, the usual arguments, a4 = the calling coroutine's
// priority, a5 = its cid. Returns the result at once if nothing must wait (the
// fast path), else -EINPROGRESS; the result then arrives as {cid, result} in the
// completion ring, announced by a user software interrupt.
#define SYS_ASYNC 0x10000

// SYS_uintr_ret: how a user-interrupt handler ends on the emulated backend,
// where `csrc uip` and `uret` would each cost an illegal-instruction trap
// through M-mode. One ecall does both: clear USIP (as a `csrc uip` at the
// handler's entry would have: kept if a post came after the entry), then uret. The handler's code has already
// restored every register except a0 and a7, which it leaves at sp - 64 and
// sp - 8 (its frame, just popped): the kernel restores them from there.
#define UINTR_RET_A0_OFF 64
#define UINTR_RET_A7_OFF 8
// Threads per process, the main one included: enough for matrixd's thread
// models (three threads a connection) to hold a thousand connections and more.
#define MAXTHREADS_ABI 4096

// kstat() selectors: counters that user tests compare before and after.
#define KSTAT_FREE_PAGES 1
#define KSTAT_KMALLOC_BYTES 2
#define KSTAT_KMALLOC_OBJECTS 3
#define KSTAT_LIVE_COROUTINES 4
#define KSTAT_NPROCS 5
#define KSTAT_UINTR_POSTED 6     // user interrupts raised for this process
#define KSTAT_RING_OVERFLOWS 7   // completions that waited in the kernel for ring space
#define KSTAT_SOCKETS 8          // sockets open in the whole kernel (listening + connections)
#define KSTAT_TCP_PCBS 9         // lwIP TCP control blocks alive (including TIME_WAIT)
#define KSTAT_CACHE_BYTES 10     // of KSTAT_KMALLOC_BYTES: caches that grow once and stay (executor slots, timer heaps, descriptor tables)
#define KSTAT_CACHE_OBJECTS 11   // of KSTAT_KMALLOC_OBJECTS: the same caches
#define KSTAT_ZOMBIES 12         // the caller's children that have exited and wait to be reaped
#define KSTAT_UINTR_POST_INSTRET 13  // the posting hart's instret at the caller's last user interrupt post (benchmarks)
#define KSTAT_UINTR_NATIVE 14    // 1 if user interrupts are native (the N extension), 0 if emulated
#define KSTAT_UINTR_POST_COST 15 // instructions the last post to the calling thread took on the posting hart (benchmarks)
#define KSTAT_POLLER_ATTEMPTS 16 // KMODE_POLLER: calls the caller's polling kernel thread has tried (0 if none)
#define KSTAT_NOFILE 17          // descriptors a process may hold (NOFILE, or bootargs nofile=N)
#define KSTAT_TIMERS 18          // coroutines alive with a timer armed (each once; stale entries not counted)
#define KSTAT_HEAP_PAGES 19      // pages of every process's heap (brk): user memory that grows to a high-water mark
#define KSTAT_TCP_HASH_BAD 20    // how far lwIP's hash of TCP connections is out of step with its lists (0 unless broken)
#define KSTAT_HARTS 21           // harts online (matrixd's UC models run an executor thread on each)
#define KSTAT_ASYNC_PARKED 22    // the caller's async pipe reads that parked on the pipe with no kernel coroutine, so far
#define KSTAT_KMALLOC_PAGES 23   // pages kmalloc holds (slabs and large runs), after its caches are given back
#define KSTAT_UWAIT_KICKS 24     // the caller's threads woken from uwait by a sibling's kernel entry (kick), so far
#define KSTAT_NET_TIMER_RUNS 25  // times the network stack's timer coroutine has run lwIP's timeouts (0 before the stack starts)
#define KSTAT_NET_WINDOW_HELD 26 // bytes receives took that lwIP's windows have not been given back yet (net/socket.c)
#define KSTAT_NET_SEND_HELD 27   // bytes sends left to the network lock's holder that lwIP has not been given yet (net/socket.c)
#define KSTAT_NET_SENDS_LATER 28 // sends that found the network lock held and left their bytes to its holder, so far
#define KSTAT_COUNT 29           // selectors are 1 .. KSTAT_COUNT - 1
// Or'ed into a selector: first wait (1 s at most) until nothing else runs or is
// ready, no other thread and no kernel coroutine, so that a leak check's two
// samples both see the machine at rest (docs/ABI.md, kstat).
#define KSTAT_QUIET 0x100

// ---- errors (returned negated) ----
#define EPERM 1
#define ENOENT 2
#define ESRCH 3
#define EINTR 4
#define EIO 5
#define E2BIG 7
#define ENOEXEC 8
#define EBADF 9
#define ECHILD 10
#define EAGAIN 11
#define ENOMEM 12
#define EFAULT 14
#define ENODEV 19
#define EINVAL 22
#define EMFILE 24
#define EPIPE 32
#define EADDRINUSE 98
#define ENOTSOCK 88
#define ECONNABORTED 103
#define ECONNRESET 104
#define EISCONN 106
#define ENOTCONN 107
#define ENAMETOOLONG 36
#define ENOSYS 38
#define EINPROGRESS 115
#define EADDRNOTAVAIL 99
#define ENETUNREACH 101
#define ETIMEDOUT 110
#define ECONNREFUSED 111

// ---- limits ----
#define NOFILE 1100             // open descriptors per process by default (a server holds one per connection)
#define NOFILE_MAX 16384        // ... and at most: boot with nofile=N (N <= NOFILE_MAX) to change it
#define MAXARG 16               // argv entries for spawn
#define MAXARGLEN 128           // bytes per argv string, including the NUL
#define MAXNAME 32              // program name, including the NUL
#define PIPE_SIZE 4096

// ---- fixed user addresses (Sv39, lower half; the kernel owns 0x80000000 and up) ----
#define USER_BASE 0x10000UL             // programs are linked here
#define USER_STACK_TOP 0x7ff00000UL     // initial sp (argv strings sit just below)
#define USER_STACK_SIZE 0x20000UL       // 128 KiB; the page below it is an unmapped guard
#define USER_HEAP_MAX 0x60000000UL      // brk may not pass this
#define USER_VDSO 0x70000000UL          // the shared scheduler image (vdso/), the same pages in every process
#define USER_EXEC_PAGE 0x70100000UL     // the process's executor state (RW)
#define USER_RING 0x70200000UL          // the completion ring (RW, shared with the kernel)
#define USER_VVAR 0x70300000UL          // read-only kernel data (global priority bitmap)
#define USER_UINTC_RECV 0x70400000UL    // + tid * 4 KiB: a thread's receive page on the user-interrupt controller

// ---- the completion ring (one page at USER_RING, shared with the kernel) ----
// The kernel writes entries at tail and then advances tail; the process reads
// entries from head and then advances head. Both count up forever; the slot is
// the count modulo RING_ENTRIES. When the ring is full, completions wait in the
// kernel (nothing is lost) and move in as the process frees space.
#define RING_ENTRIES 255
#ifndef __ASSEMBLER__
struct ring_entry {
  unsigned long cid;
  long result;
};
struct completion_ring {
  volatile unsigned int head;       // written by the process
  volatile unsigned int tail;       // written by the kernel
  volatile unsigned int waiting;    // completions held in the kernel for lack of space
  unsigned int reserved;
  struct ring_entry e[RING_ENTRIES];
};
#endif

// ---- kernel-perceived priorities ----
// The runtime stores the priority of the coroutine it is running at this offset
// of its executor page (NPRIO when idle); with the executor's ready bitmap it
// tells the kernel how urgent the process's work is. Both are untrusted.
#define EXEC_PAGE_RUNNING_PRIO 4088
// The kernel stores here the priority it ranks the process at (the one counted
// in the vvar page's ranks), VVAR_NPRIO when it ranks it nowhere (no thread
// runnable), so the runtime can tell its own count in ranks from others'.
#define EXEC_PAGE_PUBLISHED_PRIO 4084
// The vvar page (USER_VVAR, read-only), kept current by the kernel at every
// kernel entry and thread state change. One word, `ranks`, answers the
// runtime's question before each dispatch -- "has the kernel or a process
// work better than p?" -- with one load and one and, with a mask it keeps
// (vvar_better_mask):
//   - bits [7q, 7q + 7), q < VVAR_NPRIO: how many processes with a runnable
//     thread the kernel ranks at priority q (at most NPROC, 64: seven bits
//     hold it, and the field of a process moving away is never 0, so an add
//     never borrows from or carries into a neighbour);
//   - bits [56, 64): a copy of the kernel executor's ready bitmap's low byte.
// A process moves between fields by one atomic add of the difference; the
// kernel stores its byte at every kernel entry (an AMO is atomic against an
// overlapping byte store). kernel_bitmap is the kernel's whole bitmap.
// timebase_hz is how fast the time CSR counts (set once at boot), so that
// uptime() reads the clock in user mode, with no system call: user/ulib.c. 0
// with bootargs uptime=syscall (then uptime() makes the call, as before).
#define VVAR_NPRIO 8
#define VVAR_RANK_BITS 7
#define VVAR_KERNEL_SHIFT 56
#ifndef __ASSEMBLER__
struct vvar {
  volatile unsigned long ranks;
  volatile unsigned long kernel_bitmap;
  volatile unsigned long timebase_hz;
};
// The fields of ranks better than priority p: every process's and the kernel's.
static inline unsigned long vvar_better_mask(unsigned long p) {
  return ((1UL << (VVAR_RANK_BITS * p)) - 1) | ((1UL << p) - 1) << VVAR_KERNEL_SHIFT;
}
// How many processes ranks says are at priority p.
static inline unsigned long vvar_rank_count(unsigned long ranks, unsigned long p) {
  return (ranks >> (VVAR_RANK_BITS * p)) & ((1UL << VVAR_RANK_BITS) - 1);
}
#endif

// Standard descriptors: every process starts with the console on 0, 1 and 2.
#define STDIN 0
#define STDOUT 1
#define STDERR 2

#endif
