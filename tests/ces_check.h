// What every CES mutex stress test checks inside its critical sections, on the
// host (tests/host/test_ces.c), in the kernel (tests/kernel/test_ces.c) and in
// a process (user/cestest.c). A request names its coroutine (co) and its
// number among that coroutine's requests (seq), and the queue it was made
// from (a hart, a thread) with a ticket taken there just before it was
// queued: nothing else is queued from there in between, so ticket order is
// that queue's submit order. Also a stackless worker for the two-step form.
//   - overlaps: a section began while another ran (mutual exclusion);
//   - counter: a plain read-modify-write with a gap, so overlapping sections
//     would lose updates (it must end at the number of requests);
//   - order_errors: a coroutine's requests ran out of its order;
//   - queue_order_errors: a request ran after a later one from its queue (FIFO).
#ifndef CES_CHECK_H
#define CES_CHECK_H
#include <stdint.h>
#include "ces.h"

#define CES_CHECK_COS 48
#define CES_CHECK_QUEUES 8

struct ces_check {
  uint64_t counter;
  uint32_t inside, overlaps, order_errors, queue_order_errors;
  int last_seq[CES_CHECK_COS];
  uint64_t last_ticket[CES_CHECK_QUEUES];
};

struct ces_check_req { int co, seq; uint32_t queue; uint64_t ticket; };

static inline void ces_check_reset(struct ces_check *c) {
  c->counter = 0;
  c->inside = c->overlaps = c->order_errors = c->queue_order_errors = 0;
  for (int i = 0; i < CES_CHECK_COS; i++)
    c->last_seq[i] = -1;
  for (int i = 0; i < CES_CHECK_QUEUES; i++)
    c->last_ticket[i] = 0;
}

// Call inside the critical section.
static inline void ces_check_section(struct ces_check *c, const struct ces_check_req *r) {
  if (__atomic_exchange_n(&c->inside, 1, __ATOMIC_RELAXED))
    c->overlaps++;
  uint64_t v = c->counter;
  for (volatile int i = 0; i < 20; i++)     // widen the window a lost update needs
    ;
  c->counter = v + 1;
  if (r->seq != c->last_seq[r->co] + 1)
    c->order_errors++;
  c->last_seq[r->co] = r->seq;
  if (r->ticket <= c->last_ticket[r->queue])
    c->queue_order_errors++;
  c->last_ticket[r->queue] = r->ticket;
  __atomic_store_n(&c->inside, 0, __ATOMIC_RELAXED);
}

// A stackless coroutine that makes `ops` requests through the two-step form
// (ces_submit, then ces_poll when woken), its request and node kept here
// while it waits. The environment supplies the calls (the kernel's ces_* or
// the user runtime's cops_ces_*), the section, and its queue: which hart or
// thread it runs on now, with a ticket counter per queue.
struct ces_check_stackless {
  struct ces_mutex *m;
  int (*submit)(struct ces_mutex *, struct ces_node *, void (*)(void *), void *);
  int (*poll)(struct ces_mutex *, struct ces_node *);
  void (*section)(void *);
  uint32_t (*queue)(void);
  uint64_t *tickets;
  int co, ops, i, queued;
  struct ces_node node;
  struct ces_check_req r;
};

// Its poll function's body: CO_PENDING while a request waits, CO_YIELD
// after every 8 requests (so others run on one hart), CO_DONE after `ops`.
static inline int ces_check_stackless_poll(struct ces_check_stackless *w) {
  for (;;) {
    if (w->queued) {
      if (!w->poll(w->m, &w->node))
        return CO_PENDING;                  // woken early: still queued
      w->queued = 0;
      w->i++;
    }
    if (w->i == w->ops)
      return CO_DONE;
    uint32_t q = w->queue();
    w->r = (struct ces_check_req){ .co = w->co, .seq = w->i, .queue = q, .ticket = ++w->tickets[q] };
    if (!w->submit(w->m, &w->node, w->section, &w->r)) {
      w->queued = 1;
      return CO_PENDING;
    }
    if (++w->i % 8 == 0)
      return CO_YIELD;
  }
}

#endif
