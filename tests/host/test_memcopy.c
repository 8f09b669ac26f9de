// Host unit tests for kernel/memcopy.h, the memcpy body the kernel and the user
// library share. Every destination and source offset within a word (0..7 each),
// every length up to 80 and some page-sized ones: the copy must equal a byte
// loop's, touch no byte outside the destination, and read nothing outside the
// source (each source is a malloc'd block of exactly the bytes it covers, so
// ASan reports a read past its end).
#include <stdint.h>
#include "check.h"
#include "memcopy.h"

static const size_t lengths[] = {4093, 4096, 4103, 8191};

// One copy: dst offset doff, src offset soff, n bytes. Returns 0 if right.
static int one(size_t doff, size_t soff, size_t n) {
  unsigned char *src = malloc(soff + n + 1);   // +1: malloc(0) may return NULL
  unsigned char *dst = malloc(doff + n + 16);
  if (!src || !dst) {
    free(src);
    free(dst);
    return -1;
  }
  for (size_t i = 0; i < soff + n; i++)
    src[i] = (unsigned char)(i * 131 + 7);
  memset(dst, 0xA5, doff + n + 16);
  void *r = mem_copy(dst + doff, src + soff, n);
  int bad = r != dst + doff;
  for (size_t i = 0; i < doff + n + 16; i++) {
    unsigned char want = i >= doff && i < doff + n ? src[soff + i - doff] : 0xA5;
    bad |= dst[i] != want;
  }
  free(src);
  free(dst);
  return bad;
}

static void every_offset_and_short_length(void) {
  char a[4] = "abc", b[4];
  CHECK(mem_copy(b, a, sizeof a) == b && strcmp(b, "abc") == 0);
  for (size_t doff = 0; doff < 8; doff++)
    for (size_t soff = 0; soff < 8; soff++)
      for (size_t n = 0; n <= 80; n++)
        if (one(doff, soff, n)) {
          CHECK_EQ(one(doff, soff, n), 0);   // 1: differs from the byte loop
          check_context(" [dst offset %zu, src offset %zu, %zu bytes]", doff, soff, n);
          return;
        }
}

static void page_sized(void) {
  for (size_t doff = 0; doff < 8; doff++)
    for (size_t soff = 0; soff < 8; soff++)
      for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; k++)
        if (one(doff, soff, lengths[k])) {
          CHECK_EQ(one(doff, soff, lengths[k]), 0);
          check_context(" [dst offset %zu, src offset %zu, %zu bytes]", doff, soff, lengths[k]);
          return;
        }
}

CHECK_MAIN_BEGIN("test_memcopy")
  RUN_TEST(every_offset_and_short_length);
  RUN_TEST(page_sized);
CHECK_MAIN_END
