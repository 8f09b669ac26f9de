// hello: the smallest complete program. Shows the process's pid and the
// arguments the kernel placed on its stack.
#include "ulib.h"

int main(int argc, char *argv[]) {
  printf("hello from pid %d\n", getpid());
  for (int i = 0; i < argc; i++)
    printf("  argv[%d] = \"%s\"\n", i, argv[i]);
  return 0;
}
