// In-guest microbenchmarks (tests/kernel/bench_micro.c), run with bootargs
// "bench" under QEMU -icount shift=0, where rdinstret counts guest instructions
// exactly. Each result is printed as
//   BENCH name=<id> value=<number> unit=<unit>
// and scripts/bench-micro.sh collects them into docs/results/micro.md.
#ifndef BENCH_H
#define BENCH_H
void bench_start(void);
#endif
