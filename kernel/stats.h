// Counters for the console monitor (kernel/monitor.c). Each subsystem registers
// a printer for its own counters with STATS_SOURCE; the linker gathers them in
// one table (linker.ld), sorted by `order`, so the monitor names none of them
// and calls none of them directly.
//
// A printer writes through `out` (the monitor passes kprintf): a file that is
// also built into the host tests, like kmalloc.c, then needs no console.
#ifndef STATS_H
#define STATS_H

typedef void stats_out_fn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

struct stats_source {
  const char *group;                  // "net": printed by the monitor's `net` too
  void (*print)(stats_out_fn *out);
  int listing;                        // a listing (one line per process, socket...):
                                      // printed by its group's command and by the
                                      // status key (kernel/status.c), not by `stats`
};

// order: two digits; the sources print in that order.
#define STATS_SOURCE(order, grp, fn)                                           \
  static const struct stats_source stats_source_##fn                          \
      __attribute__((section(".stats." #order), used, aligned(8))) = { grp, fn, 0 }

// The same for a listing (see `listing` above).
#define STATS_LISTING(order, grp, fn)                                          \
  static const struct stats_source stats_source_##fn                          \
      __attribute__((section(".stats." #order), used, aligned(8))) = { grp, fn, 1 }

#endif
