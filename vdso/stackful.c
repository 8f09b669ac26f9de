// Stackful coroutine setup and first entry (see stackful.h).
#include "stackful.h"

// First code a new coroutine runs (reached from stackful_trampoline in switch.S,
// which takes sf from s0). When fn returns the coroutine reports CO_DONE and
// switches away for good; its stack is released on the executor side.
__attribute__((noreturn, used)) void stackful_main(struct stackful *sf) {
  sf->fn(sf->arg);
  stackful_suspend_to(sf, CO_DONE);
  __builtin_trap();   // a finished coroutine is never resumed
}

void stackful_init(struct stackful *sf, void *stack, size_t size, void (*fn)(void *),
                   void *arg, int full_save, void (*release)(struct stackful *)) {
  uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;   // ABI: 16-byte aligned sp
  sf->fn = fn;
  sf->arg = arg;
  sf->stack_lo = (uint64_t *)stack;
  *sf->stack_lo = (uint64_t)(uintptr_t)sf->stack_lo;
  sf->result = CO_YIELD;
  sf->full_save = full_save;
  sf->release = release;
  // Both kinds start in the trampoline with sf in s0 and an empty stack.
  sf->co_cacs = (struct cacs_ctx){ .sp = top, .pc = (uintptr_t)stackful_trampoline, .fp = (uintptr_t)sf };
  sf->co_full = (struct full_ctx){ .ra = (uintptr_t)stackful_trampoline, .sp = top };
  sf->co_full.s[0] = (uintptr_t)sf;
}
