// Virtio over MMIO, modern interface (virtio 1.x, register layout version 2):
// the transport's registers (spec 4.2.2), device status bits (2.1), the feature
// bits Coral negotiates (6, 5.1.3), split virtqueues (2.6) and the network
// device's header and configuration (5.1). Everything here is little-endian on
// the wire, as is RISC-V, so no byte swapping is needed.
#ifndef VIRTIO_MMIO_H
#define VIRTIO_MMIO_H
#include <stdint.h>

// ---- transport registers: byte offsets from the slot's base, all 32 bits wide
// and accessed as 32-bit words (4.2.2.2) except the device configuration space ----
#define VIRTIO_MMIO_MAGIC_VALUE        0x000   // reads VIRTIO_MMIO_MAGIC
#define VIRTIO_MMIO_VERSION            0x004   // 2 = modern, 1 = legacy
#define VIRTIO_MMIO_DEVICE_ID          0x008   // 0 = empty slot
#define VIRTIO_MMIO_VENDOR_ID          0x00c
#define VIRTIO_MMIO_DEVICE_FEATURES    0x010   // 32 feature bits, chosen by ..._SEL
#define VIRTIO_MMIO_DEVICE_FEATURES_SEL 0x014  // 0: bits 0-31, 1: bits 32-63
#define VIRTIO_MMIO_DRIVER_FEATURES    0x020
#define VIRTIO_MMIO_DRIVER_FEATURES_SEL 0x024
#define VIRTIO_MMIO_QUEUE_SEL          0x030   // the queue the QUEUE_* registers address
#define VIRTIO_MMIO_QUEUE_NUM_MAX      0x034   // largest size the device allows, 0 = no queue
#define VIRTIO_MMIO_QUEUE_NUM          0x038   // size the driver chose
#define VIRTIO_MMIO_QUEUE_READY        0x044
#define VIRTIO_MMIO_QUEUE_NOTIFY       0x050   // write a queue index: "new buffers"
#define VIRTIO_MMIO_INTERRUPT_STATUS   0x060
#define VIRTIO_MMIO_INTERRUPT_ACK      0x064
#define VIRTIO_MMIO_STATUS             0x070   // device status; writing 0 resets
#define VIRTIO_MMIO_QUEUE_DESC_LOW     0x080   // physical address of the descriptor table
#define VIRTIO_MMIO_QUEUE_DESC_HIGH    0x084
#define VIRTIO_MMIO_QUEUE_DRIVER_LOW   0x090   // ... of the available ring
#define VIRTIO_MMIO_QUEUE_DRIVER_HIGH  0x094
#define VIRTIO_MMIO_QUEUE_DEVICE_LOW   0x0a0   // ... of the used ring
#define VIRTIO_MMIO_QUEUE_DEVICE_HIGH  0x0a4
#define VIRTIO_MMIO_CONFIG_GENERATION  0x0fc   // changes when the device changes its config
#define VIRTIO_MMIO_CONFIG             0x100   // device-specific configuration space

#define VIRTIO_MMIO_MAGIC              0x74726976u   // "virt", little-endian
#define VIRTIO_MMIO_VERSION_LEGACY     1
#define VIRTIO_MMIO_VERSION_MODERN     2

// INTERRUPT_STATUS / INTERRUPT_ACK bits
#define VIRTIO_MMIO_INT_VRING          (1u << 0)     // a used ring was updated
#define VIRTIO_MMIO_INT_CONFIG         (1u << 1)     // the configuration changed

// ---- device status (2.1) ----
#define VIRTIO_STATUS_ACKNOWLEDGE      1u      // the driver noticed the device
#define VIRTIO_STATUS_DRIVER           2u      // and knows how to drive it
#define VIRTIO_STATUS_DRIVER_OK        4u      // the driver is ready
#define VIRTIO_STATUS_FEATURES_OK      8u      // feature negotiation is complete
#define VIRTIO_STATUS_NEEDS_RESET      64u     // the device gave up
#define VIRTIO_STATUS_FAILED           128u    // the driver gave up

// ---- device types (5) ----
#define VIRTIO_ID_NET                  1

// ---- feature bits, as bit numbers in the 64-bit feature word ----
#define VIRTIO_NET_F_MAC               5       // config space holds the card's MAC
#define VIRTIO_NET_F_MRG_RXBUF         15      // (not used: one buffer per frame)
#define VIRTIO_F_VERSION_1             32      // the device follows virtio 1.x
#define VIRTIO_FEATURE(bit)            (1ull << (bit))

// ---- split virtqueues (2.6): three areas the driver allocates ----
// Descriptor table (16-byte aligned): one entry per buffer.
struct virtq_desc {
  uint64_t addr;                        // physical address of the buffer
  uint32_t len;
  uint16_t flags;                       // VIRTQ_DESC_F_*
  uint16_t next;                        // the next descriptor if F_NEXT
};
#define VIRTQ_DESC_F_NEXT              1u      // the buffer continues in `next`
#define VIRTQ_DESC_F_WRITE             2u      // the device writes (rx); else it reads (tx)
#define VIRTQ_DESC_ALIGN               16

// Available ring (2-byte aligned), written by the driver: heads of buffer chains
// offered to the device. `idx` counts every entry ever added (wraps at 2^16);
// ring[idx % size] is the next slot. A used_event word follows ring[size].
struct virtq_avail {
  uint16_t flags;                       // VIRTQ_AVAIL_F_*
  uint16_t idx;
  uint16_t ring[];
};
#define VIRTQ_AVAIL_F_NO_INTERRUPT     1u      // hint: no interrupt needed for this queue
#define VIRTQ_AVAIL_ALIGN              2

// Used ring (4-byte aligned), written by the device: chains it has finished,
// with the number of bytes it wrote. An avail_event word follows ring[size].
struct virtq_used_elem {
  uint32_t id;                          // head descriptor of the chain
  uint32_t len;                         // bytes written into it (rx)
};
struct virtq_used {
  uint16_t flags;                       // VIRTQ_USED_F_*
  uint16_t idx;
  struct virtq_used_elem ring[];
};
#define VIRTQ_USED_F_NO_NOTIFY         1u      // hint: the device needs no QUEUE_NOTIFY
#define VIRTQ_USED_ALIGN               4

// Bytes each area takes for a queue of `n` entries (the trailing event word included).
#define VIRTQ_DESC_BYTES(n)   ((n) * sizeof(struct virtq_desc))
#define VIRTQ_AVAIL_BYTES(n)  (sizeof(struct virtq_avail) + (n) * sizeof(uint16_t) + sizeof(uint16_t))
#define VIRTQ_USED_BYTES(n)   (sizeof(struct virtq_used) + (n) * sizeof(struct virtq_used_elem) + sizeof(uint16_t))

// ---- network device (5.1) ----
#define VIRTIO_NET_RXQ                 0       // receiveq1
#define VIRTIO_NET_TXQ                 1       // transmitq1

// Precedes every frame in both directions. With VIRTIO_F_VERSION_1 the header
// always has num_buffers, so it is 12 bytes even without MRG_RXBUF (5.1.6).
struct virtio_net_hdr {
  uint8_t flags;
  uint8_t gso_type;                     // 0 = VIRTIO_NET_HDR_GSO_NONE
  uint16_t hdr_len;
  uint16_t gso_size;
  uint16_t csum_start;
  uint16_t csum_offset;
  uint16_t num_buffers;
};
_Static_assert(sizeof(struct virtio_net_hdr) == 12, "virtio_net_hdr is 12 bytes in virtio 1.x");

// Configuration space (offsets within VIRTIO_MMIO_CONFIG)
#define VIRTIO_NET_CFG_MAC             0       // uint8_t mac[6], valid with VIRTIO_NET_F_MAC

#endif
