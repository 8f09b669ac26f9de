// kstats: print the kernel's leak-check counters on one line, for scripts
// that compare a running system with itself later (scripts/soak.py types it
// at the shell before and after a soak).
//
//   kstats
//
// Output (parsed; keep the format): one line
//   kstats: free_pages=F kmalloc_pages=K kmalloc_bytes=B kmalloc_objects=O
//           cache_bytes=CB cache_objects=CO coroutines=C procs=P sockets=S
//           tcp_pcbs=T timers=M heap_pages=H
// The first sample waits until the machine is at rest (KSTAT_QUIET), so that
// work in flight (a call's coroutine finishing on another hart) is not counted
// as held memory; the others follow at once. kmalloc_* include the caches
// (cache_*) that grow once under load and stay.
#include "ulib.h"

static const struct { int what; const char *name; } counters[] = {
  { KSTAT_FREE_PAGES, "free_pages" },
  { KSTAT_KMALLOC_PAGES, "kmalloc_pages" },
  { KSTAT_KMALLOC_BYTES, "kmalloc_bytes" },
  { KSTAT_KMALLOC_OBJECTS, "kmalloc_objects" },
  { KSTAT_CACHE_BYTES, "cache_bytes" },
  { KSTAT_CACHE_OBJECTS, "cache_objects" },
  { KSTAT_LIVE_COROUTINES, "coroutines" },
  { KSTAT_NPROCS, "procs" },
  { KSTAT_SOCKETS, "sockets" },
  { KSTAT_TCP_PCBS, "tcp_pcbs" },
  { KSTAT_TIMERS, "timers" },
  { KSTAT_HEAP_PAGES, "heap_pages" },
};

int main(void) {
  long v[sizeof counters / sizeof counters[0]];
  for (unsigned i = 0; i < sizeof counters / sizeof counters[0]; i++) {
    v[i] = kstat(counters[i].what | (i == 0 ? KSTAT_QUIET : 0));
    if (v[i] < 0) {
      printf("kstats: kstat(%d) failed: %ld %s\n", counters[i].what, v[i], errname(v[i]));
      return 1;
    }
  }
  // One printf, so matrixd's lines on the same console cannot cut into it.
  char line[PRINTF_BUF];
  int len = snprintf(line, sizeof line, "kstats:");
  for (unsigned i = 0; i < sizeof counters / sizeof counters[0]; i++)
    len += snprintf(line + len, sizeof line - (size_t)len, " %s=%ld", counters[i].name, v[i]);
  printf("%s\n", line);
  return 0;
}
