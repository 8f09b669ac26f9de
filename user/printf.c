// Formatted output for user programs (ulib.h): printf, fprintf, snprintf and
// their v-forms, puts, and errname.
//
// The formatter writes into a struct out. For printf/fprintf the buffer lives
// on the caller's stack and is written to the descriptor in one write() at
// the end (or each time it fills up), so a whole line reaches the console at
// once. For snprintf it is the caller's string and extra output is dropped.
#include "ulib.h"

struct out {
  int fd;       // where to flush, or -1 for a string
  char *buf;
  size_t cap;   // bytes usable in buf
  size_t len;   // bytes in buf now
  int total;    // characters produced, including any that were dropped
};

// write() may in principle take fewer bytes than asked; keep going until all
// are written or the descriptor reports an error.
static void write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    long r = write(fd, p, (long)n);
    if (r <= 0)
      return;
    p += r;
    n -= (size_t)r;
  }
}

static void out_flush(struct out *o) {
  if (o->fd >= 0 && o->len > 0)
    write_all(o->fd, o->buf, o->len);
  o->len = 0;
}

static void out_char(struct out *o, char c) {
  o->total++;
  if (o->len == o->cap) {
    if (o->fd < 0)
      return;   // snprintf: the string is full
    out_flush(o);
  }
  o->buf[o->len++] = c;
}

static void out_pad(struct out *o, char c, int n) {
  for (; n > 0; n--)
    out_char(o, c);
}

// One field: prefix ("-", "0x" or ""), then body, padded to width.
// Zero padding goes between the prefix and the body ("-0042"), space padding
// before the prefix ("  -42") or, left-justified, after the body.
static void out_field(struct out *o, const char *prefix, const char *body, int blen, int width,
                      int zero, int left) {
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
                         int upper, int width, int zero, int left) {
  const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  char tmp[24];   // 2^64 needs 20 decimal digits, 16 hex digits
  int n = sizeof tmp;
  do {
    tmp[--n] = digits[v % base];
    v /= base;
  } while (v != 0);
  out_field(o, prefix, tmp + n, (int)sizeof tmp - n, width, zero, left);
}

static int format(struct out *o, const char *fmt, va_list ap) {
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

int vfprintf(int fd, const char *fmt, va_list ap) {
  char buf[PRINTF_BUF];
  struct out o = {.fd = fd, .buf = buf, .cap = sizeof buf};
  int n = format(&o, fmt, ap);
  out_flush(&o);
  return n;
}

int fprintf(int fd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vfprintf(fd, fmt, ap);
  va_end(ap);
  return n;
}

int printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vfprintf(STDOUT, fmt, ap);
  va_end(ap);
  return n;
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap) {
  // Keep one byte for the terminating NUL.
  struct out o = {.fd = -1, .buf = buf, .cap = size > 0 ? size - 1 : 0};
  int n = format(&o, fmt, ap);
  if (size > 0)
    buf[o.len] = 0;
  return n;
}

int snprintf(char *buf, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, size, fmt, ap);
  va_end(ap);
  return n;
}

int puts(const char *s) {
  return printf("%s\n", s);
}

const char *errname(long err) {
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
  case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
  case ENETUNREACH: return "ENETUNREACH";
  case ETIMEDOUT: return "ETIMEDOUT";
  case ECONNREFUSED: return "ECONNREFUSED";
  default: return "";
  }
}
