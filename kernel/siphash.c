// SipHash-2-4, written from the algorithm's description in its paper
// (section 2): four 64-bit words of state, two rounds per 8-byte message word,
// four after the last. Portable C: the message is read a byte at a time, so
// any alignment works, and the host test builds this file unchanged.
#include "siphash.h"

static inline uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

struct sip {
  uint64_t v0, v1, v2, v3;
};

static void sip_round(struct sip *s) {
  s->v0 += s->v1;
  s->v1 = rotl(s->v1, 13) ^ s->v0;
  s->v0 = rotl(s->v0, 32);
  s->v2 += s->v3;
  s->v3 = rotl(s->v3, 16) ^ s->v2;
  s->v0 += s->v3;
  s->v3 = rotl(s->v3, 21) ^ s->v0;
  s->v2 += s->v1;
  s->v1 = rotl(s->v1, 17) ^ s->v2;
  s->v2 = rotl(s->v2, 32);
}

// Two rounds for each message word m (c = 2 in SipHash-c-d).
static void absorb(struct sip *s, uint64_t m) {
  s->v3 ^= m;
  sip_round(s);
  sip_round(s);
  s->v0 ^= m;
}

uint64_t siphash24(const uint64_t key[2], const void *msg, size_t len) {
  const uint8_t *p = msg;
  // The constants are "somepseudorandomlygeneratedbytes" in ASCII.
  struct sip s = {key[0] ^ 0x736f6d6570736575ULL, key[1] ^ 0x646f72616e646f6dULL,
                  key[0] ^ 0x6c7967656e657261ULL, key[1] ^ 0x7465646279746573ULL};
  size_t whole = len & ~(size_t)7;
  for (size_t i = 0; i < whole; i += 8) {
    uint64_t m = 0;
    for (int j = 7; j >= 0; j--)
      m = m << 8 | p[i + j];
    absorb(&s, m);
  }
  // The last word: the remaining 0-7 bytes, and the length's low byte on top.
  uint64_t last = (uint64_t)(len & 0xff) << 56;
  for (size_t j = 0; j < len - whole; j++)
    last |= (uint64_t)p[whole + j] << (8 * j);
  absorb(&s, last);
  // Finalization: four rounds (d = 4).
  s.v2 ^= 0xff;
  for (int r = 0; r < 4; r++)
    sip_round(&s);
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}
