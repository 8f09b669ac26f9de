// TCP initial sequence numbers, as RFC 6528 asks: ISN = M + F(4-tuple, key),
// where M is a clock of 4-microsecond ticks and F a keyed hash (SipHash-2-4,
// kernel/siphash.c) under a secret key chosen at boot.
//
// Why: lwIP's own choice (tcp_next_iss without the hook) is a counter that
// starts at 6510 and grows by its timer ticks, so a peer that opens one
// connection can guess the ISN of the next one, anyone's, and with it forge
// segments that the kernel takes as the other client's, or reset that client's
// connection. tests/net/framefuzz.py found this: its random segments completed
// handshakes they had never seen an answer to (the guessed ISN plus one).
// With the hash, connections with different addresses or ports have unrelated
// ISNs, and M keeps a reused 4-tuple's ISN moving forward (TIME-WAIT).
//
// The key comes from the device tree's /chosen rng-seed, which QEMU fills from
// the host's getrandom for every boot. Without one (hw/soc's LiteX tree) the
// key is the boot's timer and cycle counters: fixed in a simulation, a guess
// away on hardware. The kernel says which at boot.
#include "isn.h"
#include "board.h"
#include "hart.h"      // the board
#include "printf.h"
#include "riscv.h"
#include "siphash.h"

static uint64_t key[2];

void isn_init(void) {
  // The seed is hashed down to the key (under two fixed keys), so a seed of
  // any length serves and no byte of it is used twice.
  static const uint64_t fold0[2] = {0x636f72616c2d6973ULL, 0x6e2d6b6579303000ULL};
  static const uint64_t fold1[2] = {0x636f72616c2d6973ULL, 0x6e2d6b6579303100ULL};
  uint64_t clocks[3] = {rdtime(), rdcycle(), board.rng_seed_len};
  if (board.rng_seed_len) {
    key[0] = siphash24(fold0, board.rng_seed, board.rng_seed_len);
    key[1] = siphash24(fold1, board.rng_seed, board.rng_seed_len);
    kprintf("net: TCP sequence numbers keyed from the device tree's rng-seed (RFC 6528)\n");
  } else {
    key[0] = siphash24(fold0, clocks, sizeof clocks);
    key[1] = siphash24(fold1, clocks, sizeof clocks);
    kprintf("net: no rng-seed in the device tree: TCP sequence numbers keyed from the "
            "boot's clocks, which a peer may guess\n");
  }
}

// 4-microsecond ticks of the time counter (RFC 6528's M), without overflow
// for any timebase: a whole number of counter ticks per 4 us when the
// timebase is at least 250 kHz (QEMU's is 10 MHz), else whole 4-us ticks per
// counter tick.
static u32_t clock_4us(void) {
  uint64_t hz = board.timebase_hz;
  return hz >= 250000 ? (u32_t)(rdtime() / (hz / 250000)) : (u32_t)(rdtime() * (250000 / hz));
}

u32_t isn_next(const ip_addr_t *local_ip, u16_t local_port, const ip_addr_t *remote_ip,
               u16_t remote_port) {
  uint8_t tuple[12];
  u32_t l = ip_2_ip4(local_ip)->addr, r = ip_2_ip4(remote_ip)->addr;
  for (int i = 0; i < 4; i++) {
    tuple[i] = (uint8_t)(l >> (8 * i));
    tuple[6 + i] = (uint8_t)(r >> (8 * i));
  }
  tuple[4] = (uint8_t)local_port;
  tuple[5] = (uint8_t)(local_port >> 8);
  tuple[10] = (uint8_t)remote_port;
  tuple[11] = (uint8_t)(remote_port >> 8);
  return clock_4us() + (u32_t)siphash24(key, tuple, sizeof tuple);
}
