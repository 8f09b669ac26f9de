// The Coral user library: strings, formatted output, process helpers, console
// line input, a heap and user threads.
// Written for clarity over speed; everything sits on the system calls in
// usys.S.
#include "ulib.h"

// GCC recognises loops that copy or clear memory and may replace them with a
// call to memcpy/memset, which inside memcpy/memset itself would recurse
// forever. This attribute keeps the loops in the functions that implement them.
#define NO_LIBCALL __attribute__((optimize("no-tree-loop-distribute-patterns")))

// ---------------------------------------------------------------------------
// Strings and memory

size_t strlen(const char *s)
{
  size_t n = 0;
  while (s[n])
    n++;
  return n;
}

int strcmp(const char *a, const char *b)
{
  while (*a && *a == *b) {
    a++;
    b++;
  }
  return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
  for (; n > 0; n--, a++, b++) {
    if (*a != *b || *a == 0)
      return (unsigned char)*a - (unsigned char)*b;
  }
  return 0;
}

char *strcpy(char *dst, const char *src)
{
  char *d = dst;
  while ((*d++ = *src++) != 0)
    ;
  return dst;
}

char *strchr(const char *s, int c)
{
  for (;; s++) {
    if (*s == (char)c)
      return (char *)s;
    if (*s == 0)
      return NULL;
  }
}

NO_LIBCALL void *memset(void *dst, int c, size_t n)
{
  unsigned char *d = dst;
  while (n-- > 0)
    *d++ = (unsigned char)c;
  return dst;
}

NO_LIBCALL void *memcpy(void *dst, const void *src, size_t n)
{
  unsigned char *d = dst;
  const unsigned char *s = src;
  while (n-- > 0)
    *d++ = *s++;
  return dst;
}

NO_LIBCALL void *memmove(void *dst, const void *src, size_t n)
{
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

int memcmp(const void *a, const void *b, size_t n)
{
  const unsigned char *x = a, *y = b;
  for (; n > 0; n--, x++, y++) {
    if (*x != *y)
      return *x - *y;
  }
  return 0;
}

long atol(const char *s)
{
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

int atoi(const char *s)
{
  return (int)atol(s);
}

// ---------------------------------------------------------------------------
// Formatted output
//
// The formatter writes into a struct out. For printf/fprintf the buffer lives
// on the caller's stack and is written to the descriptor in one write() at
// the end (or each time it fills up), so a whole line reaches the console at
// once. For snprintf it is the caller's string and extra output is dropped.

struct out {
  int fd;       // where to flush, or -1 for a string
  char *buf;
  size_t cap;   // bytes usable in buf
  size_t len;   // bytes in buf now
  int total;    // characters produced, including any that were dropped
};

// write() may in principle take fewer bytes than asked; keep going until all
// are written or the descriptor reports an error.
static void write_all(int fd, const char *p, size_t n)
{
  while (n > 0) {
    long r = write(fd, p, (long)n);
    if (r <= 0)
      return;
    p += r;
    n -= (size_t)r;
  }
}

static void out_flush(struct out *o)
{
  if (o->fd >= 0 && o->len > 0)
    write_all(o->fd, o->buf, o->len);
  o->len = 0;
}

static void out_char(struct out *o, char c)
{
  o->total++;
  if (o->len == o->cap) {
    if (o->fd < 0)
      return;   // snprintf: the string is full
    out_flush(o);
  }
  o->buf[o->len++] = c;
}

static void out_pad(struct out *o, char c, int n)
{
  for (; n > 0; n--)
    out_char(o, c);
}

// One field: prefix ("-", "0x" or ""), then body, padded to width.
// Zero padding goes between the prefix and the body ("-0042"), space padding
// before the prefix ("  -42") or, left-justified, after the body.
static void out_field(struct out *o, const char *prefix, const char *body, int blen, int width,
                      int zero, int left)
{
  int plen = (int)strlen(prefix);
  int pad = width - plen - blen;
  if (!left && !zero)
    out_pad(o, ' ', pad);
  for (int i = 0; i < plen; i++)
    out_char(o, prefix[i]);
  if (!left && zero)
    out_pad(o, '0', pad);
  for (int i = 0; i < blen; i++)
    out_char(o, body[i]);
  if (left)
    out_pad(o, ' ', pad);
}

static void out_unsigned(struct out *o, const char *prefix, unsigned long v, unsigned base,
                         int upper, int width, int zero, int left)
{
  const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  char tmp[24];   // 2^64 needs 20 decimal digits, 16 hex digits
  int n = sizeof tmp;
  do {
    tmp[--n] = digits[v % base];
    v /= base;
  } while (v != 0);
  out_field(o, prefix, tmp + n, (int)sizeof tmp - n, width, zero, left);
}

static int format(struct out *o, const char *fmt, va_list ap)
{
  for (; *fmt; fmt++) {
    if (*fmt != '%') {
      out_char(o, *fmt);
      continue;
    }
    const char *start = fmt++;
    int zero = 0, left = 0, width = 0, lng = 0;
    for (;; fmt++) {
      if (*fmt == '0')
        zero = 1;
      else if (*fmt == '-')
        left = 1;
      else
        break;
    }
    while (*fmt >= '0' && *fmt <= '9')
      width = width * 10 + (*fmt++ - '0');
    while (*fmt == 'l' || *fmt == 'z') {   // long, long long and size_t are all 64 bits
      lng = 1;
      fmt++;
    }
    if (left)
      zero = 0;   // "-" wins over "0", as in C

    switch (*fmt) {
    case 'd':
    case 'i': {
      long v = lng ? va_arg(ap, long) : va_arg(ap, int);
      // Negate as unsigned: -LONG_MIN does not fit in a long.
      unsigned long mag = v < 0 ? 0 - (unsigned long)v : (unsigned long)v;
      out_unsigned(o, v < 0 ? "-" : "", mag, 10, 0, width, zero, left);
      break;
    }
    case 'u':
      out_unsigned(o, "", lng ? va_arg(ap, unsigned long) : va_arg(ap, unsigned), 10, 0, width,
                   zero, left);
      break;
    case 'x':
    case 'X':
      out_unsigned(o, "", lng ? va_arg(ap, unsigned long) : va_arg(ap, unsigned), 16,
                   *fmt == 'X', width, zero, left);
      break;
    case 'p':
      out_unsigned(o, "0x", (unsigned long)va_arg(ap, void *), 16, 0, width, zero, left);
      break;
    case 's': {
      const char *s = va_arg(ap, const char *);
      if (s == NULL)
        s = "(null)";
      out_field(o, "", s, (int)strlen(s), width, 0, left);
      break;
    }
    case 'c': {
      char c = (char)va_arg(ap, int);
      out_field(o, "", &c, 1, width, 0, left);
      break;
    }
    case '%':
      out_char(o, '%');
      break;
    default:
      // Unknown conversion (or the string ended after '%'): print it as
      // written, so the mistake is visible in the output.
      for (const char *p = start; p <= fmt && *p; p++)
        out_char(o, *p);
      if (*fmt == 0)
        return o->total;
      break;
    }
  }
  return o->total;
}

int vfprintf(int fd, const char *fmt, va_list ap)
{
  char buf[PRINTF_BUF];
  struct out o = {.fd = fd, .buf = buf, .cap = sizeof buf};
  int n = format(&o, fmt, ap);
  out_flush(&o);
  return n;
}

int fprintf(int fd, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vfprintf(fd, fmt, ap);
  va_end(ap);
  return n;
}

int printf(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vfprintf(STDOUT, fmt, ap);
  va_end(ap);
  return n;
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
  // Keep one byte for the terminating NUL.
  struct out o = {.fd = -1, .buf = buf, .cap = size > 0 ? size - 1 : 0};
  int n = format(&o, fmt, ap);
  if (size > 0)
    buf[o.len] = 0;
  return n;
}

int snprintf(char *buf, size_t size, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, size, fmt, ap);
  va_end(ap);
  return n;
}

int puts(const char *s)
{
  return printf("%s\n", s);
}

const char *errname(long err)
{
  switch (-err) {
  case EPERM: return "EPERM";
  case ENOENT: return "ENOENT";
  case ESRCH: return "ESRCH";
  case EINTR: return "EINTR";
  case EIO: return "EIO";
  case E2BIG: return "E2BIG";
  case ENOEXEC: return "ENOEXEC";
  case EBADF: return "EBADF";
  case ECHILD: return "ECHILD";
  case EAGAIN: return "EAGAIN";
  case ENOMEM: return "ENOMEM";
  case EFAULT: return "EFAULT";
  case ENODEV: return "ENODEV";
  case EINVAL: return "EINVAL";
  case EMFILE: return "EMFILE";
  case EPIPE: return "EPIPE";
  case ENOTSOCK: return "ENOTSOCK";
  case EADDRINUSE: return "EADDRINUSE";
  case ECONNABORTED: return "ECONNABORTED";
  case ECONNRESET: return "ECONNRESET";
  case EISCONN: return "EISCONN";
  case ENOTCONN: return "ENOTCONN";
  case ENAMETOOLONG: return "ENAMETOOLONG";
  case ENOSYS: return "ENOSYS";
  case EINPROGRESS: return "EINPROGRESS";
  default: return "";
  }
}

// ---------------------------------------------------------------------------
// Processes

int wait_for(int pid, int *status, void (*other)(int pid, int status))
{
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

int readline(char *buf, int max)
{
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

// ---------------------------------------------------------------------------
// Heap: a first-fit free list in address order, on memory obtained with brk.
//
// Every block, free or allocated, starts with a 16-byte header; sizes are
// counted in 16-byte units including the header, so every pointer handed out
// is 16-byte aligned, as the RISC-V psABI expects of malloc. Free blocks form
// a circular list sorted by address; free() merges a block with free
// neighbours on either side, so the heap does not crumble into small pieces.
// Memory is never returned to the kernel.

struct header {
  struct header *next;   // next free block (only meaningful while free)
  size_t units;          // size of this block in headers, including this one
} __attribute__((aligned(16)));

#define UNIT sizeof(struct header)
#define GROW_UNITS (4096 / UNIT)   // ask the kernel for at least a page at a time

static struct header base;     // a zero-size block that anchors the list
static struct header *freep;   // where the last search stopped

// Extends the heap by at least `units` and puts the new block on the free list.
static void free_unlocked(void *ptr);

static struct header *morecore(size_t units)
{
  if (units < GROW_UNITS)
    units = GROW_UNITS;
  long cur = brk(0);
  if (cur < 0)
    return NULL;
  // The break need not be aligned (the kernel starts it at the end of the
  // program image), and somebody else may have moved it since last time.
  uintptr_t start = ((uintptr_t)cur + UNIT - 1) & ~(uintptr_t)(UNIT - 1);
  uintptr_t end = start + units * UNIT;
  long r = brk((void *)end);
  if (r < 0 || (uintptr_t)r != end)
    return NULL;
  struct header *h = (struct header *)start;
  h->units = units;
  free_unlocked(h + 1);             // the caller (malloc) holds the lock
  return freep;
}

static void *malloc_unlocked(size_t n)
{
  // Nothing larger than the whole heap area can succeed, and the check keeps
  // the unit computation below from overflowing.
  if (n > USER_HEAP_MAX)
    return NULL;
  if (n == 0)
    n = 1;   // still a distinct pointer with room behind it
  size_t units = (n + UNIT - 1) / UNIT + 1;
  if (freep == NULL) {
    base.next = &base;
    base.units = 0;
    freep = &base;
  }
  struct header *prev = freep;
  for (struct header *p = prev->next;; prev = p, p = p->next) {
    if (p->units >= units) {
      if (p->units == units) {
        prev->next = p->next;
      } else {
        // Hand out the tail of the block: the free part keeps its place in
        // the list and only its size changes.
        p->units -= units;
        p += p->units;
        p->units = units;
      }
      freep = prev;
      return p + 1;
    }
    if (p == freep) {   // went all the way round: nothing fits
      p = morecore(units);
      if (p == NULL)
        return NULL;
    }
  }
}

static void free_unlocked(void *ptr)
{
  if (ptr == NULL)
    return;
  struct header *bp = (struct header *)ptr - 1;
  // Find the free block p after which bp belongs in address order.
  struct header *p = freep;
  while (!(bp > p && bp < p->next)) {
    // p is the highest free block: bp goes after it (above everything) or
    // before its successor, the lowest (below everything).
    if (p >= p->next && (bp > p || bp < p->next))
      break;
    p = p->next;
  }
  if (bp + bp->units == p->next) {   // merge with the block above
    bp->units += p->next->units;
    bp->next = p->next->next;
  } else {
    bp->next = p->next;
  }
  if (p + p->units == bp) {   // merge with the block below
    p->units += bp->units;
    p->next = bp->next;
  } else {
    p->next = bp;
  }
  freep = p;
}

void *calloc(size_t count, size_t size)
{
  if (size != 0 && count > SIZE_MAX / size)
    return NULL;   // count * size would overflow
  void *p = malloc(count * size);
  if (p != NULL)
    memset(p, 0, count * size);
  return p;
}

void *realloc(void *ptr, size_t n)
{
  if (ptr == NULL)
    return malloc(n);
  if (n == 0) {
    free(ptr);
    return NULL;
  }
  struct header *h = (struct header *)ptr - 1;
  size_t have = (h->units - 1) * UNIT;
  if (n <= have)
    return ptr;   // it already fits; shrinking in place is not worth it here
  void *q = malloc(n);
  if (q == NULL)
    return NULL;   // the old block stays valid, as C requires
  memcpy(q, ptr, have);
  free(ptr);
  return q;
}

// The allocator is shared by every thread of the process (alloc_cpu threads,
// the executor growing its slot table on any of them): one spinlock around it.
static volatile int malloc_lock;

void *malloc(size_t n)
{
  while (__atomic_exchange_n(&malloc_lock, 1, __ATOMIC_ACQUIRE))
    ;
  void *p = malloc_unlocked(n);
  __atomic_store_n(&malloc_lock, 0, __ATOMIC_RELEASE);
  return p;
}

void free(void *ptr)
{
  while (__atomic_exchange_n(&malloc_lock, 1, __ATOMIC_ACQUIRE))
    ;
  free_unlocked(ptr);
  __atomic_store_n(&malloc_lock, 0, __ATOMIC_RELEASE);
}

// ---- threads ----
#define UTHREAD_STACK (16 * 1024)

struct uthread_start {
  int (*fn)(void *);
  void *arg;
};

static void *uthread_stacks[MAXTHREADS_ABI];   // by tid, freed by uthread_join

// First code of a new thread: the kernel starts it with a0 = its start record,
// which sits at the top of its own stack.
static void uthread_entry(void *start) {
  struct uthread_start *s = start;
  thread_exit(s->fn(s->arg));
}

int uthread_create(int (*fn)(void *), void *arg) {
  char *stack = malloc(UTHREAD_STACK);
  if (!stack)
    return -ENOMEM;
  struct uthread_start *s = (struct uthread_start *)(stack + UTHREAD_STACK) - 1;
  s->fn = fn;
  s->arg = arg;
  uintptr_t top = ((uintptr_t)s) & ~(uintptr_t)15;
  int tid = thread_create(uthread_entry, s, (void *)top);
  if (tid < 0) {
    free(stack);
    return tid;
  }
  uthread_stacks[tid] = stack;
  return tid;
}

int uthread_join(int tid, int *status) {
  int r = thread_join(tid, status);
  if (r == 0 && tid > 0 && tid < MAXTHREADS_ABI) {
    free(uthread_stacks[tid]);
    uthread_stacks[tid] = 0;
  }
  return r;
}
