// CES mutexes for user coroutines (cops.h): the shared vdso/ces.c, reached
// through the vDSO's entry table, over this runtime's scheduler calls.
#include "cops.h"
#include "abi.h"
#include "ulib.h"
#include "vdso.h"

#define V ((const struct vdso_table *)USER_VDSO)

// A woken coroutine goes back to its home lane, the thread where it blocked
// (normally not the combiner's), and any idle thread may steal it.
static int wake_elsewhere(cid_t cid) { return cops_wake(cid); }

// A combiner waits for a requester on another thread to link itself behind
// the queue's tail, two instructions after it swapped itself in. If that
// thread was preempted in between, spinning on would only burn the hart it
// needs: after a short spin, give the hart up.
static void relax(uint32_t spins) {
  if (spins >= 64)
    yield();
}

static void block(void) { cops_block(); }   // (cops_block is inline)

static const struct ces_env cops_ces_env = {
  .current = cops_current,
  .block = block,
  .wake = cops_wake,
  .wake_elsewhere = wake_elsewhere,
  .relax = relax,
};

int cops_mutex_init(cops_mutex_t *m) {
  if (V->size < offsetof(struct vdso_table, ces_poll) + sizeof V->ces_poll)
    return -ENOSYS;
  V->ces_init(m, &cops_ces_env, 0);
  return 0;
}

void cops_ces_run(cops_mutex_t *m, void (*fn)(void *), void *arg) { V->ces_run(m, fn, arg); }
void cops_mutex_lock(cops_mutex_t *m, cops_mutex_node_t *n) { V->ces_lock(m, n); }
void cops_mutex_unlock(cops_mutex_t *m, cops_mutex_node_t *n) { V->ces_unlock(m, n); }
int cops_ces_submit(cops_mutex_t *m, cops_mutex_node_t *n, void (*fn)(void *), void *arg) {
  return V->ces_submit(m, n, fn, arg);
}
int cops_ces_poll(cops_mutex_t *m, cops_mutex_node_t *n) { return V->ces_poll(m, n); }
