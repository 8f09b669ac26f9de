// spin: loops forever without making a system call. The only way another
// process gets the hart back is the timer preempting this one, and the only
// way it ends is kill(); usertests and the shell ("spin &") use it for both.
#include "ulib.h"

int main(void) {
  printf("spin: pid %d spinning forever\n", getpid());
  // volatile: the loop must really run, not be reduced to an empty `for (;;)`.
  volatile unsigned long count = 0;
  for (;;)
    count++;
}
