// fault: does one forbidden thing, named by argv[1]. The kernel must kill the
// process (exit status -1) and keep running; usertests checks that, and that
// everything the process owned is freed.
//
//   load0           load from address 0 (nothing is mapped there)
//   store_kernel    store to 0x80200000, kernel text (a page without the U bit)
//   illegal         execute the all-zero word, defined as an illegal instruction
//   stack_overflow  recurse until the stack runs into the guard page below it
//   jump_kernel     jump to 0x80200000 (kernel code is not executable from U-mode)
//   misaligned_pc   call an odd address through a function pointer (see below)
//   brk_shrunk      touch a heap page, give it back with brk, touch it again
//   brk_shrunk_other  the same, with the second touch by another thread, which
//                   may have run on another hart all along
//
// Each fault is written in assembly where C would let the compiler reason about
// it (a C null dereference may be turned into a trap instruction, or removed).
// If the faulting instruction returns, the kernel let it through: say so and
// exit with 1, which usertests reports as a failure.
#include "ulib.h"

#define KERNEL_TEXT 0x80200000UL

static void load0(void) {
  long v;
  __asm__ volatile("ld %0, 0(%1)" : "=r"(v) : "r"(0L) : "memory");
  printf("fault: loaded %ld from address 0\n", v);
}

static void store_kernel(void) {
  __asm__ volatile("sd zero, 0(%0)" : : "r"(KERNEL_TEXT) : "memory");
}

static void illegal(void) {
  __asm__ volatile(".word 0");
}

// Each frame holds a 512-byte buffer and writes both ends of it. Frames are
// far smaller than a page, so the recursion cannot step over the 4 KiB guard
// page: some store is bound to land in it.
static __attribute__((noinline)) long recurse(long depth) {
  volatile char buf[512];
  buf[0] = (char)depth;
  buf[sizeof buf - 1] = (char)depth;
  // The depth test is never false in practice (the stack holds about 120
  // frames); it only tells the compiler the recursion has an end.
  if (depth < (1L << 40))
    return recurse(depth + 1) + buf[0];
  return buf[sizeof buf - 1];
}

static void stack_overflow(void) {
  printf("fault: recursion returned %ld\n", recurse(0));
}

static void jump_kernel(void) {
  void (*f)(void) = (void (*)(void))KERNEL_TEXT;
  __asm__ volatile("" : "+r"(f));   // hide the constant from the optimizer
  f();
}

// RV64 with the C extension cannot take a misaligned-fetch exception from a
// jump: instructions need only 2-byte alignment, and jalr clears bit 0 of the
// target. So `odd` lands on the even address below it, which is on the stack;
// the stack is not executable and the fetch faults. The code there is c.jr ra
// (0x8082, i.e. "ret"), so a kernel that maps the stack executable returns
// here and the check below reports it.
static void misaligned_pc(void) {
  volatile uint16_t code[2] = {0x8082, 0x8082};
  uintptr_t odd = (uintptr_t)&code[0] + 1;
  __asm__ volatile("" : "+r"(odd));
  ((void (*)(void))odd)();
}

// A page the heap gave back must be gone for the process at once, on every hart
// (the kernel flushes the translations it may have cached before it frees the
// page, which may already belong to someone else).
static volatile char *heap_page(void) {
  long cur = brk(0);
  long base = (cur + 4095) & ~4095L;
  if (brk((void *)(base + 4096)) != base + 4096) {
    printf("fault: brk could not grow the heap\n");
    exit(2);
  }
  volatile char *page = (volatile char *)base;
  page[100] = 1;                  // the translation is cached now
  return page;
}

static void give_back(volatile char *page) {
  if (brk((void *)page) != (long)page) {
    printf("fault: brk could not shrink the heap\n");
    exit(2);
  }
}

static void brk_shrunk(void) {
  volatile char *page = heap_page();
  give_back(page);
  page[100] = 2;
}

static volatile char *shared_page;
static volatile int other_state;   // 1: the other thread has touched the page; 2: it is gone

static int touch_until_gone(void *arg) {
  (void)arg;
  while (other_state == 0)
    ;
  (void)shared_page[100];          // (the other thread's own translation, cached)
  other_state = 1;
  while (other_state != 2)
    (void)shared_page[200];        // still mapped: keep the translation warm
  shared_page[100] = 3;            // must fault: the page was given back
  printf("fault: brk_shrunk_other did not fault!\n");
  exit(1);
}

static void brk_shrunk_other(void) {
  shared_page = heap_page();
  if (uthread_create(touch_until_gone, 0) < 0) {
    printf("fault: no thread\n");
    exit(2);
  }
  other_state = 3;
  while (other_state != 1)
    ;
  give_back(shared_page);
  other_state = 2;
  for (;;)
    yield();                       // the other thread's fault ends the process
}

static const struct {
  const char *name;
  void (*fn)(void);
  const char *what;
} faults[] = {
  {"load0", load0, "load from address 0"},
  {"store_kernel", store_kernel, "store to kernel text at 0x80200000"},
  {"illegal", illegal, "illegal instruction (.word 0)"},
  {"stack_overflow", stack_overflow, "unbounded recursion into the stack guard page"},
  {"jump_kernel", jump_kernel, "jump to kernel text at 0x80200000"},
  {"misaligned_pc", misaligned_pc, "call an odd address (on the non-executable stack)"},
  {"brk_shrunk", brk_shrunk, "store to a heap page given back with brk"},
  {"brk_shrunk_other", brk_shrunk_other, "the same, by another thread that had the page cached"},
};
#define NFAULTS (sizeof faults / sizeof faults[0])

int main(int argc, char *argv[]) {
  for (size_t i = 0; argc > 1 && i < NFAULTS; i++) {
    if (strcmp(argv[1], faults[i].name) == 0) {
      printf("fault: pid %d: %s\n", getpid(), faults[i].what);
      faults[i].fn();
      printf("fault: %s did not fault!\n", faults[i].name);
      return 1;
    }
  }
  printf("usage: fault KIND, where KIND is one of:\n");
  for (size_t i = 0; i < NFAULTS; i++)
    printf("  %-15s %s\n", faults[i].name, faults[i].what);
  return 2;
}
