// A kernel coroutine of better priority takes the hart from a running user
// process (COPS: the switching coroutine carries the process's priority and
// yields to better kernel work at every trap). Other harts are held, so both
// compete for one. The process spins forever (user/spin.c), so the kernel
// coroutine can only finish if the switcher really gives the hart up; no
// amount of host speed can make the test pass or fail otherwise.
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
  char *argv[] = { "spin", 0 };
  int err;
  struct proc *p = proc_spawn("spin", 1, argv, 0, &err);
  KREQUIRE(p != 0);
  int pid = p->pid;
  // Let the process get going on this hart first. This coroutine (priority
  // KTEST_PRIO = 4, equal to the process) only gets back in because the
  // switcher yields to kernel work of equal or better priority at a trap.
  kco_sleep_ms(2);
  KREQUIRE(kco_spawn_stackful(busy_kernel, 0, 2, 0) > 0);
  KCHECK(ktest_wait_count(&kernel_done, 1, KTEST_PATIENCE_MS));
  KCHECK(proc_count() > before);        // the spinner was still there: it was preempted
  KCHECK_EQ(proc_kill(pid), 0);
  // Wait until the process has gone (an orphan is freed when it exits).
  uint64_t deadline = rdtime() + (uint64_t)KTEST_PATIENCE_MS * board.timebase_hz / 1000;
  while (proc_count() > before && rdtime() < deadline)
    kco_sleep_ms(1);
  ktest_release_other_harts();
  KCHECK_EQ(proc_count(), before);
}
