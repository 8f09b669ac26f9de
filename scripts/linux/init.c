// init: process 1 of the Linux baseline (scripts/linux/build.sh), which
// scripts/bench-light.sh boots beside Coral for issue 13. It starts one
// mserver (scripts/host/mserver.c, the host's matrix-echo server, built
// static for RISC-V) per CPU, all listening on port 80 with SO_REUSEPORT, so
// that Linux spreads the connections over them: one epoll loop per hart, as
// matrixd KCUC runs one executor thread per hart. The kernel configures the
// network itself (the ip= boot argument), so nothing else is needed.
//
// Booted with "-- bench" at the end of the kernel's command line (which
// Linux hands to init as arguments), it runs the microbenchmarks instead
// (scripts/linux/lbench.c) and powers the machine off.
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/reboot.h>
#include <sys/wait.h>
#include <unistd.h>

static int run_bench(void) {
  pid_t pid = fork();
  if (pid == 0) {
    char *argv[] = {"lbench", NULL};
    execv("/lbench", argv);
    perror("linuxinit: exec /lbench");
    _exit(1);
  }
  int status = 1;
  if (pid > 0)
    waitpid(pid, &status, 0);
  printf("linuxinit: lbench ended (status %d); powering off\n", status);
  fflush(stdout);
  sync();
  reboot(RB_POWER_OFF);
  perror("linuxinit: reboot");
  return 1;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "bench") == 0)
    return run_bench();
  cpu_set_t set;
  int cpus = 1;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    cpus = CPU_COUNT(&set);
  printf("linuxinit: %d CPUs, starting %d mservers\n", cpus, cpus);
  fflush(stdout);
  for (int i = 0; i < cpus; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      char *argv[] = {"mserver", "-H", "0.0.0.0", "-p", "80", "--reuseport", "--quiet", NULL};
      execv("/mserver", argv);
      perror("linuxinit: exec /mserver");
      _exit(1);
    }
    if (pid < 0)
      perror("linuxinit: fork");
  }
  // Process 1 must not exit: reap whatever ends, forever.
  for (;;) {
    int status;
    pid_t pid = wait(&status);
    if (pid < 0)
      pause();
    else
      printf("linuxinit: process %d ended (status %d)\n", pid, status);
  }
}
