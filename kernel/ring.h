// The completion ring of a process (layout: struct completion_ring in abi.h).
#ifndef RING_H
#define RING_H
#include "executor.h"

struct proc;
struct thread;

int ring_setup(struct proc *p);            // map the ring page at USER_RING; 0 or -ENOMEM
// Post {cid, result} to t's process and raise a user interrupt in thread t (the
// one that made the call). Never fails, never waits and never loses a
// completion: with the ring full it waits in the kernel until there is space,
// kept in `spare`, a kmalloc'd block of at least RING_SPARE_BYTES the caller
// gives up (kfree'd once the completion is in the ring or the process ends).
// Returns 1 if it kept spare, 0 if the caller still owns it.
#define RING_SPARE_BYTES 24
int ring_complete(struct thread *t, cid_t cid, long result, void *spare);
// Move completions that waited in the kernel into the ring, as space allows;
// thread t (about to return to U-mode) is interrupted if any moved.
void ring_flush(struct thread *t);
void ring_release(struct proc *p);         // at exit: drop what still waits
#endif
