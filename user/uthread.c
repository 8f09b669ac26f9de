// User threads (ulib.h): uthread_create gives a new thread of the process its
// own malloc'd stack and uthread_join frees it again; both sit on the raw
// thread_create/thread_join calls.
#include "ulib.h"

#define UTHREAD_STACK (16 * 1024)

struct uthread_start {
  int (*fn)(void *);
  void *arg;
};

// Stacks by tid, freed by uthread_join. The table (MAXTHREADS_ABI pointers, 32
// KiB) is allocated by the first uthread_create: programs without threads do
// not carry it.
static void **uthread_stacks;

// First code of a new thread: the kernel starts it with a0 = its start record,
// which sits at the top of its own stack.
static void uthread_entry(void *start) {
  struct uthread_start *s = start;
  thread_exit(s->fn(s->arg));
}

int uthread_create(int (*fn)(void *), void *arg) {
  if (!uthread_stacks) {
    void **table = malloc(MAXTHREADS_ABI * sizeof *table);
    if (!table)
      return -ENOMEM;
    memset(table, 0, MAXTHREADS_ABI * sizeof *table);
    uthread_stacks = table;
  }
  char *stack = malloc(UTHREAD_STACK);
  if (!stack)
    return -ENOMEM;
  struct uthread_start *s = (struct uthread_start *)(stack + UTHREAD_STACK) - 1;
  s->fn = fn;
  s->arg = arg;
  uintptr_t top = ((uintptr_t)s) & ~(uintptr_t)15;
  int tid = thread_create(uthread_entry, s, (void *)top);
  if (tid < 0) {
    free(stack);
    return tid;
  }
  uthread_stacks[tid] = stack;
  return tid;
}

int uthread_join(int tid, int *status) {
  int r = thread_join(tid, status);
  if (r == 0 && tid > 0 && tid < MAXTHREADS_ABI && uthread_stacks) {
    free(uthread_stacks[tid]);
    uthread_stacks[tid] = 0;
  }
  return r;
}

// The holder of a user lock may be running on another hart, and then it lets
// go within a few hundred instructions: spin that long. It may also have been
// preempted, or be waiting in a system call (malloc's brk): then spinning
// until the next tick only keeps it off the hart, once for every thread that
// waits (with a thousand threads on one hart, seconds: make eval's Table 3
// saw KCUT answers take 6 s and more). So after the spins, yield.
#define ULOCK_SPINS 64

void ulock_acquire(volatile int *lock) {
  for (;;) {
    for (int i = 0; i < ULOCK_SPINS; i++)
      if (!__atomic_load_n(lock, __ATOMIC_RELAXED) && !__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE))
        return;
    yield();
  }
}

// `fence rw,w` and a plain store: a release store without the amoswap GCC 12
// makes of __atomic_store_n (kernel/spinlock.c, spin_unlock, says why).
void ulock_release(volatile int *lock) {
  __asm__ volatile("fence rw, w" ::: "memory");
  *lock = 0;
}
