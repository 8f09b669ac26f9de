// Stackful coroutines on top of the executor: a coroutine with its own stack, so
// ordinary C can block at any call depth. Its executor entry is an ordinary
// co_poll_fn (stackful_poll) or, on the hot path, the inline stackful_resume.
//
// Two switches, both here:
//   - CACS (context-aware context switching, Photon): an inline-asm switch that
//     stores only sp, the frame pointer and the resume address, and declares every
//     other register clobbered. The compiler then spills only what is live at that
//     call site. It jumps through t1 and links into t2, not a link register
//     (x1/x5), so the return-address predictor's stack is not corrupted.
//   - full save: the classic out-of-line switch (ra, sp, s0-s11), for switches
//     that are not at a known call site and as the benchmark baseline.
// A coroutine uses one kind for its whole life (chosen at init).
#ifndef STACKFUL_H
#define STACKFUL_H
#include <stdint.h>
#include <stddef.h>
#include "executor.h"

struct cacs_ctx { uintptr_t sp, pc, fp; };
struct full_ctx { uintptr_t ra, sp, s[12]; };


// A full-save coroutine's two contexts. They live at the top of its own
// stack (stackful_init carves them out), not in struct stackful: a CACS
// coroutine, the common kind, then carries 48 bytes of contexts instead of
// 272, which matters to a server holding thousands of them (matrixd: three
// per connection).
struct full_pair { struct full_ctx co, exec; };

struct stackful {
  struct cacs_ctx co_cacs, exec_cacs;   // CACS: where the coroutine / executor resume
  struct full_pair *full;               // full-save: the same, all callee-saved regs (NULL for CACS)
  void (*fn)(void *);
  void *arg;
  uint64_t *stack_lo;                   // lowest word of the stack: canary = its own address
  int result;                           // full-save only: CO_YIELD / CO_PENDING / CO_DONE
                                        // (the CACS switch passes it in a register)
  int full_save;
  void (*release)(struct stackful *);   // called on the executor side after CO_DONE
};

// Prepare sf to run fn(arg) on [stack, stack + size). release may be NULL.
void stackful_init(struct stackful *sf, void *stack, size_t size, void (*fn)(void *),
                   void *arg, int full_save, void (*release)(struct stackful *));
// co_poll_fn for a stackful coroutine: run it until it yields, blocks or ends.
// Defined by each environment (kernel/sched.c, user/cops.c), like the two hooks
// below, so that the shared vDSO image has no undefined symbols.
int stackful_poll(void *arg);
// The coroutine that the calling hart/thread is running (environment hook).
struct stackful *stackful_self(void);
// Reports a smashed stack canary; never returns (environment hook).
__attribute__((noreturn)) void stackful_overflow(struct stackful *sf);

void full_switch(struct full_ctx *save, const struct full_ctx *load);   // switch.S
void stackful_trampoline(void);                                         // switch.S

#if defined(__riscv_flen)
#define CACS_FP_CLOBBERS , "ft0", "ft1", "ft2", "ft3", "ft4", "ft5", "ft6", "ft7", \
  "fs0", "fs1", "fs2", "fs3", "fs4", "fs5", "fs6", "fs7", "fs8", "fs9", "fs10", "fs11", \
  "fa0", "fa1", "fa2", "fa3", "fa4", "fa5", "fa6", "fa7", "ft8", "ft9", "ft10", "ft11"
#else
#define CACS_FP_CLOBBERS
#endif

// The CACS switch between a coroutine and the executor. Both contexts live in
// the coroutine's struct stackful, so one base register (a0 = sf) addresses
// both, and the coroutine's result travels in a1, not through memory (as
// result - CO_YIELD: the common yield is 0, which the executor tests with one
// branch, against a register it need not load with 1 first). s0 is the
// frame pointer in code built with one (the kernel), which GCC does not let
// asm clobber, so it is saved explicitly (in user code too, which has none:
// one switch for both).
// The side that switches away does not store its own resume address (that
// would take an auipc and an addi to form it, and a store): its jump links
// it into t2, and the side that resumes stores it, at its own resume point,
// into the slot the switch took its pc from, which is the other side's (the
// first entry does the same in stackful_trampoline). Six instructions and
// that store, where forming the address was nine. t2, not ra or t0: a jump
// that links into x1 or x5 pushes onto the return-address predictor's stack,
// and nothing would pop it.
#define CACS_CLOBBERS "ra", "t0", "t1", "t2", "t3", "t4", "t5", "t6", "a2", "a3", "a4", \
  "a5", "a6", "a7", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", \
  "memory" CACS_FP_CLOBBERS

#define CACS_SWITCH(save, load)                                   \
      "sd   sp, %[" save "_sp](a0)\n\t"                           \
      "sd   s0, %[" save "_fp](a0)\n\t"                           \
      "ld   sp, %[" load "_sp](a0)\n\t"                           \
      "ld   t1, %[" load "_pc](a0)\n\t"                           \
      "ld   s0, %[" load "_fp](a0)\n\t"                           \
      "jalr t2, 0(t1)\n\t"                                       \
      "sd   t2, %[" load "_pc](a0)\n\t"

#define CACS_OFFSETS                                                              \
  [co_sp] "i"(offsetof(struct stackful, co_cacs.sp)),                             \
  [co_pc] "i"(offsetof(struct stackful, co_cacs.pc)),                             \
  [co_fp] "i"(offsetof(struct stackful, co_cacs.fp)),                             \
  [ex_sp] "i"(offsetof(struct stackful, exec_cacs.sp)),                           \
  [ex_pc] "i"(offsetof(struct stackful, exec_cacs.pc)),                           \
  [ex_fp] "i"(offsetof(struct stackful, exec_cacs.fp))

// Executor side: switch into the coroutine; returns what it passed back in
// a1, result - CO_YIELD (a long, as a1 holds it: 0 for a yield).
static inline __attribute__((always_inline)) long cacs_enter_raw(struct stackful **sfp) {
  register struct stackful *a0 __asm__("a0") = *sfp;
  register long a1 __asm__("a1");
  __asm__ volatile(CACS_SWITCH("ex", "co")
                   : "+r"(a0), "=r"(a1)
                   : CACS_OFFSETS
                   : CACS_CLOBBERS);
  *sfp = a0;              // the coroutine hands sf back in a0: no reload needed
  return a1;
}

// The same, returning the result itself.
static inline __attribute__((always_inline)) int cacs_enter(struct stackful **sfp) {
  return (int)cacs_enter_raw(sfp) + CO_YIELD;
}

// Coroutine side: switch back to the executor, reporting result.
static inline __attribute__((always_inline)) void cacs_leave(struct stackful *sf, int result) {
  register struct stackful *a0 __asm__("a0") = sf;
  register long a1 __asm__("a1") = (long)result - CO_YIELD;
  __asm__ volatile(CACS_SWITCH("co", "ex")
                   : "+r"(a0), "+r"(a1)
                   : CACS_OFFSETS
                   : CACS_CLOBBERS);
}

// After the coroutine has switched back: check the canary (the bottom word of
// its stack holds its own address; a deep overflow overwrites it) and collect
// its result, releasing it if it finished.
static inline __attribute__((always_inline)) void stackful_check_canary(struct stackful *sf) {
  uint64_t *lo = sf->stack_lo;
  if (*lo != (uint64_t)(uintptr_t)lo)
    stackful_overflow(sf);
}

static inline __attribute__((always_inline)) int stackful_after_switch(struct stackful *sf, int r) {
  stackful_check_canary(sf);
  if (r == CO_DONE && sf->release)
    sf->release(sf);
  return r;
}

// Executor side: run sf until it suspends, and return what it reported. Inline,
// so that the executor loop itself is the CACS call site. The _cacs/_full
// variants are for call sites that know the coroutine's kind.
static inline __attribute__((always_inline)) int stackful_resume_cacs(struct stackful *sf) {
  int r = cacs_enter(&sf);
  return stackful_after_switch(sf, r);
}

static inline __attribute__((always_inline)) int stackful_resume_full(struct stackful *sf) {
  full_switch(&sf->full->exec, &sf->full->co);
  return stackful_after_switch(sf, sf->result);
}

static inline __attribute__((always_inline)) int stackful_resume(struct stackful *sf) {
  return sf->full_save ? stackful_resume_full(sf) : stackful_resume_cacs(sf);
}

// Coroutine side: give the hart back to the executor with `result`
// (CO_YIELD: run me again; CO_PENDING: block until woken). Inline so that each
// call site spills only its own live registers.
static inline __attribute__((always_inline)) void stackful_suspend_cacs(struct stackful *sf, int result) {
  cacs_leave(sf, result);
}

static inline __attribute__((always_inline)) void stackful_suspend_full(struct stackful *sf, int result) {
  sf->result = result;
  full_switch(&sf->full->co, &sf->full->exec);
}

static inline __attribute__((always_inline)) void stackful_suspend_to(struct stackful *sf, int result) {
  if (sf->full_save)
    stackful_suspend_full(sf, result);
  else
    stackful_suspend_cacs(sf, result);
}

static inline __attribute__((always_inline)) void stackful_suspend(int result) {
  stackful_suspend_to(stackful_self(), result);
}

#endif
