// sleeper: sleeps for argv[1] milliseconds (default 1000), then says how
// long it actually slept, measured with uptime().
#include "ulib.h"

int main(int argc, char *argv[]) {
  long ms = argc > 1 ? atol(argv[1]) : 1000;
  printf("sleeper: pid %d sleeping %ld ms\n", getpid(), ms);
  long start = uptime();
  int r = sleep(ms);
  if (r < 0) {
    printf("sleeper: sleep(%ld) failed: %d %s\n", ms, r, errname(r));
    return 1;
  }
  printf("sleeper: pid %d woke up after %ld ms\n", getpid(), uptime() - start);
  return 0;
}
