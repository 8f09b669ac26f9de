// The few libc functions the kernel needs, written plainly. The compiler may
// emit calls to memset/memcpy on its own, so these names must exist.
#include "klib.h"
#include "memcopy.h"

void *memset(void *dst, int c, size_t n) {
  unsigned char *d = dst;
  // Bytes up to an 8-byte boundary, then 8 bytes per store (kzalloc of a
  // system call's worker clears ~200 bytes on every call that waits).
  for (; n && ((uintptr_t)d & 7); n--)
    *d++ = (unsigned char)c;
  uint64_t w = 0x0101010101010101ULL * (unsigned char)c;
  for (; n >= 8; n -= 8, d += 8)
    *(uint64_t *)(void *)d = w;
  while (n--)
    *d++ = (unsigned char)c;
  return dst;
}

void *memcpy(void *dst, const void *src, size_t n) { return mem_copy(dst, src, n); }

void *memmove(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (d < s || d >= s + n)
    return memcpy(dst, src, n);
  while (n--)
    d[n] = s[n];
  return dst;
}

int memcmp(const void *a, const void *b, size_t n) {
  const unsigned char *x = a, *y = b;
  for (; n; n--, x++, y++)
    if (*x != *y)
      return *x - *y;
  return 0;
}

size_t strlen(const char *s) {
  size_t n = 0;
  while (s[n])
    n++;
  return n;
}

size_t strnlen(const char *s, size_t max) {
  size_t n = 0;
  while (n < max && s[n])
    n++;
  return n;
}

int strcmp(const char *a, const char *b) {
  while (*a && *a == *b)
    a++, b++;
  return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t n) {
  for (; n; n--, a++, b++) {
    if (*a != *b)
      return (unsigned char)*a - (unsigned char)*b;
    if (!*a)
      return 0;
  }
  return 0;
}

char *strstr(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (; *hay; hay++)
    if (strncmp(hay, needle, n) == 0)
      return (char *)hay;
  return n ? 0 : (char *)hay;
}
