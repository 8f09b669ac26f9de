// The job the boot hart starts once the machine is up, chosen by bootargs:
//   test[=NAME]   run the kernel tests (all, or those whose name contains NAME),
//                 then shut down with the result as the exit status
//   bench         run the microbenchmarks, then shut down (bench=cycles:
//                 count clock cycles instead of instructions)
//   benchsmp[=B:S]  the CES paper's mutex microbenchmark (make bench-smp)
//   poweroff      shut down right after boot (the boot-matrix test)
//   fault         provoke a kernel fault (tests the fault report)
//   user=PROG     run `init PROG` and shut down with its exit status
//   monitor       the kernel console monitor instead of the shell (with
//                 user=PROG: beside PROG, which must not read the console)
//   trace[=N]     the scheduler trace (kernel/trace.h) on from boot, N records
//                 a hart, dumped on the console at poweroff; beside any job
//   idle_poll_us=N  how long an idle hart polls before it halts (default 0:
//                 at once); beside any job
//   idle_tick=1   idle harts keep their periodic tick (by default they sleep
//                 without one: kernel/timer.c); beside any job
//   park_ms=N     a hart idle for N ms parks (kernel/park.c; PARK_DELAY_MS by
//                 default, 0: never); beside any job
//   harts=N       use only N of the board's harts (the rest stay stopped in
//                 the firmware: QEMU still emulates them all, in its
//                 multi-vCPU mode); read at boot by kmain, beside any job
//   nofile=N      descriptors a process may hold (default NOFILE, at most
//                 NOFILE_MAX, kernel/abi.h); beside any job
//   kick_us=N     how long a process's coroutines must stay ready before a
//                 kernel entry wakes its idle executor thread (default
//                 UWAIT_KICK_DELAY_US; 0: at once, as before); beside any job
//   for comparisons, beside any job (the old ways of doing a thing):
//   netlock=spin  the network lock is a spinlock (net/netlock.c); =nohandoff:
//                 system calls spin for it; =busy: every try finds it held (tests)
//   ipi=now       IPIs are sent at once, a spinlock held or not (kernel/spinlock.c)
//   tick_kick=any  a busy hart's tick kicks an idle hart whenever work waits in
//                 its lane, not only when the hart has not slept since the last
//                 tick (kernel/sched.c)
//   uptime=syscall  uptime() makes the system call instead of reading the clock in user mode (user/ulib.c)
//   vnet_irq=all  the network card interrupts for every used buffer, not only
//                 when someone waits (kernel/virtio_net.c)
//   vnet_rx=N     the card gets N receive buffers (a power of two, 8 to 256;
//                 256 by default) (kernel/virtio_net.c)
//   netrecv=locked  every receive takes the network lock, also one that finds
//                 data (net/socket.c)
//   netsend=locked  every send waits for the network lock, also one that finds
//                 it held and could leave its bytes to its holder (net/socket.c)
//   (otherwise)   init, which runs the shell on the console
// The jobs `test`, `bench` and `benchsmp` are not the kernel's own: tests/kernel registers
// them with BOOT_JOB, and the linker gathers them in a table (linker.ld), so
// the kernel names nothing in its test folder.
#ifndef MAIN_H
#define MAIN_H
#include <stddef.h>
#include <stdint.h>
void start_main_job(const char *bootargs);
// Value of `key=` in a space-separated command line, copied into out ("" if absent).
// Returns 1 if the key is present (with or without a value).
int bootarg(const char *args, const char *key, char *out, size_t outlen);
// A bootarg value's leading digits as a number; the digits stop being read
// once it is past cap (the caller clamps: it may be up to ten times cap).
uint64_t bootarg_number(const char *val, uint64_t cap);

struct boot_job {
  const char *key;                    // chosen by bootargs `key` or `key=VALUE`
  void (*start)(const char *value);   // VALUE, or "" if none
};

// order: two digits; when bootargs name several jobs, the lowest order wins.
#define BOOT_JOB(order, k, fn)                                                 \
  static const struct boot_job boot_job_##fn                                  \
      __attribute__((section(".boot_jobs." #order), used, aligned(8))) = { k, fn }
#endif
