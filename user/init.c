// init: the first process.
//
//   init             start the matrix-echo server (matrixd, model KCUC, port 80)
//                    in the background, then run the shell, and start a new
//                    one whenever it exits
//   init PROG ARGS   run PROG with ARGS once, report its exit status and exit
//                    with it (the test harness boots this form; the kernel's
//                    user=matrixd,-m,ktut runs `init matrixd -m ktut`)
//
// Both forms wait with wait(-1), for any child, and report any child they
// did not expect on the way. (Today the kernel frees an orphan itself when it
// exits; reaping with -1 keeps init correct if orphans are ever handed to it.)
#include "ulib.h"

static void report_reaped(int pid, int status) {
  printf("init: reaped pid %d (exit status %d)\n", pid, status);
}

// Waits until `pid` exits and returns its status (-1 if wait fails). Reaps
// any other child along the way.
static int reap_until(const char *name, int pid) {
  int status;
  int err = wait_for(pid, &status, report_reaped);
  if (err < 0) {
    printf("init: wait for %s failed: %d %s\n", name, err, errname(err));
    return -1;
  }
  return status;
}

static int run_once(int argc, char *argv[]) {
  const char *name = argv[1];
  // argv[1..argc] is already a NULL-terminated array that starts with the
  // program name: exactly the argv the child should get.
  (void)argc;
  int pid = spawn(name, (const char *const *)&argv[1]);
  if (pid < 0) {
    printf("init: cannot start %s: %d %s\n", name, pid, errname(pid));
    return 127;
  }
  int status = reap_until(name, pid);
  printf("init: %s exited with status %d\n", name, status);
  return status;
}

int main(int argc, char *argv[]) {
  if (argc > 1)
    return run_once(argc, argv);

  // The server runs beside the shell; if it cannot start (or stops later,
  // reported as a reaped child), the shell is still there.
  static const char *const md_argv[] = {"matrixd", NULL};
  int md = spawn("matrixd", md_argv);
  if (md < 0)
    printf("init: cannot start matrixd: %d %s; continuing without it\n", md, errname(md));
  else
    printf("init: started matrixd (pid %d)\n", md);

  static const char *const sh_argv[] = {"sh", NULL};
  for (;;) {
    int pid = spawn("sh", sh_argv);
    if (pid < 0) {
      printf("init: cannot start sh: %d %s; retrying in a second\n", pid, errname(pid));
      sleep(1000);   // don't flood the console if it keeps failing
      continue;
    }
    printf("init: started sh (pid %d)\n", pid);
    long started = uptime();
    int status = reap_until("sh", pid);
    printf("init: sh (pid %d) exited with status %d; starting a new one\n", pid, status);
    // A shell that ends at once (say, the console keeps reporting end of
    // file) would otherwise be restarted in a tight loop.
    if (uptime() - started < 1000)
      sleep(1000);
  }
}
