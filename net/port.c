// The rest of the lwIP port: the clock, random numbers, memory and the one
// libc function lwIP calls (see net/lwipopts.h and net/arch/cc.h).
#include "klib.h"
#include "kmalloc.h"
#include "board.h"
#include "riscv.h"
#include "hart.h"
#include "lwip/sys.h"


// lwIP's clock: milliseconds since boot (wraps after 49 days; lwIP compares
// times with wrapping arithmetic).
u32_t sys_now(void) { return (u32_t)(rdtime() / (board.timebase_hz / 1000)); }

// lwIP's LWIP_RAND: the first local port of outgoing connections comes from
// here (TCP's initial sequence numbers do not: net/isn.c). xorshift64, seeded
// from the time counter at first use: a port needs to be varied, not secret.
unsigned int net_rand(void) {
  static uint64_t x;
  if (!x)
    x = rdtime() * 0x9e3779b97f4a7c15ULL | 1;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return (unsigned int)(x >> 32);
}

void *net_malloc(unsigned long size) { return kmalloc(size); }
void *net_calloc(unsigned long count, unsigned long size) {
  if (size && count > (unsigned long)-1 / size)
    return 0;
  return kzalloc(count * size);
}
void net_free(void *p) { kfree(p); }

int atoi(const char *s) {
  int v = 0;
  while (*s >= '0' && *s <= '9')
    v = v * 10 + (*s++ - '0');
  return v;
}
