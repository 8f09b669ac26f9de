// Kernel-perceived priorities (COPS section 3.2): the kernel reads every
// process's executor bitmap, ranks processes by their best ready work, runs them
// at that priority, and publishes the global bitmap in the vvar page.
#ifndef PRIO_H
#define PRIO_H
#include <stdint.h>

struct proc;

int prio_init(void);                      // boot: allocate the vvar page
uint64_t prio_vvar_page(void);            // its physical address, to map into processes
// The priority a process's work deserves now: the best of its ready bitmap and
// the coroutine it is running, clamped to [USER_PRIO_CEILING, NPRIO-1].
uint32_t prio_of(struct proc *p);
// Rebuild the global bitmap from every runnable process and publish it with the
// kernel executor's bitmap in the vvar page.
void prio_update_global(void);
#endif
