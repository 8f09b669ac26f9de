// Kernel-perceived priorities (COPS section 3.2): the kernel reads every
// process's executor bitmap, ranks processes by their best ready work, runs them
// at that priority, and publishes how many processes it ranks at each priority
// in the vvar page (the ranks word, abi.h).
#ifndef PRIO_H
#define PRIO_H
#include <stdint.h>

struct proc;

#define PRIO_UNRANKED 8                   // p->pub_prio of a process with no runnable thread (VVAR_NPRIO)

int prio_init(void);                      // boot: allocate the vvar page
uint64_t prio_vvar_page(void);            // its physical address, to map into processes
void prio_vvar_timebase(uint64_t hz);     // what uptime() in user mode divides by (0: the call)
// The priority a process's work deserves now: the best of its ready bitmap and
// the coroutine it is running, clamped to [USER_PRIO_CEILING, NPRIO-1].
uint32_t prio_of(struct proc *p);
// Has p's executor a ready coroutine (any bit in its union bitmap)? Untrusted:
// a process that lies only wakes itself early.
int prio_user_has_ready(struct proc *p);
// Rank p again (COPS: at every kernel entry): if the priority its work deserves
// now, or whether it has a runnable thread at all (p->nactive), changed since
// it was last published, move it between the vvar page's counts: one atomic
// add, O(1) and lock-free; the table is never scanned. Also
// copies the kernel executor's bitmap to the vvar page.
void prio_publish(struct proc *p);
// The same for a kernel entry that may skip the switching coroutine's loop
// (syscall_fast): if kernel work of p's rank or better is ready, publish
// nothing and return PRIO_KERNEL_FIRST (the loop will publish, then yield to
// that work); otherwise publish as prio_publish and return p's rank.
#define PRIO_KERNEL_FIRST 0xffffffffu
uint32_t prio_publish_unless_kernel(struct proc *p);
// The kernel executor's bitmap only (a tick with no process trap).
void prio_publish_kernel(void);
#endif
