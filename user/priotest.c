// priotest: priorities the kernel sees (run on one hart, under QEMU -icount:
// which process finishes first must not depend on how fast the host is).
//   - a low-priority process (6) started first and a high-priority one (2)
//     started second do the same work: the high one must finish while the low
//     one is still computing, because the kernel ranks processes by their
//     executors' best work and preempts at the next tick;
//   - a process that spins forever cannot starve a high-priority one;
//   - the vvar page counts the caller at its priority in the ranks word, with
//     the kernel's bitmap in its top byte.
// "priotest --work P" sets its own priority to P, computes, and exits with P.
#include "cops.h"
#include "ulib.h"
#include "utest.h"

#define WORK 12000000L     // about 8 ticks of guest time at -icount shift=0, so the
                           // order cannot hinge on one tick


static int work(int prio) {
  cops_reprio(cops_current(), (uint32_t)prio);
  volatile uint64_t x = 1;
  for (long i = 0; i < WORK; i++)
    x = x * 6364136223846793005ULL + (uint64_t)i;
  return prio;
}

static int spawn_worker(const char *prio) {
  char *argv[] = { "priotest", "--work", (char *)prio, 0 };
  return spawn("priotest", (const char *const *)argv);
}

int main(int argc, char **argv) {
  utest_prog = "priotest";
  if (argc > 2 && strcmp(argv[1], "--work") == 0)
    return work(atoi(argv[2]));

  const struct vvar *vv = (const struct vvar *)USER_VVAR;
  yield();                                   // a kernel entry refreshes the vvar page
  check("vvar-shows-own-priority", (long)(vvar_rank_count(vv->ranks, COPS_MAIN_PRIO) >= 1), 1);
  // ranks's top byte is a copy of the kernel's bitmap (the runtime's one-load
  // test before each dispatch), and its counts add up to the processes ranked
  // (at most NPROC, 64). Read again if a tick moved them meanwhile.
  uint64_t g, k;
  do {
    g = vv->ranks;
    k = vv->kernel_bitmap;
  } while (g != vv->ranks);
  check("vvar-ranks-has-kernel-byte", (long)(g >> VVAR_KERNEL_SHIFT), (long)(k & 0xff));
  long ranked = 0;
  for (unsigned long q = 0; q < VVAR_NPRIO; q++)
    ranked += (long)vvar_rank_count(g, q);
  check("vvar-ranks-count-processes", ranked >= 1 && ranked <= 64, 1);
  // The masks the runtime tests with: priority 3 sees the counts of 0-2 and
  // the kernel's bits 0-2, nothing of its own or worse.
  check("vvar-better-mask", (long)(vvar_better_mask(3) == (((1UL << 21) - 1) | (7UL << 56))), 1);

  int low = spawn_worker("6");
  int high = spawn_worker("2");
  int status;
  check("high-priority-finishes", wait(high, &status), high);
  check("high-priority-status", status, 2);
  // Was low still computing when high was done? kill() says: 0 if it is still
  // running, -ESRCH if it had already finished. (wait(-1) would not tell: it
  // reaps in slot order, not in exit order.)
  check("high-priority-finished-first", kill(low), 0);
  check("low-priority-reaped", wait(low, &status), low);

  char *spin_argv[] = { "spin", 0 };
  int spinner = spawn("spin", (const char *const *)spin_argv);
  int hp = spawn_worker("2");
  check("not-starved-by-spinner", wait(hp, &status), hp);
  check("spinner-killed", kill(spinner), 0);
  check("spinner-reaped", wait(spinner, &status), spinner);
  check("spinner-status", status, -1);
  return utest_summary();
}
