// The initrd: a read-only archive of user programs. See initrd.h for the format.
//
// Design: initrd_open() validates the entire archive once, at boot, and only
// then publishes it. After that every entry is known to be good (name
// terminated, bytes inside the blob, names unique), so initrd_find() and
// initrd_name() are plain reads with no further checks and no failure modes
// other than "not there". Validation never forms a sum that could wrap: a
// range [off, off + n) is checked as off <= len && n <= len - off.
//
// Fields are decoded byte by byte (little-endian) rather than through a struct,
// so the blob may have any alignment and the code does not depend on the
// machine's byte order or on struct padding.
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include "klib.h"
#include "abi.h"
#include "initrd.h"

// Byte offsets inside an entry.
#define ENT_NAME 0
#define ENT_OFFSET 32
#define ENT_SIZE 40

// The published archive; count == 0 when none is open.
static const uint8_t *rd_blob;
static uint32_t rd_count;

static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p) {
  return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

// Does [off, off + n) lie inside [0, limit)? Never forms off + n.
static bool inside(uint64_t off, uint64_t n, uint64_t limit) {
  return off <= limit && n <= limit - off;
}

// Entry i of an archive whose header has been checked.
static const uint8_t *entry(const uint8_t *blob, uint32_t i) {
  return blob + INITRD_HDR_SIZE + (size_t)i * INITRD_ENTRY_SIZE;
}

// Header: magic, reserved word, and an entry table that fits in len.
// Returns the entry count, or -1.
static int64_t check_header(const uint8_t *b, size_t len) {
  if (len < INITRD_HDR_SIZE || memcmp(b, INITRD_MAGIC, 8) != 0 || get32(b + 12) != 0)
    return -1;
  uint32_t count = get32(b + 8);
  if (count > INITRD_MAX_FILES)
    return -1;
  if (!inside(INITRD_HDR_SIZE, (uint64_t)count * INITRD_ENTRY_SIZE, len))
    return -1;
  return count;
}

// One entry: a non-empty name terminated inside its field, and data that is
// 8-byte aligned, after the entry table and inside the blob.
static bool check_entry(const uint8_t *e, uint64_t table_end, size_t len) {
  const char *name = (const char *)e + ENT_NAME;
  size_t n = strnlen(name, INITRD_NAME_MAX);
  uint64_t off = get64(e + ENT_OFFSET), size = get64(e + ENT_SIZE);

  if (n == 0 || n == INITRD_NAME_MAX)
    return false;
  if (off % 8 != 0 || off < table_end)
    return false;
  return inside(off, size, len);
}

int initrd_open(const void *blob, size_t len) {
  const uint8_t *b = blob;

  rd_blob = NULL;
  rd_count = 0;
  if (b == NULL)
    return -EINVAL;
  int64_t count = check_header(b, len);
  if (count < 0)
    return -EINVAL;
  uint64_t table_end = INITRD_HDR_SIZE + (uint64_t)count * INITRD_ENTRY_SIZE;
  for (uint32_t i = 0; i < count; i++) {
    if (!check_entry(entry(b, i), table_end, len))
      return -EINVAL;
    // Names are terminated from here on: entries 0..i have passed.
    for (uint32_t j = 0; j < i; j++)
      if (strcmp((const char *)entry(b, j), (const char *)entry(b, i)) == 0)
        return -EINVAL;
  }
  rd_blob = b;
  rd_count = (uint32_t)count;
  return 0;
}

int initrd_find(const char *name, const void **data, size_t *size) {
  if (name == NULL)
    return -ENOENT;
  for (uint32_t i = 0; i < rd_count; i++) {
    const uint8_t *e = entry(rd_blob, i);
    if (strcmp((const char *)e + ENT_NAME, name) != 0)
      continue;
    if (data != NULL)
      *data = rd_blob + get64(e + ENT_OFFSET);
    if (size != NULL)
      *size = (size_t)get64(e + ENT_SIZE);
    return 0;
  }
  return -ENOENT;
}

int initrd_count(void) {
  return (int)rd_count;
}

const char *initrd_name(int i) {
  if (i < 0 || (uint32_t)i >= rd_count)
    return NULL;
  return (const char *)entry(rd_blob, (uint32_t)i) + ENT_NAME;
}
