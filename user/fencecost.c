// fencecost: what a fence and an atomic cost the host under QEMU, by kind.
// Each loop runs N times; the time is the guest's clock (rdtime), which
// without -icount follows the host's. Compare one boot at -smp 1 with one at
// -smp 2: with more than one vCPU QEMU's TCG must make guest fences and AMOs
// real host barriers and atomics, which it may skip with one
// (docs/results/light-stalls.md, "What a fence costs"). Wall-clock figures
// on a shared host: read them as ratios within one sitting.
//
//   boot with bootargs user=fencecost; prints "BENCH name=fencecost_KIND ..."
#include "ulib.h"

#define N 10000000L
#define REPS 5

static volatile uint64_t word;

// Nanoseconds per iteration, in thousandths (rdtime counts at timebase_hz).
static uint64_t per_iteration(uint64_t ticks) {
  uint64_t hz = ((const struct vvar *)USER_VVAR)->timebase_hz;
  return ticks * 1000000000000ULL / hz / N;
}

#define TIMED(body)                                                            \
  ({                                                                           \
    uint64_t t0_ = rdtime();                                                   \
    for (long i_ = 0; i_ < N; i_++)                                            \
      body;                                                                    \
    per_iteration(rdtime() - t0_);                                             \
  })

int main(void) {
  enum { NOP, FULL, ACQ, REL, AMO, LRSC, PLAIN, NKINDS };
  static const char *names[NKINDS] = { "nop", "fence_rw_rw", "fence_r_rw", "fence_rw_w",
                                       "amoadd", "lr_sc", "load_add_store" };
  uint64_t t[NKINDS][REPS];
  for (int r = 0; r < REPS; r++) {
    t[NOP][r] = TIMED(__asm__ volatile("nop" ::: "memory"));
    t[FULL][r] = TIMED(__asm__ volatile("fence rw, rw" ::: "memory"));
    t[ACQ][r] = TIMED(__asm__ volatile("fence r, rw" ::: "memory"));
    t[REL][r] = TIMED(__asm__ volatile("fence rw, w" ::: "memory"));
    t[AMO][r] = TIMED(__atomic_fetch_add(&word, 1, __ATOMIC_RELAXED));
    t[LRSC][r] = TIMED({
      uint64_t old = word;
      __atomic_compare_exchange_n(&word, &old, old + 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    });
    t[PLAIN][r] = TIMED(word = word + 1);
  }
  printf("fencecost: %d harts, ns per iteration of a loop (median of %d runs of %ld)\n",
         (int)kstat(KSTAT_HARTS), REPS, N);
  for (int k = 0; k < NKINDS; k++) {
    sort_u64(t[k], REPS);
    uint64_t m = t[k][REPS / 2];
    printf("BENCH name=fencecost_%s value=%lu.%03lu unit=ns\n", names[k], m / 1000, m % 1000);
  }
  return 0;
}
