// The scheduler trace: a timeline of what each hart's scheduler does, for
// students to look at (make trace; scripts/trace2json.py turns a dump into
// Chrome trace-event JSON and a PNG).
//
// Each hart appends fixed-size binary records to a ring of its own, so the hot
// path takes no lock: a hart is the only writer of its ring, and it masks
// interrupts for the few stores of one record, so an interrupt's own record
// cannot land in the middle of it. When the ring is full the oldest records
// are overwritten and counted as lost (the dump says how many).
//
// Off by default. Every hook is a TRACE_* macro: the address of a global flag,
// its load, and a branch that is never taken while tracing is off (3
// instructions: auipc, lw, bnez); the arguments are only evaluated, and the
// out-of-line recorder only called, when it is on. (A copy of the flag in
// struct hart, tp-relative, would save the auipc, but it grows struct hart
// past 128 bytes, and indexing harts[] then costs a multiply's worth of
// instructions wherever it is done: measured, it lost.)
//
// Timestamps come from the time CSR (rdtime), not rdcycle or rdinstret: time
// is the one counter the ISA makes common to all harts (the platform's mtime),
// so the per-hart rings merge into one timeline without calibration, and it
// keeps counting while a hart sleeps in wfi. cycle and instret are per hart,
// with no common origin, and instret stands still in wfi. The price is
// resolution: 10 MHz on QEMU virt, so events closer than 100 ns share a
// timestamp (their order within a hart is still exact: records carry a
// sequence number).
#ifndef TRACE_H
#define TRACE_H
#include <stdint.h>

struct co;
struct thread;

// Record types. who is 0 for the kernel, else a pid; tid the thread in it.
enum trace_type {
  TR_RUN = 1,      // a kernel coroutine is dispatched (cid, prio): arg = its
                   // function's address (poll, or a stackful one's entry)
  TR_END,          // ... and gives the hart back: arg = its poll's result (CO_*)
  TR_UENTER,       // a switching coroutine (cid) enters user mode with thread who:tid
  TR_UEXIT,        // ... and the thread traps back: arg = scause code, +256 if an interrupt
  TR_SYSCALL,      // a system call arrives: arg = a7 (number | SYS_ASYNC), cid = caller if async
  TR_SUBMIT,       // a call that must wait is handed to a kernel coroutine: arg = number
  TR_COMPLETE,     // ... and its result is delivered: arg = result (low 32 bits)
  TR_UPOST,        // a user interrupt is posted to who:tid
  TR_UINTR,        // ... and delivered: the thread is sent to its handler
  TR_IRQ_TIMER,    // a timer interrupt (cid: the coroutine it interrupted)
  TR_IRQ_SOFT,     // an IPI (another hart's kick)
  TR_IRQ_DEV,      // a device interrupt: arg = its PLIC number
};

// One record: 32 bytes, little-endian, the layout scripts/trace2json.py reads.
struct trace_rec {
  uint64_t ts;          // time CSR
  uint64_t cid;         // the coroutine concerned (kernel or user, by type), 0 if none
  int32_t arg;          // by type, above
  int32_t who;          // 0: kernel; otherwise the pid
  uint32_t seq;         // this hart's record number since tracing started
  uint8_t type;         // enum trace_type
  uint8_t hart;         // hart index
  uint8_t prio;         // RUN/END/UENTER: the kernel coroutine's priority;
                        // others: what the process runs now (its exec page);
                        // 255: unknown
  uint8_t tid;          // thread within who
};
_Static_assert(sizeof(struct trace_rec) == 32, "trace records are 32 bytes");

extern int trace_enabled;

static inline int trace_on(void) {
  // The load written out: left to itself, GCC sometimes spends a third
  // instruction on the address (auipc, add, lw) where two do (sched_loop).
  // (A long: lw sign-extends, and an int result would cost a sext.w.)
  long on;
  __asm__ volatile("1: auipc %0, %%pcrel_hi(trace_enabled)\n"
                   "   lw %0, %%pcrel_lo(1b)(%0)" : "=r"(on));
  return __builtin_expect(on != 0, 0);
}

// The recorders, out of line (kernel/trace.c); call them through the macros.
void trace_co(int type, const struct co *c, long arg);
void trace_thread(int type, struct thread *t, uint64_t cid, long arg);
void trace_irq(int type, long arg);

#define TRACE_CO(type, c, arg)                                                 \
  do { if (trace_on()) trace_co(type, c, arg); } while (0)
#define TRACE_THREAD(type, t, cid, arg)                                        \
  do { if (trace_on()) trace_thread(type, t, cid, arg); } while (0)
#define TRACE_IRQ(type, arg)                                                   \
  do { if (trace_on()) trace_irq(type, arg); } while (0)

// Control. records: per hart (rounded up to a power of two; 0: the default).
// start clears the rings (and allocates them the first time); stop waits until
// no hart is in the middle of a record; dump stops, then prints the rings on
// the console between TRACE-BEGIN and TRACE-END lines (base64).
int trace_start(uint32_t records);
void trace_stop(void);
void trace_dump(void);
void trace_status(void);
// The bootarg `trace[=RECORDS]` (kernel/job.c): on from boot, and dumped when
// the machine powers off (kernel/poweroff.c calls trace_at_poweroff).
void trace_boot(const char *records);
void trace_at_poweroff(void);

#endif
