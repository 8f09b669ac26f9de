// The virtio-net driver on its own, without an IP stack: ARP requests to QEMU's
// user-mode network, which answers for its gateway 10.0.2.2. The test runs have a
// card, so a missing card fails. Every received frame is given back, whether it
// is the awaited reply or something else that arrived meanwhile.
#include "ktest.h"
#include "hart.h"
#include "kco.h"
#include "klib.h"
#include "riscv.h"
#include "timer.h"
#include "virtio_net.h"
#include "waitq.h"

#define ETH_ALEN 6
#define ETH_HDR_LEN 14
#define ETH_MIN_FRAME 60          // shortest Ethernet frame without its FCS
#define ETHERTYPE_ARP 0x0806
#define ETHERTYPE_IPV4 0x0800
// ARP for IPv4 over Ethernet (RFC 826): offsets within the frame
#define ARP_HTYPE (ETH_HDR_LEN + 0)
#define ARP_PTYPE (ETH_HDR_LEN + 2)
#define ARP_HLEN (ETH_HDR_LEN + 4)
#define ARP_PLEN (ETH_HDR_LEN + 5)
#define ARP_OPER (ETH_HDR_LEN + 6)
#define ARP_SHA (ETH_HDR_LEN + 8)
#define ARP_SPA (ETH_HDR_LEN + 14)
#define ARP_THA (ETH_HDR_LEN + 18)
#define ARP_TPA (ETH_HDR_LEN + 24)
#define ARP_FRAME_LEN (ETH_HDR_LEN + 28)
#define ARP_HTYPE_ETHER 1
#define ARP_REQUEST 1
#define ARP_REPLY 2

#define FIRST_TIMEOUT_MS 2000
// Enough round trips to wrap both rings (128 entries each) more than twice.
#define ROUNDS 300
#define ROUNDS_TIMEOUT_MS 10000

static const uint8_t qemu_mac[ETH_ALEN] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t guest_ip[4] = { 10, 0, 2, 15 };
static const uint8_t gateway_ip[4] = { 10, 0, 2, 2 };

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static void build_request(uint8_t *f, const uint8_t mac[ETH_ALEN]) {
  memset(f, 0, ETH_MIN_FRAME);
  memset(f, 0xff, ETH_ALEN);                       // to everyone
  memcpy(f + ETH_ALEN, mac, ETH_ALEN);
  put16(f + 2 * ETH_ALEN, ETHERTYPE_ARP);
  put16(f + ARP_HTYPE, ARP_HTYPE_ETHER);
  put16(f + ARP_PTYPE, ETHERTYPE_IPV4);
  f[ARP_HLEN] = ETH_ALEN;
  f[ARP_PLEN] = 4;
  put16(f + ARP_OPER, ARP_REQUEST);
  memcpy(f + ARP_SHA, mac, ETH_ALEN);
  memcpy(f + ARP_SPA, guest_ip, 4);                // tha stays zero: unknown
  memcpy(f + ARP_TPA, gateway_ip, 4);
}

// The gateway telling us its address: "10.0.2.2 is at ..., to mac at 10.0.2.15".
static int is_gateway_reply(const uint8_t *f, size_t len, const uint8_t mac[ETH_ALEN]) {
  return len >= ARP_FRAME_LEN && get16(f + 2 * ETH_ALEN) == ETHERTYPE_ARP &&
         memcmp(f, mac, ETH_ALEN) == 0 && get16(f + ARP_OPER) == ARP_REPLY &&
         memcmp(f + ARP_SPA, gateway_ip, 4) == 0 && memcmp(f + ARP_THA, mac, ETH_ALEN) == 0 &&
         memcmp(f + ARP_TPA, guest_ip, 4) == 0;
}

// Send one request and wait for the gateway's reply until `deadline` (the caller
// has a timer waking us then). Returns 0, or what went wrong.
static const char *arp_exchange(const uint8_t mac[ETH_ALEN], uint64_t deadline) {
  uint8_t *buf;
  // All transmit buffers may be in flight (the card interrupts for their
  // return only while frames wait in its backlog: look again in a while).
  while (!(buf = vnet_tx_buf()) && rdtime() < deadline)
    kco_sleep_ms(1);
  if (!buf)
    return "no transmit buffer";
  build_request(buf, mac);
  vnet_tx_submit(buf, ETH_MIN_FRAME);
  for (;;) {
    uint8_t *frame = 0;
    size_t len = 0;
    KCO_WAIT_UNTIL(vnet_rx_waitq(), (frame = vnet_rx_look(&len)) != 0 || rdtime() >= deadline);
    if (!frame)
      return "no ARP reply from 10.0.2.2";
    int ok = is_gateway_reply(frame, len, mac);
    vnet_rx_release(frame);
    if (ok)
      return 0;
  }
}

KTEST(vnet_arp_exchanges_survive_ring_wrap) {
  KREQUIRE(vnet_present());
  uint8_t mac[ETH_ALEN];
  vnet_mac(mac);
  KCHECK(memcmp(mac, qemu_mac, ETH_ALEN) == 0);
  struct vnet_stats before, after;
  vnet_get_stats(&before);

  uint64_t deadline = rdtime() + FIRST_TIMEOUT_MS * board.timebase_hz / 1000;
  KREQUIRE(timer_add(deadline, kco_current()) == 0);
  const char *why = arp_exchange(mac, deadline);
  if (why) {
    ktest_fail_at(__FILE__, __LINE__, "first exchange: %s", why);
    return;
  }

  // Many more, so that both rings wrap around.
  deadline = rdtime() + ROUNDS_TIMEOUT_MS * board.timebase_hz / 1000;
  KREQUIRE(timer_add(deadline, kco_current()) == 0);
  for (int i = 0; i < ROUNDS && !why; i++)
    if ((why = arp_exchange(mac, deadline)) != 0)
      ktest_fail_at(__FILE__, __LINE__, "exchange %d of %d: %s", i + 1, ROUNDS, why);

  vnet_get_stats(&after);
  KCHECK(after.tx_frames - before.tx_frames >= 1 + ROUNDS);
  KCHECK(after.tx_bytes - before.tx_bytes >= (1 + ROUNDS) * ETH_MIN_FRAME);
  KCHECK(after.rx_frames - before.rx_frames >= 1 + ROUNDS);
  KCHECK(after.rx_bytes - before.rx_bytes >= (1 + ROUNDS) * ARP_FRAME_LEN);
  KCHECK(after.irqs > before.irqs);
}

// The transmit backlog: with every card buffer held here, frames handed to
// vnet_tx_wait wait (counted, not sent); giving the buffers back unsent sends
// them, and the gateway answers them.
KTEST(vnet_frames_wait_for_a_buffer_and_go_out) {
  KREQUIRE(vnet_present());
  uint8_t mac[ETH_ALEN];
  vnet_mac(mac);
  enum { HOLD = 128, WAITING = 3 };
  static uint8_t *held[HOLD];
  int n = 0;
  uint64_t deadline = rdtime() + FIRST_TIMEOUT_MS * board.timebase_hz / 1000;
  KREQUIRE(timer_add(deadline, kco_current()) == 0);
  // Take every buffer (the card has HOLD: QEMU's queue is longer than ours;
  // those in flight come back with the device's interrupt).
  while (n < HOLD && rdtime() < deadline) {
    uint8_t *b = vnet_tx_buf();
    if (b)
      held[n++] = b;
    else
      kco_sleep_ms(1);
  }
  KREQUIRE(n == HOLD && vnet_tx_buf() == 0);
  struct vnet_stats before, mid, after;
  vnet_get_stats(&before);
  for (int i = 0; i < WAITING; i++) {
    uint8_t *f = vnet_tx_wait_buf();
    KREQUIRE(f != 0);
    build_request(f, mac);
    vnet_tx_wait(f, ETH_MIN_FRAME);
  }
  vnet_get_stats(&mid);
  KCHECK(mid.tx_waited - before.tx_waited >= WAITING);
  for (int i = 0; i < n; i++)
    vnet_tx_submit(held[i], 0);
  vnet_get_stats(&after);
  KCHECK(after.tx_frames - mid.tx_frames >= WAITING);
  KCHECK_EQ(after.tx_full, before.tx_full);
  // They went out: the gateway answers.
  for (;;) {
    uint8_t *frame = 0;
    size_t len = 0;
    KCO_WAIT_UNTIL(vnet_rx_waitq(), (frame = vnet_rx_look(&len)) != 0 || rdtime() >= deadline);
    KREQUIRE(frame != 0);
    int ok = is_gateway_reply(frame, len, mac);
    vnet_rx_release(frame);
    if (ok)
      break;
  }
}
