// Stackful coroutine setup and first entry (see stackful.h).
#include "stackful.h"

_Static_assert(offsetof(struct stackful, exec_cacs.pc) == 32, "switch.S (stackful_trampoline) uses this offset");

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
  sf->full = 0;
  if (full_save) {
    // The full-save contexts take the top of the stack (16-byte multiple).
    top -= (sizeof(struct full_pair) + 15) & ~(uintptr_t)15;
    sf->full = (struct full_pair *)top;
    sf->full->co = (struct full_ctx){ .ra = (uintptr_t)stackful_trampoline, .sp = top };
    sf->full->co.s[0] = (uintptr_t)sf;
  }
  // Both kinds start in the trampoline with sf in s0 and an empty stack.
  sf->co_cacs = (struct cacs_ctx){ .sp = top, .pc = (uintptr_t)stackful_trampoline, .fp = (uintptr_t)sf };
}
