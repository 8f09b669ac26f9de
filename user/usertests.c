// usertests: feeds every system call bad input and checks the exact result,
// then checks that faulting processes are killed and leave nothing behind.
//
// Every check prints one line:
//   usertests: PASS name
//   usertests: FAIL name: got X, expected Y
// and the last line is "usertests: N passed, M failed"; the exit status is M.
//
// docs/ABI.md is the contract these checks follow. The checks run in one
// process, in sections that build on each other (the brk section sets up a
// heap page with an unmapped page right above it, used later to place strings
// and arrays that run off the end of mapped memory).
//
// `usertests SECTION...` runs only the sections named (all of them without
// arguments), for a machine where the whole run is too slow (the simulated
// Rocket, make test-sim): basics nosys uintr sleep brk rw pipe spawn-errors
// wait malloc processes. rw, pipe, spawn-errors and wait need brk's setup.
//
// usertests also spawns itself as a helper child: `usertests --exit N`,
// `--ret N`, `--argv ...`, `--killself`, `--block-read`, `--block-write`,
// `--getpid-loop` (see child_main below).
#include "ulib.h"

#define PAGE 4096UL
#define KERNEL_TEXT 0x80200000UL          // where OpenSBI loads the kernel
#define KMMIO 0xffffffc000000000UL         // the kernel's device window (upper half)
#define LONG_MAX_ __LONG_MAX__
#define LONG_MIN_ (-__LONG_MAX__ - 1)
#define INT_MAX_ __INT_MAX__
#define INT_MIN_ (-__INT_MAX__ - 1)

static int passed, failed;

// ---------------------------------------------------------------------------
// Reporting

// "-14 (EFAULT)" for errors, "42" for everything else.
static const char *show(char *buf, size_t size, long v) {
  // -1 is also the status of a killed process, and no call returns -EPERM:
  // show it as a plain number.
  const char *e = v == -1 ? "" : errname(v);
  if (*e)
    snprintf(buf, size, "%ld (%s)", v, e);
  else
    snprintf(buf, size, "%ld", v);
  return buf;
}

static int check(const char *name, long got, long expected) {
  if (got == expected) {
    printf("usertests: PASS %s\n", name);
    passed++;
    return 1;
  }
  char g[40], e[40];
  printf("usertests: FAIL %s: got %s, expected %s\n", name, show(g, sizeof g, got),
         show(e, sizeof e, expected));
  failed++;
  return 0;
}

// For checks that are a condition rather than one value: `what` says, in the
// FAIL line, what was expected.
static int check_true(const char *name, int ok, long got, const char *what) {
  if (ok) {
    printf("usertests: PASS %s\n", name);
    passed++;
    return 1;
  }
  char g[40];
  printf("usertests: FAIL %s: got %s, expected %s\n", name, show(g, sizeof g, got), what);
  failed++;
  return 0;
}

// Names for checks generated in loops. A few buffers are used in turn, so a
// name stays valid while a helper builds names of its own from it.
static const char *NAME(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *NAME(const char *fmt, ...) {
  static char names[8][96];
  static unsigned next;
  char *b = names[next++ % 8];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b, sizeof names[0], fmt, ap);
  va_end(ap);
  return b;
}

static void section(const char *title) {
  printf("usertests: --- %s ---\n", title);
}

// ---------------------------------------------------------------------------
// Kernel counters: nothing may leak

static const char *const counter_names[] = {
  [KSTAT_FREE_PAGES] = "free-pages",
  [KSTAT_KMALLOC_BYTES] = "kmalloc-bytes",
  [KSTAT_KMALLOC_OBJECTS] = "kmalloc-objects",
  [KSTAT_LIVE_COROUTINES] = "live-coroutines",
  [KSTAT_NPROCS] = "nprocs",
};

struct counters {
  long v[KSTAT_NPROCS + 1];
};

static void snapshot(struct counters *c) {
  for (int i = KSTAT_FREE_PAGES; i <= KSTAT_NPROCS; i++)
    c->v[i] = kstat(i);
}

// The kernel may free a dead process's memory asynchronously (after the
// parent's wait returned), so a counter gets a few chances to come back.
static void check_no_leaks(const char *what, const struct counters *before) {
  for (int i = KSTAT_FREE_PAGES; i <= KSTAT_NPROCS; i++) {
    long now = kstat(i);
    for (int tries = 0; tries < 3000 && now != before->v[i]; tries++) {   // 30 s at most
      sleep(10);
      now = kstat(i);
    }
    check(NAME("%s-%s", what, counter_names[i]), now, before->v[i]);
  }
}

// ---------------------------------------------------------------------------
// Helpers

// A system call with an arbitrary number (ulib.h's ecall_raw; that the kernel
// keeps every register but a0 is checked below).
static long raw_syscall(long nr, long a0, long a1, long a2) {
  return ecall_raw((uint64_t)nr, a0, a1, a2, 0, 0);
}

// Loads a known value into every register the kernel might be tempted to
// use (t0-t6, a1-a7, s0-s11, ra), makes getpid, and returns the OR of
// (register - value): 0 if everything survived. (s0 can be clobbered here
// because user code has no frame pointer: user/user.mk. Out of line, so that
// it is not inlined into main, which keeps one: __builtin_frame_address.)
static __attribute__((noinline)) long ecall_clobbers(void) {
  register long acc __asm__("a0");
  __asm__ volatile(
      "li t0, 1001\n li t1, 1002\n li t2, 1003\n li t3, 1004\n"
      "li t4, 1005\n li t5, 1006\n li t6, 1007\n"
      "li a1, 1011\n li a2, 1012\n li a3, 1013\n li a4, 1014\n li a5, 1015\n li a6, 1016\n"
      "li s0, 1020\n li s1, 1021\n li s2, 1022\n li s3, 1023\n li s4, 1024\n li s5, 1025\n li s6, 1026\n"
      "li s7, 1027\n li s8, 1028\n li s9, 1029\n li s10, 1030\n li s11, 1031\n"
      "li ra, 1040\n"
      "li a7, %1\n"
      "ecall\n"
      "li a0, 0\n"
      "addi t0, t0, -1001\n or a0, a0, t0\n addi t1, t1, -1002\n or a0, a0, t1\n"
      "addi t2, t2, -1003\n or a0, a0, t2\n addi t3, t3, -1004\n or a0, a0, t3\n"
      "addi t4, t4, -1005\n or a0, a0, t4\n addi t5, t5, -1006\n or a0, a0, t5\n"
      "addi t6, t6, -1007\n or a0, a0, t6\n"
      "addi a1, a1, -1011\n or a0, a0, a1\n addi a2, a2, -1012\n or a0, a0, a2\n"
      "addi a3, a3, -1013\n or a0, a0, a3\n addi a4, a4, -1014\n or a0, a0, a4\n"
      "addi a5, a5, -1015\n or a0, a0, a5\n addi a6, a6, -1016\n or a0, a0, a6\n"
      "addi a7, a7, -%1\n or a0, a0, a7\n"
      "addi s0, s0, -1020\n or a0, a0, s0\n"
      "addi s1, s1, -1021\n or a0, a0, s1\n addi s2, s2, -1022\n or a0, a0, s2\n"
      "addi s3, s3, -1023\n or a0, a0, s3\n addi s4, s4, -1024\n or a0, a0, s4\n"
      "addi s5, s5, -1025\n or a0, a0, s5\n addi s6, s6, -1026\n or a0, a0, s6\n"
      "addi s7, s7, -1027\n or a0, a0, s7\n addi s8, s8, -1028\n or a0, a0, s8\n"
      "addi s9, s9, -1029\n or a0, a0, s9\n addi s10, s10, -1030\n or a0, a0, s10\n"
      "addi s11, s11, -1031\n or a0, a0, s11\n"
      "addi ra, ra, -1040\n or a0, a0, ra\n"
      : "=r"(acc)
      : "i"(SYS_getpid)
      : "t0", "t1", "t2", "t3", "t4", "t5", "t6", "a1", "a2", "a3", "a4", "a5", "a6", "a7",
        "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "ra", "memory");
  return acc;
}

// Turns a number into a pointer the compiler knows nothing about. Without
// this, GCC sees constant addresses like 1 or 0x80200000 passed as buffers and
// (rightly, for normal code) refuses to compile the calls.
static void *ADDR(unsigned long a) {
  __asm__("" : "+r"(a));
  return (void *)a;
}

// Spawns prog and expects `expected`. If the kernel started a child anyway,
// reap it so it does not disturb later checks.
static void spawn_expect(const char *name, const char *prog, const char *const argv[],
                         long expected) {
  int pid = spawn(prog, argv);
  check(name, pid, expected);
  if (pid > 0)
    wait(pid, NULL);
}

// Spawns `usertests ARGS...` and returns its exit status; on a spawn or wait
// failure, reports it under `name` and returns `fallback`.
static int run_child(const char *name, const char *const argv[], int fallback) {
  int pid = spawn("usertests", argv);
  if (!check_true(NAME("%s-spawn", name), pid > 0, pid, "a pid > 0"))
    return fallback;
  int status = 0;
  int w = wait(pid, &status);
  if (!check(NAME("%s-wait", name), w, pid))
    return fallback;
  return status;
}

// Bad addresses for pointer arguments. None of them is mapped writable (or at
// all) in user space.
static const struct {
  const char *name;
  unsigned long addr;
} badptrs[] = {
  {"null", 0},
  {"one", 1},
  {"0x1000", 0x1000},                               // below USER_BASE
  {"above-stack", USER_STACK_TOP + 0x1000},
  {"guard-page", USER_STACK_TOP - USER_STACK_SIZE - 16},
  {"unmapped-middle", 0x40000000},                  // between the heap and the stack
  {"kernel-text", KERNEL_TEXT},                     // mapped, but not for U-mode
  {"kernel-mmio", KMMIO},                           // upper half
  {"top-of-address-space", 0xfffffffffffff000UL},
};
#define NBADPTRS (sizeof badptrs / sizeof badptrs[0])

static const char rodata[64] = "read-only data: the kernel must not write here";
static char bss_probe[8192];   // must be all zero at start: the loader clears bss
static char buf[PIPE_SIZE];
static char big_string[10000];

// The end of the heap as set up by test_brk: [edge - PAGE, edge) is mapped and
// writable, edge itself is not mapped.
static char *edge;

// ---------------------------------------------------------------------------
// The process's start state, and simple calls

static void test_start(int argc, char *argv[], uintptr_t sp) {
  section("start state");
  check("start-sp-aligned", (long)(sp % 16), 0);
  check_true("start-sp-on-stack",
             sp > USER_STACK_TOP - USER_STACK_SIZE && sp <= USER_STACK_TOP, (long)sp,
             "sp inside the stack");
  check_true("start-argv-above-sp", (uintptr_t)argv >= sp && (uintptr_t)argv < USER_STACK_TOP,
             (long)argv, "argv between sp and USER_STACK_TOP");
  check_true("start-argc", argc >= 1, argc, "argc >= 1");
  check("start-argv-null-terminated", (long)argv[argc], 0);
  check("start-argv0", strcmp(argv[0], "usertests"), 0);
  int zero = 1;
  for (size_t i = 0; i < sizeof bss_probe; i++)
    zero &= bss_probe[i] == 0;
  check("start-bss-zeroed", zero, 1);
}

static void test_basics(void) {
  section("simple calls");
  int pid = getpid();
  check_true("getpid-positive", pid > 0, pid, "a pid > 0");
  check("getpid-stable", getpid(), pid);
  check("yield", yield(), 0);
  check("ecall-preserves-registers", ecall_clobbers(), 0);

  long t = uptime(), last = t;
  int monotonic = 1;
  for (int i = 0; i < 100; i++) {
    long now = uptime();
    monotonic &= now >= last;
    last = now;
  }
  check_true("uptime-nonnegative", t >= 0, t, "uptime >= 0");
  check("uptime-monotonic", monotonic, 1);
  // uptime() reads the clock in user mode (ulib.c); the kernel's call counts
  // the same milliseconds: one read between two calls lies between them.
  long k0 = sys_uptime(), u = uptime(), k1 = sys_uptime();
  check_true("uptime-agrees-with-the-call", k0 >= 0 && k0 <= u && u <= k1, u, "between the calls around it");
  check_true("uptime-read-in-user-mode",
             ((const struct vvar *)USER_VVAR)->timebase_hz >= 1000, 0, "a timebase in the vvar page");

  for (int i = KSTAT_FREE_PAGES; i <= KSTAT_NPROCS; i++) {
    long v = kstat(i);
    check_true(NAME("kstat-%s", counter_names[i]), v >= 0, v, "a value >= 0");
  }
  long np = kstat(KSTAT_NPROCS);
  check_true("kstat-nprocs-counts-us", np >= 1, np, ">= 1");
  long fp = kstat(KSTAT_FREE_PAGES);
  check_true("kstat-free-pages-nonzero", fp > 0, fp, "> 0");
  static const int bad_selectors[] = {0, KSTAT_COUNT, -1, 1000, INT_MIN_, KSTAT_QUIET,
                                      KSTAT_QUIET | KSTAT_COUNT};
  for (size_t i = 0; i < sizeof bad_selectors / sizeof bad_selectors[0]; i++)
    check(NAME("kstat-bad-selector-%d", bad_selectors[i]), kstat(bad_selectors[i]), -EINVAL);
  // KSTAT_QUIET waits for the rest of the machine to rest, then reads the same counter.
  long np_quiet = kstat(KSTAT_NPROCS | KSTAT_QUIET);
  check_true("kstat-quiet-reads-the-counter", np_quiet >= 1, np_quiet, ">= 1");
  // ... with no thread waiting for a hart, on one hart too, where the caller's
  // switcher is the only one: a child spawned just before (it waits for the
  // hart this process holds) has run, and exited, when the counter is read.
  // (Once the caller waited for it in vain until the safety net, and read the
  // counter with the child still waiting: init preempted between spawn and
  // wait gave socktest a baseline without init's wait.)
  static const char *const e4[] = {"usertests", "--exit", "4", NULL};
  long zombies0 = kstat(KSTAT_ZOMBIES);
  int child = spawn("usertests", e4);
  check("kstat-quiet-lets-waiting-threads-run", kstat(KSTAT_ZOMBIES | KSTAT_QUIET), zombies0 + 1);
  check("kstat-quiet-child-reaped", child > 0 ? wait(child, NULL) : child, child);
}

// uintr_recv takes no argument: 0 where there is no user-interrupt controller
// (stock QEMU), else the main thread's receive page, the same on every call
// (it ignores stray argument registers).
static void test_uintr_recv(void) {
  section("uintr_recv");
  long va = uintr_recv();
  check_true("uintr-recv-none-or-thread-page", va == 0 || va == (long)USER_UINTC_RECV, va,
             "0 or USER_UINTC_RECV (thread 0)");
  check("uintr-recv-same-again", raw_syscall(SYS_uintr_recv, -1, -1, -1), va);
}

// SYS_uintr_ret (emulated backend) ends a handler the kernel entered: it
// returns to uepc with a0 and a7 taken from the frame just below sp, with two
// loads when that frame is aligned within one page, through a copy when it
// crosses a page or is unaligned. Each case raises a user interrupt to this
// thread with uret_case_entry as the handler (utvec, uie and ustatus set for
// the occasion, and put back after), which points sp at the case's frame and
// makes the call: the kernel must come back after the `csrs uip` that raised
// it, with the frame's a0 and a7. Outside a handler (never in one, or after
// the handler returned) the call kills the thread: in child processes.
static char ret_frames[3 * 4096] __attribute__((aligned(4096)));
#define STR_(x) #x
#define XSTR(x) STR_(x)
extern void uret_case_entry(void);
__asm__(".text\n.balign 4\nuret_case_entry:\n"
        "  mv sp, t2\n"                 // the case's frame (sp is put back after)
        "  li a7, " XSTR(SYS_uintr_ret) "\n"
        "  ecall\n");

// Raise a user interrupt with uret_case_entry as handler, which ends with
// SYS_uintr_ret on the frame below `top`; a0 and a7 as the call left them.
static void uret_round(char *top, uint64_t *a0_out, uint64_t *a7_out) {
  uint64_t utvec, uie, ustatus;
  __asm__ volatile("csrr %0, 0x005\n csrr %1, 0x004\n csrr %2, 0x000"
                   : "=r"(utvec), "=r"(uie), "=r"(ustatus));
  register uint64_t a0 __asm__("a0") = 0;
  register uint64_t a7 __asm__("a7") = 0;
  __asm__ volatile("csrci 0x000, 1\n"              // UIE off while the handler is swapped
                   "la t0, uret_case_entry\n"
                   "csrw 0x005, t0\n"               // utvec
                   "csrsi 0x004, 1\n"               // uie.USIE
                   "mv t1, sp\n"
                   "mv t2, %2\n"
                   "csrsi 0x000, 1\n"               // ustatus.UIE
                   "csrsi 0x044, 1\n"               // uip.USIP: taken on the way back
                   "mv sp, t1\n"                    // (uepc: here)
                   : "+r"(a0), "+r"(a7)
                   : "r"((uint64_t)top)
                   : "t0", "t1", "t2", "memory");
  *a0_out = a0;
  *a7_out = a7;
  __asm__ volatile("csrci 0x000, 1\n csrw 0x005, %0\n csrw 0x004, %1\n csrw 0x000, %2"
                   :: "r"(utvec), "r"(uie), "r"(ustatus));
}

static void uintr_ret_case(const char *name, char *at) {
  uint64_t want_a0 = 0x1234567890abcdefUL ^ (uint64_t)at, want_a7 = 0x0fedcba987654321UL;
  memcpy(at + 64 - UINTR_RET_A0_OFF, &want_a0, 8);
  memcpy(at + 64 - UINTR_RET_A7_OFF, &want_a7, 8);
  uint64_t got_a0, got_a7;
  uret_round(at + 64, &got_a0, &got_a7);
  char what[48];
  snprintf(what, sizeof what, "uintr-ret-%s-a0", name);
  check(what, (long)got_a0, (long)want_a0);
  snprintf(what, sizeof what, "uintr-ret-%s-a7", name);
  check(what, (long)got_a7, (long)want_a7);
}

static void test_uintr_ret(void) {
  section("SYS_uintr_ret");
  // Outside a handler: never in one, and after one returned (uepc then
  // still names where it struck, and a call that went there would run on
  // with the caller's registers of now). Killed, on both backends.
  static const char *const never[] = {"usertests", "--uintr-ret", "never", NULL};
  static const char *const after[] = {"usertests", "--uintr-ret", "after", NULL};
  check("uintr-ret-outside-a-handler-killed", run_child("uintr-ret-never", never, 0), -1);
  check("uintr-ret-after-the-handler-killed", run_child("uintr-ret-after", after, 0), -1);
  if (kstat(KSTAT_UINTR_NATIVE) == 1)
    return;                      // native: uret is an instruction, the call is refused
  uintr_ret_case("in-page", ret_frames + 4096 + 128);
  uintr_ret_case("page-crossing", ret_frames + 2 * 4096 - 32);
  uintr_ret_case("unaligned", ret_frames + 4096 + 132);
}

// The children of test_uintr_ret: SYS_uintr_ret outside a handler. (A
// kernel that let the call through after a handler sent the thread back into
// uret_round, after its `csrs uip`: that ends here too, with status 3.)
static volatile int stray_call_made;

static int child_uintr_ret(const char *when) {
  if (strcmp(when, "after") == 0) {
    uint64_t a0, a7;
    uret_round(ret_frames + 4096 + 128, &a0, &a7);
    if (stray_call_made) {
      printf("usertests: SYS_uintr_ret went back to where the last interrupt struck\n");
      return 3;
    }
  }
  stray_call_made = 1;
  register uint64_t a7 __asm__("a7") = SYS_uintr_ret;
  register uint64_t sp_frame __asm__("a0") = (uint64_t)(ret_frames + 4096 + 128);
  __asm__ volatile("mv t1, sp\n mv sp, a0\n ecall\n mv sp, t1" : "+r"(a7), "+r"(sp_frame) :: "t1", "memory");
  printf("usertests: SYS_uintr_ret outside a handler returned\n");
  return 3;
}

static void test_nosys(void) {
  section("unknown system calls");
  check("syscall-0", raw_syscall(0, 0, 0, 0), -ENOSYS);
  check("syscall-NSYSCALL", raw_syscall(NSYSCALL, 0, 0, 0), -ENOSYS);
  check("syscall-999", raw_syscall(999, 0, 0, 0), -ENOSYS);
  check("syscall-minus-1", raw_syscall(-1, 0, 0, 0), -ENOSYS);
  // a7 is a 64-bit register: a kernel that looked only at its low 32 bits
  // would see SYS_getpid here.
  check("syscall-high-bits", raw_syscall((1L << 32) | SYS_getpid, 0, 0, 0), -ENOSYS);
  check("syscall-valid-after-bad", raw_syscall(SYS_getpid, 0, 0, 0), getpid());
}

static void test_sleep(void) {
  section("sleep and uptime");
  long t0 = uptime();
  check("sleep-50ms", sleep(50), 0);
  long slept = uptime() - t0;
  check_true("sleep-50ms-long-enough", slept >= 50, slept, ">= 50 ms");
  check_true("sleep-50ms-not-forever", slept < 5000, slept, "< 5000 ms");
  check("sleep-0", sleep(0), 0);
  check("sleep-negative", sleep(-1), -EINVAL);
  check("sleep-most-negative", sleep(LONG_MIN_), -EINVAL);
}

// ---------------------------------------------------------------------------
// brk

extern char end[];   // the end of the program image (user.ld)

static void test_brk(void) {
  section("brk");
  long cur = brk(0);
  check_true("brk-query", cur >= (long)end, cur, "a break at or above the image end");
  check("brk-query-again", brk(0), cur);

  // Below the image end: the heap may not eat the program.
  check("brk-below-end", brk(ADDR((unsigned long)end - 16)), -ENOMEM);
  check("brk-at-user-base", brk(ADDR(USER_BASE)), -ENOMEM);
  check("brk-one", brk(ADDR(1)), -ENOMEM);
  // Above the heap limit.
  check("brk-above-heap-max", brk(ADDR(USER_HEAP_MAX + 1)), -ENOMEM);
  check("brk-above-heap-max-page", brk(ADDR(USER_HEAP_MAX + PAGE)), -ENOMEM);
  check("brk-in-stack", brk(ADDR(USER_STACK_TOP - PAGE)), -ENOMEM);
  check("brk-kernel", brk(ADDR(KERNEL_TEXT)), -ENOMEM);
  check("brk-top-of-address-space", brk(ADDR(-PAGE)), -ENOMEM);
  if (!check("brk-unchanged-after-failures", brk(0), cur))
    brk(ADDR((unsigned long)cur));   // put it back, so the rest can go on

  // Grow by three pages: the new memory is there and zeroed. If the heap
  // cannot grow, touching it would kill us: stop here.
  uintptr_t base = ((uintptr_t)cur + PAGE - 1) & ~(PAGE - 1);
  char *top = (char *)(base + 3 * PAGE);
  if (!check("brk-grow", brk(top), (long)top))
    return;
  check("brk-query-after-grow", brk(0), (long)top);
  int zero = 1;
  for (char *p = (char *)cur; p < top; p++)
    zero &= *p == 0;
  check("brk-grown-memory-zeroed", zero, 1);
  memset((char *)cur, 0x5a, (size_t)(top - (char *)cur));
  check("brk-grown-memory-writable", ((char *)base)[2 * PAGE + 7], 0x5a);

  // Shrink to one page above the old break's page: the pages above are gone.
  char *one = (char *)(base + PAGE);
  if (!check("brk-shrink", brk(one), (long)one))
    return;
  check("brk-shrunk-page-unmapped", write(STDOUT, one, 1), -EFAULT);
  check("brk-shrunk-last-page-unmapped", write(STDOUT, top - 1, 1), -EFAULT);

  // Grow again: the pages come back zeroed, not with the old contents.
  if (!check("brk-regrow", brk(top), (long)top))
    return;
  zero = 1;
  for (char *p = one; p < top; p++)
    zero &= *p == 0;
  check("brk-regrown-memory-zeroed", zero, 1);

  // Leave exactly one heap page above the old break: later sections put
  // strings and arrays at its end, right below unmapped memory.
  if (!check("brk-set-edge", brk(one), (long)one))
    return;
  edge = one;
  edge[-1] = 0x11;
  check("brk-edge-writable", edge[-1], 0x11);
}

// ---------------------------------------------------------------------------
// read, write, close and descriptors

// A read from the pipe p (which holds "0123456789") that must fail. If the
// kernel wrongly lets it through, the data is gone and the next read would
// block forever: put the ten bytes back so the remaining checks still run.
static void read_bad(const char *name, int p[2], void *ptr, long n, long expected) {
  long r = read(p[0], ptr, n);
  if (!check(name, r, expected) && r > 0) {
    if (r < 10)
      read(p[0], buf, 10 - r);
    write(p[1], "0123456789", 10);
  }
}

static void test_rw(void) {
  section("write");
  // Bad buffers. Writes go to the console: if the kernel wrongly accepts one,
  // garbage is printed, but nothing blocks.
  for (size_t i = 0; i < NBADPTRS; i++)
    check(NAME("write-badptr-%s", badptrs[i].name),
          write(STDOUT, ADDR(badptrs[i].addr), 8), -EFAULT);
  check("write-straddles-stack-top", write(STDOUT, ADDR(USER_STACK_TOP - 1), 2),
        -EFAULT);
  check("write-straddles-heap-edge", write(STDOUT, edge - 1, 2), -EFAULT);
  check("write-wraps-around", write(STDOUT, ADDR(-16UL), 32), -EFAULT);
  // A buffer that starts in mapped memory and runs into unmapped memory
  // fails as a whole: nothing is written (a kernel that writes what it can
  // prints 300 '#' here).
  memset(edge - 300, '#', 300);
  check("write-runs-into-unmapped", write(STDOUT, edge - 300, 1000), -EFAULT);
  // Huge lengths. The buffer starts 16 bytes below the edge, so a kernel that
  // wrongly writes what it can prints only those 16 bytes.
  memset(edge - 16, '#', 16);
  check("write-huge-length", write(STDOUT, edge - 16, 1L << 40), -EFAULT);
  check("write-max-length", write(STDOUT, edge - 16, LONG_MAX_), -EFAULT);
  check("write-negative-length", write(STDOUT, buf, -1), -EINVAL);
  check("write-most-negative-length", write(STDOUT, buf, LONG_MIN_), -EINVAL);
  check("write-zero-length-null", write(STDOUT, NULL, 0), 0);
  check("write-console", write(STDOUT, "usertests: (console write)\n", 27), 27);

  section("read");
  int p[2];
  if (!check("read-pipe", pipe(p), 0))
    return;
  // Ten bytes wait in the pipe, so a read that wrongly goes ahead returns at
  // once instead of blocking. Every failed read must leave them there.
  check("read-fill", write(p[1], "0123456789", 10), 10);
  for (size_t i = 0; i < NBADPTRS; i++)
    read_bad(NAME("read-badptr-%s", badptrs[i].name), p, ADDR(badptrs[i].addr), 10, -EFAULT);
  read_bad("read-into-text", p, ADDR(USER_BASE), 10, -EFAULT);
  read_bad("read-into-rodata", p, (void *)rodata, 10, -EFAULT);
  read_bad("read-straddles-stack-top", p, ADDR(USER_STACK_TOP - 1), 2, -EFAULT);
  edge[-1] = 0x11;
  read_bad("read-straddles-heap-edge", p, edge - 1, 2, -EFAULT);
  // A read that fails must not have written part of its buffer either.
  check("read-failed-left-memory-alone", edge[-1], 0x11);
  read_bad("read-huge-length", p, buf, 1L << 40, -EFAULT);
  read_bad("read-negative-length", p, buf, -1, -EINVAL);
  check("read-zero-length", read(p[0], buf, 0), 0);
  memset(buf, 0, 16);
  check("read-after-failed-reads", read(p[0], buf, sizeof buf), 10);
  check("read-failed-reads-took-nothing", memcmp(buf, "0123456789", 10), 0);

  // Code and rodata are readable, so write() from them works.
  check("write-from-text", write(p[1], (const void *)USER_BASE, 32), 32);
  check("write-from-text-read", read(p[0], buf, 32), 32);
  check("write-from-text-data", memcmp(buf, (const void *)USER_BASE, 32), 0);
  check("write-from-rodata", write(p[1], rodata, 16), 16);
  check("write-from-rodata-read", read(p[0], buf, 16), 16);
  check("write-from-rodata-data", memcmp(buf, rodata, 16), 0);
  // The last byte below the edge is fine on its own.
  edge[-1] = 0x22;
  check("write-edge-last-byte", write(p[1], edge - 1, 1), 1);
  edge[-1] = 0;
  check("read-edge-last-byte", read(p[0], edge - 1, 1), 1);
  check("edge-last-byte-data", edge[-1], 0x22);

  // Wrong direction.
  check("read-on-write-end", read(p[1], buf, 1), -EBADF);
  check("write-on-read-end", write(p[0], "x", 1), -EBADF);
  check("read-close-read-end", close(p[0]), 0);
  check("read-close-write-end", close(p[1]), 0);

  section("descriptors");
  // p[0] and p[1] are closed now: use one of them as "a closed descriptor".
  // 15 is below NOFILE but was never opened.
  const int bad_fds[] = {-1, NOFILE, 100, INT_MIN_, INT_MAX_, NOFILE - 1, p[0]};
  const char *const bad_fd_names[] = {"minus-1", "NOFILE", "100", "INT_MIN", "INT_MAX",
                                      "never-opened", "closed"};
  for (size_t i = 0; i < sizeof bad_fds / sizeof bad_fds[0]; i++) {
    check(NAME("read-fd-%s", bad_fd_names[i]), read(bad_fds[i], buf, 1), -EBADF);
    check(NAME("write-fd-%s", bad_fd_names[i]), write(bad_fds[i], "x", 1), -EBADF);
    check(NAME("close-fd-%s", bad_fd_names[i]), close(bad_fds[i]), -EBADF);
  }
  // The descriptor is checked before the buffer.
  check("write-bad-fd-and-buffer", write(-1, NULL, 8), -EBADF);
}

// ---------------------------------------------------------------------------
// Pipes

static void test_pipe(void) {
  section("pipes");
  int p[2];
  // Descriptors are the lowest free numbers; only 0, 1 and 2 are open now.
  if (!check("pipe", pipe(p), 0))
    return;
  check("pipe-read-fd-3", p[0], 3);
  check("pipe-write-fd-4", p[1], 4);
  check("pipe-write", write(p[1], "abc", 3), 3);
  check("pipe-read", read(p[0], buf, 3), 3);
  check("pipe-data", memcmp(buf, "abc", 3), 0);

  // A read end with no writer left returns 0 (end of file) once empty.
  check("pipe-eof-write", write(p[1], "z", 1), 1);
  check("pipe-eof-close-writer", close(p[1]), 0);
  check("pipe-eof-drain", read(p[0], buf, 10), 1);
  check("pipe-eof", read(p[0], buf, 10), 0);
  check("pipe-eof-close-reader", close(p[0]), 0);

  // A write end with no reader left fails with EPIPE (there are no signals).
  check("pipe-epipe-create", pipe(p), 0);
  check("pipe-epipe-close-reader", close(p[0]), 0);
  check("pipe-epipe", write(p[1], "x", 1), -EPIPE);
  check("pipe-epipe-again", write(p[1], "x", 1), -EPIPE);
  check("pipe-epipe-close-writer", close(p[1]), 0);

  // dup: the lowest free descriptor, the same pipe; the end stays open until
  // its last descriptor is closed; bad descriptors are refused.
  check("dup-pipe", pipe(p), 0);
  int d = dup(p[1]);
  check("dup-lowest-free", d, 5);
  check("dup-close-original", close(p[1]), 0);
  check("dup-writes-same-pipe", write(d, "q", 1), 1);
  check("dup-read-back", read(p[0], buf, 1), 1);
  check("dup-data", buf[0], 'q');
  check("dup-close-last-writer", close(d), 0);
  check("dup-then-eof", read(p[0], buf, 1), 0);
  check("dup-close-reader", close(p[0]), 0);
  check("dup-closed-fd", dup(p[0]), -EBADF);
  check("dup-negative-fd", dup(-1), -EBADF);
  check("dup-huge-fd", dup(1 << 30), -EBADF);

  // A bad fds pointer: nothing may be left behind, neither memory nor
  // descriptors, even when the kernel got as far as creating the pipe.
  struct counters before;
  snapshot(&before);
  for (size_t i = 0; i < NBADPTRS; i++)
    check(NAME("pipe-badptr-%s", badptrs[i].name), pipe(ADDR(badptrs[i].addr)), -EFAULT);
  check("pipe-badptr-text", pipe(ADDR(USER_BASE)), -EFAULT);
  check("pipe-badptr-rodata", pipe((int *)rodata), -EFAULT);
  // The first int fits, the second does not.
  check("pipe-badptr-straddles-heap-edge", pipe((int *)(edge - 4)), -EFAULT);
  check("pipe-badptr-straddles-stack-top", pipe(ADDR(USER_STACK_TOP - 4)), -EFAULT);
  check_no_leaks("pipe-badptr-leak", &before);
  check("pipe-after-badptr", pipe(p), 0);
  check("pipe-after-badptr-read-fd-3", p[0], 3);
  check("pipe-after-badptr-write-fd-4", p[1], 4);
  close(p[0]);
  close(p[1]);

  // Run out of descriptors: 0-2 are open, so (NOFILE - 3) / 2 pipes fit. With
  // NOFILE = 16 one slot then remains, not enough for a pipe; the failing
  // call must not take it. The table grows in chunks that stay until the
  // process ends (kernel/fd.c): fill it once before the snapshot.
  int fds[NOFILE + 2];
  int npipes = 0, r = 0;
  while (npipes < NOFILE / 2 + 1 && pipe(&fds[2 * npipes]) == 0)
    npipes++;
  for (int i = 0; i < 2 * npipes; i++)
    close(fds[i]);
  npipes = 0;
  snapshot(&before);
  while (npipes < NOFILE / 2 + 1 && (r = pipe(&fds[2 * npipes])) == 0)
    npipes++;
  check("emfile-pipes-opened", npipes, (NOFILE - 3) / 2);
  check("emfile", r, -EMFILE);
  check("emfile-again", pipe(p), -EMFILE);
  if ((NOFILE - 3) % 2 == 1)
    check("emfile-spare-fd-unused", close(NOFILE - 1), -EBADF);
  int closed = 0;
  for (int i = 0; i < 2 * npipes; i++)
    closed += close(fds[i]) == 0;
  check("emfile-close-all", closed, 2 * npipes);
  check_no_leaks("emfile-leak", &before);
}

// ---------------------------------------------------------------------------
// spawn

static void test_spawn_errors(void) {
  section("spawn with bad arguments");
  static const char *const echo_argv[] = {"echo", "usertests: spawn went ahead", NULL};
  // Warm up: the first spawn may set up things that stay (caches); the
  // snapshot below is taken after it.
  static const char *const warm[] = {"usertests", "--exit", "0", NULL};
  check("spawn-warm-up", run_child("spawn-warm-up", warm, -1), 0);
  struct counters before;
  snapshot(&before);

  // The program name.
  for (size_t i = 0; i < NBADPTRS; i++)
    spawn_expect(NAME("spawn-name-badptr-%s", badptrs[i].name), ADDR(badptrs[i].addr),
                 echo_argv, -EFAULT);
  memcpy(edge - 3, "ech", 3);   // no NUL before the unmapped page
  spawn_expect("spawn-name-runs-into-unmapped", edge - 3, echo_argv, -EFAULT);
  static char name[MAXNAME + 8];
  memset(name, 'a', MAXNAME + 7);
  spawn_expect("spawn-name-too-long", name, echo_argv, -ENAMETOOLONG);
  name[MAXNAME] = 0;   // MAXNAME characters: no room for the NUL
  spawn_expect("spawn-name-MAXNAME-chars", name, echo_argv, -ENAMETOOLONG);
  name[MAXNAME - 1] = 0;   // MAXNAME - 1 characters: fits, but no such program
  spawn_expect("spawn-name-MAXNAME-1-chars", name, echo_argv, -ENOENT);
  memset(big_string, 'a', sizeof big_string - 1);
  spawn_expect("spawn-name-10000-chars", big_string, echo_argv, -ENAMETOOLONG);
  spawn_expect("spawn-nonexistent", "nosuchprogram", echo_argv, -ENOENT);
  spawn_expect("spawn-empty-name", "", echo_argv, -ENOENT);

  // The argv pointer. (NULL is allowed: see test_spawn.)
  spawn_expect("spawn-argv-one", "echo", ADDR(1), -EFAULT);
  spawn_expect("spawn-argv-kernel", "echo", ADDR(KERNEL_TEXT), -EFAULT);
  // Two valid entries, then the unmapped page instead of a NULL.
  const char **tail = (const char **)(edge - 2 * sizeof(char *));
  tail[0] = "echo";
  tail[1] = "x";
  spawn_expect("spawn-argv-runs-into-unmapped", "echo", tail, -EFAULT);

  // The argv strings.
  const char *bad_entry[] = {"echo", (const char *)KERNEL_TEXT, NULL};
  spawn_expect("spawn-argv-entry-kernel", "echo", bad_entry, -EFAULT);
  bad_entry[1] = (const char *)1;
  spawn_expect("spawn-argv-entry-one", "echo", bad_entry, -EFAULT);
  memcpy(edge - 2, "xy", 2);   // no NUL before the unmapped page
  bad_entry[1] = edge - 2;
  spawn_expect("spawn-argv-entry-runs-into-unmapped", "echo", bad_entry, -EFAULT);

  // Limits: MAXARG entries, MAXARGLEN bytes per string with its NUL.
  static char long_arg[MAXARGLEN + 1];
  memset(long_arg, 'b', MAXARGLEN);   // MAXARGLEN characters + NUL: one too many
  const char *long_argv[] = {"echo", long_arg, NULL};
  spawn_expect("spawn-arg-MAXARGLEN-chars", "echo", long_argv, -E2BIG);
  long_argv[1] = big_string;   // 9999 characters: the kernel must stop looking early
  spawn_expect("spawn-arg-10000-chars", "echo", long_argv, -E2BIG);
  const char *many[MAXARG + 2];
  for (int i = 0; i < MAXARG + 1; i++)
    many[i] = "x";
  many[0] = "echo";
  many[MAXARG + 1] = NULL;   // MAXARG + 1 entries
  spawn_expect("spawn-MAXARG+1-args", "echo", many, -E2BIG);
  static const char *lots[201];
  for (int i = 0; i < 200; i++)
    lots[i] = "x";
  lots[200] = NULL;
  spawn_expect("spawn-200-args", "echo", lots, -E2BIG);

  check_no_leaks("spawn-errors-leak", &before);
}

// The parent side of `usertests --argv ...`: the child checks the layout of
// what it was given and returns argc * 100000 + the total string length.
static void check_argv_child(const char *name, const char *const argv[]) {
  int argc = 0;
  long total = 0;
  for (; argv[argc]; argc++)
    total += (long)strlen(argv[argc]);
  check(name, run_child(name, argv, -1), argc * 100000L + total);
}

static void test_spawn(void) {
  section("spawn, argv and exit status");
  static const char *const a1[] = {"usertests", "--argv", NULL};
  check_argv_child("spawn-argv-simple", a1);
  static const char *const a2[] = {"usertests", "--argv", "", "a", "bb", "", NULL};
  check_argv_child("spawn-argv-empty-strings", a2);

  // Exactly at the limits: MAXARG entries, one of MAXARGLEN - 1 characters.
  static char longest[MAXARGLEN];
  memset(longest, 'c', MAXARGLEN - 1);
  const char *full[MAXARG + 1];
  full[0] = "usertests";
  full[1] = "--argv";
  for (int i = 2; i < MAXARG; i++)
    full[i] = i == 5 ? longest : "12345678";
  full[MAXARG] = NULL;
  check_argv_child("spawn-argv-at-limits", full);

  // argv NULL: the child gets just its name, {"hello", NULL}.
  int h = spawn("hello", NULL);
  if (check_true("spawn-argv-null", h > 0, h, "a pid > 0")) {
    int st = -999;
    check("spawn-argv-null-wait", wait(h, &st), h);
    check("spawn-argv-null-status", st, 0);
  }

  // Exit statuses are whole ints, from exit() and from returning from main.
  static const char *const values[] = {"0", "1", "42", "255", "256", "65536", "-7",
                                       "2147483647", "-2147483648"};
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
    const char *argv[] = {"usertests", "--exit", values[i], NULL};
    check(NAME("exit-status-%s", values[i]), run_child(NAME("exit-%s", values[i]), argv, -999),
          atoi(values[i]));
  }
  static const char *const ret9[] = {"usertests", "--ret", "9", NULL};
  check("exit-status-return-from-main", run_child("ret-9", ret9, -999), 9);

  // Two children at once get different pids.
  static const char *const e0[] = {"usertests", "--exit", "0", NULL};
  int x = spawn("usertests", e0), y = spawn("usertests", e0);
  check_true("spawn-distinct-pids", x > 0 && y > 0 && x != y, y, "two different pids");
  if (x > 0)
    wait(x, NULL);
  if (y > 0)
    wait(y, NULL);
}

// ---------------------------------------------------------------------------
// wait

static void test_wait(void) {
  section("wait");
  int st = 0;
  check("wait-no-children", wait(-1, &st), -ECHILD);
  check("wait-nonexistent-pid", wait(12345, &st), -ECHILD);
  check("wait-self", wait(getpid(), &st), -ECHILD);
  check("wait-pid-0", wait(0, &st), -ECHILD);
  check("wait-pid-minus-2", wait(-2, &st), -ECHILD);

  // A bad status pointer fails with EFAULT and must not reap the child: its
  // status has not been delivered, so it has to stay waitable. (Whether the
  // kernel checks the pointer before or after the child exits, the outcome is
  // the same.)
  static const char *const e7[] = {"usertests", "--exit", "7", NULL};
  int pid = spawn("usertests", e7);
  if (check_true("wait-badptr-spawn", pid > 0, pid, "a pid > 0")) {
    for (size_t i = 1; i < NBADPTRS; i++)   // NULL is allowed (see below)
      check(NAME("wait-badptr-%s", badptrs[i].name), wait(pid, ADDR(badptrs[i].addr)),
            -EFAULT);
    check("wait-badptr-text", wait(pid, ADDR(USER_BASE)), -EFAULT);
    check("wait-badptr-rodata", wait(pid, (int *)rodata), -EFAULT);
    check("wait-badptr-straddles-heap-edge", wait(pid, (int *)(edge - 2)), -EFAULT);
    check("wait-any-badptr", wait(-1, ADDR(KERNEL_TEXT)), -EFAULT);
    st = 0;
    check("wait-after-badptr-reaps", wait(pid, &st), pid);
    check("wait-after-badptr-status", st, 7);
    check("wait-after-reaped", wait(pid, &st), -ECHILD);
  }

  // A NULL status pointer means "don't tell me the status".
  static const char *const e3[] = {"usertests", "--exit", "3", NULL};
  pid = spawn("usertests", e3);
  check("wait-null-status", wait(pid, NULL), pid);
  check("wait-null-status-reaped", wait(pid, &st), -ECHILD);

  // wait(-1) returns each child once, whichever order they end in.
  static const char *const e11[] = {"usertests", "--exit", "11", NULL};
  static const char *const e12[] = {"usertests", "--exit", "12", NULL};
  static const char *const e13[] = {"usertests", "--exit", "13", NULL};
  int kids[3] = {spawn("usertests", e11), spawn("usertests", e12), spawn("usertests", e13)};
  int seen = 0;
  for (int i = 0; i < 3; i++) {
    st = 0;
    int w = wait(-1, &st);
    for (int k = 0; k < 3; k++) {
      if (w == kids[k] && st == 11 + k)
        seen |= 1 << k;
    }
  }
  check("wait-any-three-children", seen, 7);
  check("wait-any-then-none", wait(-1, &st), -ECHILD);

  // Waiting for a particular child skips the others.
  static const char *const e21[] = {"usertests", "--exit", "21", NULL};
  static const char *const e22[] = {"usertests", "--exit", "22", NULL};
  int a = spawn("usertests", e21), b = spawn("usertests", e22);
  st = 0;
  check("wait-specific-second", wait(b, &st), b);
  check("wait-specific-second-status", st, 22);
  st = 0;
  check("wait-specific-first", wait(a, &st), a);
  check("wait-specific-first-status", st, 21);
}

// ---------------------------------------------------------------------------
// kill

// Spawns `argv`, gives it time to get going (and block, if that is what it
// does), kills it, and checks that it ends with status -1 promptly.
static void kill_and_reap(const char *name, const char *prog, const char *const argv[]) {
  int pid = spawn(prog, argv);
  if (!check_true(NAME("%s-spawn", name), pid > 0, pid, "a pid > 0"))
    return;
  sleep(100);
  long t0 = uptime();
  if (!check(NAME("%s-kill", name), kill(pid), 0))
    return;   // waiting would hang: leave the child to init
  int st = 0;
  check(NAME("%s-wait", name), wait(pid, &st), pid);
  check(NAME("%s-status", name), st, -1);
  long took = uptime() - t0;
  check_true(NAME("%s-promptly", name), took < 5000, took, "< 5000 ms");
  check(NAME("%s-kill-after-reaped", name), kill(pid), -ESRCH);
}

static void test_kill(void) {
  section("kill");
  check("kill-nonexistent", kill(99999), -ESRCH);
  check("kill-pid-0", kill(0), -ESRCH);
  check("kill-pid-minus-1", kill(-1), -ESRCH);
  check("kill-pid-minus-100", kill(-100), -ESRCH);
  check("kill-pid-INT_MIN", kill(INT_MIN_), -ESRCH);

  // A process that never makes a system call: it runs only until the timer
  // preempts it, and the kill takes effect then.
  static const char *const spin[] = {"spin", NULL};
  kill_and_reap("kill-spinning", "spin", spin);
  // A process that makes only pure calls, which the trap answers without the
  // switcher's loop: the kill must take effect all the same.
  static const char *const getpids[] = {"usertests", "--getpid-loop", NULL};
  kill_and_reap("kill-getpid-loop", "usertests", getpids);
  // Blocked in the kernel: kill must cut the wait short.
  static const char *const sleeper[] = {"sleeper", "100000", NULL};
  kill_and_reap("kill-sleeping", "sleeper", sleeper);
  static const char *const blockr[] = {"usertests", "--block-read", NULL};
  kill_and_reap("kill-blocked-read", "usertests", blockr);
  static const char *const blockw[] = {"usertests", "--block-write", NULL};
  kill_and_reap("kill-blocked-write", "usertests", blockw);

  // A process that already exited cannot be killed (ESRCH), and its exit
  // status stays what it was.
  static const char *const e5[] = {"usertests", "--exit", "5", NULL};
  long zombies0 = kstat(KSTAT_ZOMBIES);
  int pid = spawn("usertests", e5);
  // Wait for the exit itself (the child becomes a zombie), 30 s at most.
  for (int i = 0; i < 3000 && kstat(KSTAT_ZOMBIES) == zombies0; i++)
    sleep(10);
  check("zombie-counted", kstat(KSTAT_ZOMBIES), zombies0 + 1);
  check("kill-zombie", kill(pid), -ESRCH);
  int st = 0;
  check("kill-zombie-wait", wait(pid, &st), pid);
  check("kill-zombie-status-kept", st, 5);

  // A process may kill itself: kill does not return to it.
  static const char *const self[] = {"usertests", "--killself", NULL};
  check("kill-self-status", run_child("kill-self", self, -999), -1);
}

// ---------------------------------------------------------------------------
// Faults: the faulting process dies with status -1, the kernel and everybody
// else carry on, and everything it had is freed.

static void test_faults(void) {
  section("faulting processes");
  static const char *const kinds[] = {"load0",      "store_kernel", "illegal", "stack_overflow",
                                      "jump_kernel", "misaligned_pc", "brk_shrunk",
                                      "brk_shrunk_other"};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    const char *argv[] = {"fault", kinds[i], NULL};
    int pid = spawn("fault", argv);
    if (!check_true(NAME("fault-%s-spawn", kinds[i]), pid > 0, pid, "a pid > 0"))
      continue;
    int st = 0;
    check(NAME("fault-%s-wait", kinds[i]), wait(pid, &st), pid);
    check(NAME("fault-%s-status", kinds[i]), st, -1);
  }
}

// ---------------------------------------------------------------------------
// malloc (the user library, on top of brk)

static void test_malloc(void) {
  section("malloc");
  char *p = malloc(100);
  check_true("malloc-100", p != NULL && ((uintptr_t)p & 15) == 0, (long)p,
             "a 16-byte aligned pointer");
  char *q = malloc(5000);
  check_true("malloc-5000", q != NULL && (q >= p + 100 || q + 5000 <= p), (long)q,
             "a block that does not overlap the first");
  if (p == NULL || q == NULL)
    return;
  memset(p, 1, 100);
  memset(q, 2, 5000);
  check("malloc-blocks-separate", p[99] == 1 && q[0] == 2 && q[4999] == 2, 1);
  p = realloc(p, 10000);
  check("realloc-keeps-data", p != NULL && p[0] == 1 && p[99] == 1, 1);
  free(p);
  free(q);
  check("malloc-huge", (long)malloc(USER_HEAP_MAX + 1UL), 0);
  check("calloc-overflow", (long)calloc(1UL << 33, 1UL << 33), 0);
  char *z = calloc(300, 3);
  int zero = z != NULL;
  for (int i = 0; z && i < 900; i++)
    zero &= z[i] == 0;
  check("calloc-zeroed", zero, 1);
  free(z);

  // Many blocks of different sizes, freed in a scrambled order. Afterwards
  // the free blocks must have merged again: one block as large as all of
  // them together fits without growing the heap.
  enum { N = 64 };
  char *blocks[N];
  size_t total = 0;
  int ok = 1;
  for (int i = 0; i < N; i++) {
    size_t n = 16 + (size_t)(i * 37 % 300);
    blocks[i] = malloc(n);
    ok &= blocks[i] != NULL;
    if (blocks[i])
      memset(blocks[i], i, n);
    total += n;
  }
  for (int i = 0; i < N; i++)
    ok &= blocks[i] == NULL || blocks[i][0] == (char)i;
  check("malloc-64-blocks", ok, 1);
  long heap = brk(0);
  for (int i = 0; i < N; i++)
    free(blocks[(i * 29) % N]);   // 29 and 64 are coprime: every block once
  char *all = malloc(total);
  check("malloc-free-coalesces", all != NULL && brk(0) == heap, 1);
  free(all);
}

// ---------------------------------------------------------------------------
// Helper child modes

static int child_argv(int argc, char *argv[], uintptr_t sp) {
  // Negative results name what was wrong; the parent prints the value.
  if (sp % 16 != 0)
    return -101;
  if ((uintptr_t)argv < sp || (uintptr_t)argv >= USER_STACK_TOP)
    return -102;
  if (argv[argc] != NULL)
    return -103;
  long total = 0;
  for (int i = 0; i < argc; i++) {
    uintptr_t s = (uintptr_t)argv[i];
    if (s < sp || s >= USER_STACK_TOP)
      return -104;
    size_t len = strlen(argv[i]);
    if (s + len >= USER_STACK_TOP)
      return -105;
    total += (long)len;
  }
  return argc * 100000 + (int)total;
}

static int child_main(int argc, char *argv[], uintptr_t sp) {
  const char *mode = argv[1];
  if (strcmp(mode, "--exit") == 0 && argc > 2)
    exit(atoi(argv[2]));
  if (strcmp(mode, "--ret") == 0 && argc > 2)
    return atoi(argv[2]);
  if (strcmp(mode, "--argv") == 0)
    return child_argv(argc, argv, sp);
  if (strcmp(mode, "--uintr-ret") == 0 && argc > 2)
    return child_uintr_ret(argv[2]);
  if (strcmp(mode, "--killself") == 0) {
    kill(getpid());
    printf("usertests: kill(self) returned\n");
    return 5;
  }
  if (strcmp(mode, "--getpid-loop") == 0) {
    // Only pure calls, which the trap answers by itself (kernel/purecalls.h):
    // the kill must still be seen (at a tick, or at the next call).
    printf("usertests: pid %d calling getpid forever\n", getpid());
    for (;;)
      getpid();
  }
  int p[2];
  if (strcmp(mode, "--block-read") == 0) {
    // This process holds the write end itself, so the read never ends.
    pipe(p);
    printf("usertests: pid %d blocking in read on an empty pipe\n", getpid());
    read(p[0], buf, 1);
    return 6;
  }
  if (strcmp(mode, "--block-write") == 0) {
    // Nobody reads: once PIPE_SIZE bytes are in, the next write blocks.
    pipe(p);
    printf("usertests: pid %d blocking in write on a full pipe\n", getpid());
    for (int i = 0; i < 1000; i++)
      write(p[1], buf, PIPE_SIZE);
    return 7;
  }
  printf("usertests: unknown mode %s\n", mode);
  return 100;
}

// Touches the stack far below the current frame, so that every stack page
// the checks will ever use is allocated before any counter is compared (a
// kernel may allocate stack pages on first touch).
static __attribute__((noinline)) void touch_stack(void) {
  volatile char deep[48 * 1024];
  for (size_t i = 0; i < sizeof deep; i += 512)
    deep[i] = 0;
}

// Everything here creates and ends processes. Afterwards every counter must
// be back where it was, however the processes ended.
static void test_processes(void) {
  section("processes");
  static const char *const warm[] = {"usertests", "--exit", "0", NULL};
  run_child("process-warm-up", warm, -1);
  sleep(10);
  struct counters before;
  snapshot(&before);
  test_spawn();
  test_kill();
  test_faults();
  check_no_leaks("processes-leak", &before);
}

static char **only;   // the sections asked for, or NULL: all
static int nonly;

static int want(const char *name) {
  for (int i = 0; i < nonly; i++)
    if (strcmp(only[i], name) == 0)
      return 1;
  return nonly == 0;
}

int main(int argc, char *argv[]) {
  // In main, the frame pointer is the stack pointer _start was entered with.
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
  if (argc > 1 && argv[1][0] == '-' && argv[1][1] == '-')
    return child_main(argc, argv, sp);

  printf("usertests: pid %d starting\n", getpid());
  touch_stack();
  test_start(argc, argv, sp);
  only = argv + 1;
  nonly = argc - 1;
  if (want("basics"))
    test_basics();
  if (want("nosys"))
    test_nosys();
  if (want("uintr")) {
    test_uintr_recv();
    test_uintr_ret();
  }
  if (want("sleep"))
    test_sleep();
  int on_heap = want("rw") || want("pipe") || want("spawn-errors") || want("wait");
  if (want("brk") || on_heap)
    test_brk();
  if (on_heap && edge == NULL) {
    printf("usertests: FAIL brk-setup: no heap page, cannot continue\n");
    failed++;
  } else if (on_heap) {
    if (want("rw"))
      test_rw();
    if (want("pipe"))
      test_pipe();
    if (want("spawn-errors"))
      test_spawn_errors();
    if (want("wait"))
      test_wait();
  }
  if (want("malloc"))
    test_malloc();
  if (want("processes"))
    test_processes();

  printf("usertests: %d passed, %d failed\n", passed, failed);
  return failed;
}
