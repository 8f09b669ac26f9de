// Completion rings (see abi.h for the layout and the protocol).
//
// The kernel writes the ring through its own identity mapping of the ring page,
// so a kernel coroutine on any hart can complete a call while the process runs
// elsewhere. head is written by the process and therefore untrusted: the kernel
// only ever uses tail - head to decide whether there is space, and a head that
// makes no sense (more used than exists) is treated as "full" -- then
// completions wait in the kernel, which costs the misbehaving process its own
// memory and nobody else anything.
#include "ring.h"
#include "abi.h"
#include "kmalloc.h"
#include "palloc.h"
#include "kco.h"
#include "proc.h"
#include "uintr.h"

struct waiting_completion {
  struct waiting_completion *next;
  cid_t cid;
  long result;
};

int ring_setup(struct proc *p) {
  if (uvm_alloc(p->pagetable, USER_RING, USER_RING + PAGE_SIZE, PTE_R | PTE_W) < 0)
    return -ENOMEM;
  p->ring = (struct completion_ring *)uvm_translate(p->pagetable, USER_RING, PTE_W);
  p->ring_waiting = 0;
  p->ring_waiting_tail = 0;
  p->ring_nwaiting = 0;
  p->ring_overflows = 0;
  return 0;
}

static void ring_hold(struct proc *p, cid_t cid, long result, void *spare);

// (tail: r->tail, which only the holder of the ring lock changes)
static int ring_space_at(struct completion_ring *r, uint32_t tail) {
  uint32_t used = tail - __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
  return used < RING_ENTRIES;
}

static int ring_space(struct completion_ring *r) { return ring_space_at(r, r->tail); }

static void ring_put_at(struct completion_ring *r, uint32_t t, cid_t cid, long result) {
  r->e[t % RING_ENTRIES].cid = cid;
  r->e[t % RING_ENTRIES].result = result;
  __atomic_store_n(&r->tail, t + 1, __ATOMIC_RELEASE);   // entry first, then tail
}

static void ring_put(struct completion_ring *r, cid_t cid, long result) {
  ring_put_at(r, r->tail, cid, result);
}

// Caller holds p->ring_lock. Returns how many completions moved into the ring.
// (O(moved): the waiting list keeps its tail and its length.)
static uint32_t flush_locked(struct proc *p) {
  struct completion_ring *r = p->ring;
  uint32_t moved = 0;
  while (p->ring_waiting && ring_space(r)) {
    struct waiting_completion *w = p->ring_waiting;
    p->ring_waiting = w->next;
    ring_put(r, w->cid, w->result);
    kfree(w);
    moved++;
  }
  if (!p->ring_waiting)
    p->ring_waiting_tail = 0;
  p->ring_nwaiting -= moved;
  if (moved)
    r->waiting = p->ring_nwaiting;
  return moved;
}

void ring_flush(struct thread *t) {
  struct proc *p = t->proc;
  if (!p->ring_waiting)
    return;
  spin_lock(&p->ring_lock);
  uint32_t moved = flush_locked(p);
  spin_unlock(&p->ring_lock);
  // Completions that just entered the ring must be announced like any other:
  // otherwise they could sit there while the process sleeps in uwait.
  if (moved)
    uintr_post(t);
}

// The common case takes the ring lock once and allocates nothing: the ring
// has space and nothing waits before this completion. Only when the process
// lets its ring fill up does a completion wait, in order, in the caller's
// spare block.
int ring_complete(struct thread *t, cid_t cid, long result, void *spare) {
  struct proc *p = t->proc;
  spin_lock(&p->ring_lock);
  if (p->ring_waiting)
    flush_locked(p);
  // (ring and tail read once: the head's acquire load made GCC load both again)
  struct completion_ring *r = p->ring;
  uint32_t tail = r->tail;
  int put = !p->ring_waiting && ring_space_at(r, tail);
  if (put)
    ring_put_at(r, tail, cid, result);
  spin_unlock(&p->ring_lock);
  if (!put)
    ring_hold(p, cid, result, spare);
  uintr_post(t);
  return !put;
}

// No space: the completion waits in the kernel, in the spare block the caller
// gave (it was allocated with the call: nothing is allocated here, and a
// stackless coroutine, which cannot wait for memory, completes like any
// other; the kmalloc and retry that were here made such a coroutine sleep,
// a kernel panic, when a full ring met a full memory). The ring may have
// drained meanwhile; order is kept either way, since the record goes behind
// any that still wait and flush_locked moves them first.
_Static_assert(sizeof(struct waiting_completion) <= RING_SPARE_BYTES, "ring_complete's spare is too small");

static void ring_hold(struct proc *p, cid_t cid, long result, void *spare) {
  struct waiting_completion *w = spare;
  w->next = 0;
  w->cid = cid;
  w->result = result;
  spin_lock(&p->ring_lock);
  if (p->ring_waiting_tail)
    p->ring_waiting_tail->next = w;
  else
    p->ring_waiting = w;
  p->ring_waiting_tail = w;
  p->ring_nwaiting++;
  p->ring_overflows++;
  flush_locked(p);               // (the ring may have drained since we looked)
  p->ring->waiting = p->ring_nwaiting;
  spin_unlock(&p->ring_lock);
}

void ring_release(struct proc *p) {
  spin_lock(&p->ring_lock);
  while (p->ring_waiting) {
    struct waiting_completion *w = p->ring_waiting;
    p->ring_waiting = w->next;
    kfree(w);
  }
  p->ring_waiting_tail = 0;
  p->ring_nwaiting = 0;
  p->ring = 0;
  spin_unlock(&p->ring_lock);
}
