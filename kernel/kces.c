// The kernel's environment for CES mutexes (kces.h, vdso/ces.h).
#include "kces.h"
#include "kco.h"

// A requester's continuation goes to another hart than the combiner's, which
// goes on combining (CES: the sections stay here, the continuations spread).
int ces_wake_elsewhere(cid_t cid) { return kco_wake_elsewhere(cid); }

// A combiner waits here only while a coroutine on another hart is between its
// swap into the queue and its link, a few instructions (an interrupt at most
// delays it; interrupt handlers never take a CES mutex), so a plain spin.
static void kces_relax(uint32_t spins) {
  (void)spins;
  __asm__ volatile("nop");
}

const struct ces_env kces_env = {
  .current = kco_current,
  .block = kco_block,
  .wake = kco_wake,
  .wake_elsewhere = ces_wake_elsewhere,
  .relax = kces_relax,
};
