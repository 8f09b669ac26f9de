// virtio-net over virtio-mmio (modern interface, virtio 1.x): one network card,
// the first virtio-mmio slot whose device id is 1. Frames are plain Ethernet
// frames; the virtio-net header is the driver's business.
//
// Receive: the device fills posted buffers and raises an interrupt; the handler
// only wakes vnet_rx_waitq(). Whoever waits there (the network coroutine,
// net/net.c) takes frames with vnet_rx_next and gives each buffer back with
// vnet_rx_release, which posts it to the device again. Nothing polls while idle.
// Transmit: vnet_tx_buf hands out a free buffer (reclaiming those the device
// has finished with), the caller fills it and passes it to vnet_tx_submit.
// All functions take the driver's own lock; any hart may call them.
#ifndef VIRTIO_NET_H
#define VIRTIO_NET_H
#include <stddef.h>
#include <stdint.h>
#include "waitq.h"

#define VNET_FRAME_MAX 1514          // Ethernet header + 1500-byte MTU, no FCS

struct vnet_stats {
  uint64_t rx_frames, rx_bytes, tx_frames, tx_bytes;
  uint64_t rx_dropped;               // frames the device reported with a bad length
  uint64_t tx_waited;                // frames that found every buffer in flight and waited
  uint64_t tx_full;                  // frames dropped: the transmit backlog was full too
  uint64_t irqs;
  uint64_t rx_kicks, tx_kicks;       // QUEUE_NOTIFY writes (each one an MMIO exit under QEMU)
};

int vnet_init(void);                 // boot: 0, or -ENODEV/-EIO with a console message
int vnet_present(void);              // 1 once vnet_init succeeded
void vnet_mac(uint8_t mac[6]);
struct waitq *vnet_rx_waitq(void);   // woken by the interrupt handler
void vnet_intr(void);                // trap.c: the device's PLIC source fired
uint32_t vnet_irq(void);             // that PLIC source, 0 if there is no card

uint8_t *vnet_rx_next(size_t *len);  // next received frame, or NULL if none
void vnet_rx_release(uint8_t *frame);
// vnet_rx_next for a receiver registered on vnet_rx_waitq() that will sleep
// if it finds nothing: it also asks the card for an interrupt at the next
// frame (the interrupt turns that off again as it wakes the queue). A waiter
// on vnet_rx_waitq() must make its last look with this: the card interrupts
// for nothing else but frames in the transmit backlog.
uint8_t *vnet_rx_look(size_t *len);
// Bootargs vnet_irq=all: the device interrupts for every used buffer of both
// queues, as before interrupts were asked for only when someone waits (for
// comparison).
void vnet_irq_always(int on);

uint8_t *vnet_tx_buf(void);          // VNET_FRAME_MAX bytes, or NULL if all are in flight
void vnet_tx_submit(uint8_t *buf, size_t len);   // len 0: give the buffer back unsent
// When vnet_tx_buf has none: VNET_FRAME_MAX bytes of memory for a frame that
// waits for a buffer, sent in order (NULL: the backlog is full, drop it);
// vnet_tx_wait queues it (len 0: never mind).
uint8_t *vnet_tx_wait_buf(void);
void vnet_tx_wait(uint8_t *frame, size_t len);

void vnet_get_stats(struct vnet_stats *st);
#endif
