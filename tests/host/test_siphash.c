// Host unit tests for kernel/siphash.c against the reference outputs the
// SipHash authors publish (key 00 01 .. 0f, message 00 01 .. of each length),
// at the lengths that exercise each path: empty, a partial word, exactly one
// word, one word plus a partial, two words, the longest. And: a changed key
// bit or message bit changes the output; an unaligned message hashes the same.
#include <stdint.h>
#include "check.h"
#include "siphash.h"

static const struct {
  size_t len;
  uint64_t out;
} reference[] = {
    {0, 0x726fdb47dd0e0e31ULL},  {1, 0x74f839c593dc67fdULL},  {7, 0xab0200f58b01d137ULL},
    {8, 0x93f5f5799a932462ULL},  {15, 0xa129ca6149be45e5ULL}, {16, 0x3f2acc7f57c29bdbULL},
    {63, 0x958a324ceb064572ULL},
};

static const uint64_t key[2] = {0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};

static void reference_vectors(void) {
  uint8_t msg[64];
  for (int i = 0; i < 64; i++)
    msg[i] = (uint8_t)i;
  for (size_t k = 0; k < sizeof reference / sizeof reference[0]; k++) {
    CHECK(siphash24(key, msg, reference[k].len) == reference[k].out);
    check_context(" [length %zu]", reference[k].len);
  }
}

static void every_bit_matters(void) {
  uint8_t msg[12] = "10.0.2.15:80";
  uint64_t h = siphash24(key, msg, sizeof msg);
  CHECK_EQ(siphash24(key, msg, sizeof msg) == h, 1);   // (and the same twice)
  for (int bit = 0; bit < 8 * (int)sizeof msg; bit++) {
    msg[bit / 8] ^= (uint8_t)(1 << (bit % 8));
    CHECK(siphash24(key, msg, sizeof msg) != h);
    msg[bit / 8] ^= (uint8_t)(1 << (bit % 8));
  }
  for (int bit = 0; bit < 128; bit++) {
    uint64_t k2[2] = {key[0], key[1]};
    k2[bit / 64] ^= 1ULL << (bit % 64);
    CHECK(siphash24(k2, msg, sizeof msg) != h);
  }
}

static void any_alignment(void) {
  uint8_t buf[80];
  for (int i = 0; i < 80; i++)
    buf[i] = (uint8_t)(i * 37 + 1);
  uint64_t h = siphash24(key, buf, 40);
  for (int off = 1; off < 8; off++) {
    uint8_t moved[80];
    memcpy(moved + off, buf, 40);
    CHECK(siphash24(key, moved + off, 40) == h);
    check_context(" [offset %d]", off);
  }
}

CHECK_MAIN_BEGIN("test_siphash")
  RUN_TEST(reference_vectors);
  RUN_TEST(every_bit_matters);
  RUN_TEST(any_alignment);
CHECK_MAIN_END
