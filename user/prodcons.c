// prodcons: Algorithm 1 of the COPS paper, concurrent programming with
// coroutines. main spawns a consumer and a producer. The producer fills a
// bounded queue; when it is full the producer wakes the consumer and yields. The
// consumer empties the queue and blocks.
//
// In Coral priority 0 is the best, and a yield only lets coroutines of the same
// or better priority run. So the consumer gets priority 0 and the producer 1:
// then the producer's "wake and yield" really hands over the hart, as in the
// paper's narrative. (With the priorities the other way round the producer
// would be picked again at once, which is strict priority working as designed.)
// Every step is printed, so the hand-offs can be followed.
//
//   prodcons [items]     (default 12 items through a queue of 4)
#include "cops.h"
#include "ulib.h"

#define QUEUE_SIZE 4

static int queue[QUEUE_SIZE], qlen;
static int total, produced, consumed;
static cid_t consumer_cid, main_cid;

static void consumer(void *arg) {
  (void)arg;
  while (consumed < total) {
    while (qlen == 0) {
      printf("consumer: queue empty, blocking\n");
      cops_block();
    }
    while (qlen > 0) {
      int item = queue[--qlen];
      consumed++;
      printf("consumer: took item %d (%d consumed)\n", item, consumed);
    }
  }
  printf("consumer: all %d items consumed\n", consumed);
  cops_wake(main_cid);
}

static void producer(void *arg) {
  (void)arg;
  while (produced < total) {
    while (qlen == QUEUE_SIZE) {
      printf("producer: queue full, waking consumer %lx and yielding\n", (unsigned long)consumer_cid);
      cops_wake(consumer_cid);
      cops_yield();
    }
    queue[qlen++] = ++produced;
    printf("producer: made item %d\n", produced);
  }
  printf("producer: done, waking the consumer for the rest\n");
  cops_wake(consumer_cid);
}

int main(int argc, char **argv) {
  total = argc > 1 ? atoi(argv[1]) : 12;
  if (total <= 0)
    total = 12;
  main_cid = cops_current();
  consumer_cid = (cid_t)cops_spawn_stackful(consumer, 0, 0);
  cops_spawn_stackful(producer, 0, 1);
  printf("prodcons: consumer %lx at priority 0, producer at priority 1, %d items\n",
         (unsigned long)consumer_cid, total);
  while (consumed < total)
    cops_block();
  printf("prodcons: produced %d, consumed %d\n", produced, consumed);
  return produced == total && consumed == total ? 0 : 1;
}
