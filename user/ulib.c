// The Coral user library, part 1: strings and memory, waiting for a child
// process, and console line input. Its other parts: printf.c (formatted output),
// umalloc.c (the heap) and uthread.c (threads); all sit on the system calls in
// usys.S and are declared in ulib.h. Written for clarity over speed.
#include "ulib.h"
#include "memcopy.h"

// GCC recognises loops that copy or clear memory and may replace them with a
// call to memcpy/memset, which inside memcpy/memset itself would recurse
// forever. This attribute keeps the loops in the functions that implement them.
#define NO_LIBCALL __attribute__((optimize("no-tree-loop-distribute-patterns")))

// ---------------------------------------------------------------------------
// Strings and memory

size_t strlen(const char *s) {
  size_t n = 0;
  while (s[n])
    n++;
  return n;
}

int strcmp(const char *a, const char *b) {
  while (*a && *a == *b) {
    a++;
    b++;
  }
  return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t n) {
  for (; n > 0; n--, a++, b++) {
    if (*a != *b || *a == 0)
      return (unsigned char)*a - (unsigned char)*b;
  }
  return 0;
}

char *strcpy(char *dst, const char *src) {
  char *d = dst;
  while ((*d++ = *src++) != 0)
    ;
  return dst;
}

char *strchr(const char *s, int c) {
  for (;; s++) {
    if (*s == (char)c)
      return (char *)s;
    if (*s == 0)
      return NULL;
  }
}

NO_LIBCALL void *memset(void *dst, int c, size_t n) {
  unsigned char *d = dst;
  while (n-- > 0)
    *d++ = (unsigned char)c;
  return dst;
}

// Word-wise (kernel/memcopy.h): matrixd copies every request's 225 values.
void *memcpy(void *dst, const void *src, size_t n) { return mem_copy(dst, src, n); }

NO_LIBCALL void *memmove(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (d < s) {
    while (n-- > 0)
      *d++ = *s++;
  } else if (d > s) {
    // Overlap with dst above src: copy from the end so no byte is overwritten
    // before it has been read.
    d += n;
    s += n;
    while (n-- > 0)
      *--d = *--s;
  }
  return dst;
}

int memcmp(const void *a, const void *b, size_t n) {
  const unsigned char *x = a, *y = b;
  for (; n > 0; n--, x++, y++) {
    if (*x != *y)
      return *x - *y;
  }
  return 0;
}

long atol(const char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  int neg = 0;
  if (*s == '-' || *s == '+')
    neg = *s++ == '-';
  // Accumulate as unsigned so that the most negative long does not overflow.
  unsigned long v = 0;
  while (*s >= '0' && *s <= '9')
    v = v * 10 + (unsigned long)(*s++ - '0');
  return neg ? (long)(0 - v) : (long)v;
}

int atoi(const char *s) {
  return (int)atol(s);
}

// Shell sort: no recursion, no allocation, and fast enough for the few
// thousand latencies a benchmark sorts once for its percentiles.
void sort_u64(uint64_t *v, long n) {
  for (long gap = n / 2; gap > 0; gap /= 2)
    for (long i = gap; i < n; i++)
      for (long j = i; j >= gap && v[j - gap] > v[j]; j -= gap) {
        uint64_t t = v[j];
        v[j] = v[j - gap];
        v[j - gap] = t;
      }
}

// ---------------------------------------------------------------------------
// Time

// Milliseconds since boot, as the kernel's uptime call counts them, but read
// here: the kernel lets user mode read the time CSR (scounteren) and puts how
// fast it counts in the vvar page. A server asks the time around every request
// (matrixd: a third of its system calls were uptime), and each call is a trap;
// under QEMU every trap also takes the emulator's global lock. Without a
// timebase (bootargs uptime=syscall) it is the call.
long uptime(void) {
  unsigned long hz = ((const struct vvar *)USER_VVAR)->timebase_hz;
  if (hz < 1000)
    return sys_uptime();
  return (long)(rdtime() / (hz / 1000));
}

// ---------------------------------------------------------------------------
// Processes

int wait_for(int pid, int *status, void (*other)(int pid, int status)) {
  for (;;) {
    int st = 0;
    int w = wait(-1, &st);
    if (w < 0)
      return w;
    if (w == pid) {
      if (status)
        *status = st;
      return 0;
    }
    if (other)
      other(w, st);
  }
}

// ---------------------------------------------------------------------------
// Console input

// Terminals send \r for Enter; files and pipes send \n, some \r\n. A \n that
// directly follows a \r that ended the previous line is the same line end and
// is skipped, so \r\n does not produce an extra empty line.
static int last_was_cr;

int readline(char *buf, int max) {
  int n = 0;
  int escape = 0;   // 1: after ESC, 2: inside ESC [ ... (a CSI sequence)
  if (max <= 0)
    return -1;
  for (;;) {
    char c;
    if (read(STDIN, &c, 1) != 1) {
      // End of file (or an error). A partial line still counts as a line.
      if (n == 0) {
        buf[0] = 0;
        return -1;
      }
      write(STDOUT, "\n", 1);
      break;
    }
    if (c == '\n' && last_was_cr) {
      last_was_cr = 0;
      continue;
    }
    last_was_cr = c == '\r';
    if (c == '\r' || c == '\n') {
      write(STDOUT, "\n", 1);
      break;
    }
    if (c == 0x7f || c == 0x08) {   // DEL (what terminals send) or BS
      if (n > 0) {
        n--;
        write(STDOUT, "\b \b", 3);   // back up, blank the character, back up again
      }
      continue;
    }
    if (c == 0x04) {   // Ctrl-D: end of file on an empty line, ignored otherwise
      if (n == 0) {
        buf[0] = 0;
        return -1;
      }
      continue;
    }
    // Arrow and function keys send escape sequences (ESC [ A for up, ...).
    // Echoed, they would move the cursor away from the line: drop the whole
    // sequence, ESC, '[' and all, up to its final letter.
    if (c == 0x1b) {
      escape = 1;
      continue;
    }
    if (escape == 1) {
      escape = c == '[' ? 2 : 0;   // ESC [ starts a sequence; ESC x is just two keys
      if (escape)
        continue;
    } else if (escape == 2) {
      if (c >= 0x40 && c <= 0x7e)
        escape = 0;   // the final byte
      continue;
    }
    // Other control characters would confuse the screen as well.
    if ((unsigned char)c < 0x20 && c != '\t')
      continue;
    if (n < max - 1) {
      buf[n++] = c;
      write(STDOUT, &c, 1);
    }
    // A full buffer drops further characters without echo, so what is on the
    // screen is exactly what the caller gets.
  }
  buf[n] = 0;
  return n;
}
