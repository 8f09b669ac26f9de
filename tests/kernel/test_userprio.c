// A kernel coroutine of better priority takes the hart from a running user
// process (COPS: the switching coroutine carries the process's priority and
// yields to better kernel work at every trap). Other harts are held, so both
// compete for one: the kernel coroutine, started while the process computes,
// must finish before the process does.
#include "ktest.h"
#include "hart.h"
#include "kco.h"
#include "timer.h"
#include "proc.h"
#include "riscv.h"

static volatile uint32_t kernel_done;

static void busy_kernel(void *arg) {
  (void)arg;
  volatile uint64_t x = 1;
  for (int chunk = 0; chunk < 200; chunk++) {
    for (int i = 0; i < 20000; i++)
      x = x * 6364136223846793005ULL + 1;
    kco_yield();                       // cooperative: but it stays the best work
  }
  __atomic_store_n(&kernel_done, 1, __ATOMIC_SEQ_CST);
}

KTEST(kernel_coroutine_beats_user_process) {
  int before = proc_count();
  kernel_done = 0;
  ktest_hold_other_harts();
  char *argv[] = { "priotest", "--work", "4", 0 };
  int err;
  struct proc *p = proc_spawn("priotest", 3, argv, 0, &err);
  KREQUIRE(p != 0);
  // Let the process get going on this hart first. This coroutine (priority
  // KTEST_PRIO = 4, equal to the process) only gets back in because the
  // switcher yields to kernel work of equal or better priority at a trap.
  kco_sleep_ms(2);
  KREQUIRE(proc_count() > before);      // still computing
  KREQUIRE(kco_spawn_stackful(busy_kernel, 0, 2, 0) > 0);
  // Wait until the process has gone (an orphan is freed when it exits).
  uint64_t deadline = rdtime() + 30 * board.timebase_hz;
  while (proc_count() > before && rdtime() < deadline)
    kco_sleep_ms(1);
  int finished = proc_count() == before;
  int kernel_first = kernel_done;       // the kernel coroutine had finished by then
  KCHECK(ktest_wait_count(&kernel_done, 1, 30000));
  ktest_release_other_harts();
  KCHECK(finished);
  KCHECK(kernel_first);
}
