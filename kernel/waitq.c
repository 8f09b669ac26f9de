// Wait queues (see waitq.h). A waiter is owned by the waiting coroutine (on its
// stack or in its state); the queue only links it. Wakers unlink before waking,
// so a woken coroutine may reuse its waiter at once.
#include "waitq.h"
#include "kco.h"

void waitq_init(struct waitq *q, const char *name) {
  spin_init(&q->lock, name);
  q->head = q->tail = 0;
}

// Wakers look at the queue without its lock when it is empty (the common case:
// a pipe or socket that nobody waits on), so both sides order their write
// before their read with a full fence: a waiter links itself, then tests its
// condition; a waker changes the condition, then looks for waiters. Either the
// waiter sees the change or the waker sees the waiter (the two stores cannot
// both be missed).
void waitq_add(struct waitq *q, struct waiter *w, cid_t cid) {
  if (__atomic_load_n(&w->linked, __ATOMIC_ACQUIRE)) {
    // Still linked from the last wait (syswork's attempt re-registers each
    // time): nothing to do. If a waker unlinks it right now, it wakes us too.
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return;
  }
  spin_lock(&q->lock);
  if (!w->linked) {
    w->cid = cid;
    w->next = 0;
    w->prev = q->tail;
    if (q->tail)
      q->tail->next = w;
    else
      q->head = w;
    q->tail = w;
    w->linked = 1;
  }
  spin_unlock(&q->lock);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);   // the link before the caller's test
}

static void unlink(struct waitq *q, struct waiter *w) {
  if (w->prev)
    w->prev->next = w->next;
  else
    q->head = w->next;
  if (w->next)
    w->next->prev = w->prev;
  else
    q->tail = w->prev;
  w->next = w->prev = 0;
  w->linked = 0;
}

void waitq_remove(struct waitq *q, struct waiter *w) {
  spin_lock(&q->lock);
  if (w->linked)
    unlink(q, w);
  spin_unlock(&q->lock);
}

// (waitq.h's waitq_wake_one found a waiter without the lock)
int waitq_wake_one_locked_look(struct waitq *q) {
  spin_lock(&q->lock);
  struct waiter *w = q->head;
  if (w) {
    cid_t cid = w->cid;
    void (*notify)(struct waiter *) = w->notify;
    unlink(q, w);        // after this the waiter belongs to its coroutine again
    if (notify)
      notify(w);
    else
      kco_wake(cid);
  }
  spin_unlock(&q->lock);
  return w != 0;
}

int waitq_wake_all_locked_look(struct waitq *q) {
  int n = 0;
  do
    n += waitq_wake_one_locked_look(q);
  while (!waitq_empty_for_waker(q));
  return n;
}
