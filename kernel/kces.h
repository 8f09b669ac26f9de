// CES mutexes for kernel coroutines (vdso/ces.h over the kernel executor).
// Callers must be stackful kernel coroutines; kces_init gives a mutex the
// kernel's environment: kco_current, kco_block, kco_wake, ces_wake_elsewhere.
#ifndef KCES_H
#define KCES_H
#include "ces.h"

extern const struct ces_env kces_env;

static inline void kces_init(struct ces_mutex *m) { ces_init(m, &kces_env, 0); }

// Wake a requester whose section a combiner has run, so that its continuation
// runs on another hart than the combiner's. Every CES hand-over of a finished
// request goes through this one function; for now it is kco_wake, which
// queues the coroutine in its home lane: the hart where it blocked, normally
// not the combiner's.
int ces_wake_elsewhere(cid_t cid);

#endif
