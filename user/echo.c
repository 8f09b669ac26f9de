// echo: prints its arguments separated by spaces, then a newline.
#include "ulib.h"

int main(int argc, char *argv[]) {
  // Build the whole line first, so it reaches the console in one write even
  // when another process prints at the same time. MAXARG strings of at most
  // MAXARGLEN bytes (with their NULs, which become spaces) always fit.
  static char line[MAXARG * MAXARGLEN + 1];
  size_t n = 0;
  for (int i = 1; i < argc; i++) {
    size_t len = strlen(argv[i]);
    if (n + len + 1 >= sizeof line)
      break;   // cannot happen with the kernel's limits; never overflow anyway
    memcpy(line + n, argv[i], len);
    n += len;
    if (i + 1 < argc)
      line[n++] = ' ';
  }
  line[n++] = '\n';
  write(STDOUT, line, (long)n);
  return 0;
}
