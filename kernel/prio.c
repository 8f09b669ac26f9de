// Kernel-perceived priorities (see prio.h). Values read from user pages are
// untrusted: the bitmap is masked to the priorities that exist, the running
// priority is clamped, and a process can never rank above USER_PRIO_CEILING.
#include "prio.h"
#include "abi.h"
#include "kco.h"
#include "palloc.h"
#include "proc.h"

static struct vvar *vvar;

int prio_init(void) {
  vvar = palloc_zero(1);
  return vvar ? 0 : -1;
}

uint64_t prio_vvar_page(void) { return (uint64_t)vvar; }

uint32_t prio_of(struct proc *p) {
  // Read exec_page once: proc_runnable_bitmap calls this without the process
  // table lock, and an exiting process's slot is cleared (exec_page = 0) on
  // another hart meanwhile. A page already freed only yields a stale priority.
  const struct executor *ex = __atomic_load_n(&p->exec_page, __ATOMIC_RELAXED);
  if (!ex)
    return NPRIO_DEFAULT - 1;
  uint64_t bm = __atomic_load_n(&ex->bitmap, __ATOMIC_RELAXED) & ((1ULL << NPRIO_DEFAULT) - 1);
  uint32_t best = bm ? exec_ctz64(bm) : NPRIO_DEFAULT;
  uint32_t running = *(volatile const uint32_t *)((const char *)ex + EXEC_PAGE_RUNNING_PRIO);
  if (running < best)
    best = running;
  if (best >= NPRIO_DEFAULT)
    best = NPRIO_DEFAULT - 1;     // nothing ready: the lowest priority
  if (best < USER_PRIO_CEILING)
    best = USER_PRIO_CEILING;
  return best;
}

void prio_update_global(void) {
  if (!vvar)
    return;
  vvar->global_bitmap = proc_runnable_bitmap();
  vvar->kernel_bitmap = __atomic_load_n(&kexec.bitmap, __ATOMIC_RELAXED);
  vvar->updates++;
}
