// The job the boot hart starts once the machine is up, chosen by bootargs:
//   test[=NAME]   run the kernel tests (all, or those whose name contains NAME),
//                 then shut down with the result as the exit status
//   bench         run the microbenchmarks, then shut down
//   poweroff      shut down right after boot (the boot-matrix test)
//   fault         provoke a kernel fault (tests the fault report)
//   user=PROG     run `init PROG` and shut down with its exit status
//   monitor       the kernel console monitor instead of the shell
//   (otherwise)   init, which runs the shell on the console
#ifndef MAIN_H
#define MAIN_H
void start_main_job(const char *bootargs);
#endif
