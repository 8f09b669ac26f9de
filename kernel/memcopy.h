// memcpy's body, shared by the kernel (kernel/klib.c) and the user library
// (user/ulib.c). Every byte a matrixd request moves between lwIP, the kernel
// and the program goes through one of the two (make bench-cost: the byte loop
// they had cost about 5 instructions a byte, 27,000 a request, a third of the
// request's matrix work), and those buffers are seldom 8-byte aligned with each
// other: lwIP's payloads start after 54 bytes of headers.
//
// So: bytes up to an 8-byte boundary of the destination, then 8 bytes per
// store. A source at the same offset is read a word at a time; one at another
// offset is read as aligned words shifted together (little-endian), never as
// misaligned loads, which some harts (a Rocket core) trap on and leave to
// OpenSBI to emulate, hundreds of instructions each. An aligned word read can
// include bytes just before the source (never another page: an aligned word
// sits in one page); the loop stops while the next word still lies entirely
// inside the source, so nothing past its end is read. The rest goes byte by
// byte (at most 15 bytes).
#ifndef MEMCOPY_H
#define MEMCOPY_H
#include <stddef.h>
#include <stdint.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "mem_copy shifts words little-endian");

// A word that may alias any object (the buffers are char arrays).
typedef uint64_t __attribute__((may_alias)) mc_word;

// GCC recognises the byte loops as memcpy and would call memcpy from inside
// memcpy: the attribute keeps the loops (the kernel also builds with
// -fno-tree-loop-distribute-patterns; the user library does not).
static inline __attribute__((optimize("no-tree-loop-distribute-patterns")))
void *mem_copy(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (n >= 16) {
    for (; (uintptr_t)d & 7; n--)
      *d++ = *s++;
    unsigned off = (uintptr_t)s & 7;
    if (off == 0) {
      for (; n >= 8; n -= 8, d += 8, s += 8)
        *(mc_word *)(void *)d = *(const mc_word *)(const void *)s;
    } else {
      const mc_word *sw = (const mc_word *)(const void *)(s - off);
      unsigned rs = 8 * off, ls = 64 - rs;
      uint64_t lo = *sw++;
      // The word after s's holds s[8 - off .. 15 - off]: inside while n >= 16.
      for (; n >= 16; n -= 8, d += 8, s += 8) {
        uint64_t hi = *sw++;
        *(mc_word *)(void *)d = (lo >> rs) | (hi << ls);
        lo = hi;
      }
    }
  }
  while (n--)
    *d++ = *s++;
  return dst;
}

#endif
