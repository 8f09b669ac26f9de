// virtio-net driver: one card on virtio-mmio, modern interface (see virtio_net.h
// for the interface, virtio_mmio.h for the spec's names).
//
// Two split virtqueues, receiveq (0) and transmitq (1), of up to VNET_QUEUE_MAX
// entries each. Descriptor i of a queue always describes buffer i of that queue,
// so a buffer is named by its descriptor number and no descriptor is ever
// allocated or chained. Each buffer holds the 12-byte virtio_net_hdr followed by
// one whole frame (no VIRTIO_NET_F_MRG_RXBUF, so a frame never spans buffers).
//
// Who owns a buffer is tracked per buffer (enum owner): the device (posted in
// the available ring), the caller (handed out by vnet_rx_next / vnet_tx_buf), or,
// for transmit only, the driver's free list. Handing back a buffer the caller
// does not hold is a kernel bug and panics.
//
// Notification: after adding to an available ring the driver writes QUEUE_NOTIFY
// unless the device has set VIRTQ_USED_F_NO_NOTIFY (it is already looking). The
// device interrupts for both queues; the handler acknowledges, sends what the
// transmit backlog holds, and wakes vnet_rx_waitq(). The driver asks for
// interrupts only where someone waits for one (VIRTQ_AVAIL_F_NO_INTERRUPT
// otherwise): for used receive buffers while the receiver sleeps
// (vnet_rx_look), for used transmit buffers while frames wait in the
// backlog (completed transmit buffers are otherwise reclaimed lazily, by the
// next vnet_tx_buf). Under QEMU an interrupt is four register accesses (the
// PLIC's claim and completion, the status and its acknowledgement), each
// under QEMU's global lock, which its main loop holds while it moves
// packets. Bootargs vnet_irq=all asks for every interrupt (for comparison).
//
// No register is touched with vnet.lock held. Under QEMU a device register
// access takes the emulator's global lock, which its main loop holds while it
// moves packets, so one access can take as long as the main loop's turn. With
// the notify inside the lock, the other hart spun for all that time: in a 5 s
// closed loop of matrixd KCUC on two harts, 1,676 waits for this lock spun 96
// million times; with the register accesses outside it, 84 waits spun 6.6
// million (the console's `locks` table). Outside the lock is safe: a notify
// only says "look at the available ring", so one that comes late or twice
// does no harm, and the interrupt status is acknowledged by the one hart the
// PLIC gave the interrupt to.
#include "virtio_net.h"
#include "virtio_mmio.h"
#include "abi.h"
#include "board.h"
#include "hart.h"
#include "kmalloc.h"
#include "main.h"
#include "klib.h"
#include "palloc.h"
#include "plic.h"
#include "printf.h"
#include "riscv.h"
#include "spinlock.h"
#include "stats.h"
#include "vm.h"

#ifndef ENODEV
#define ENODEV 19
#endif

#define VNET_QUEUE_MAX 256                  // entries a queue may have (fewer if the device allows fewer)
#define VNET_RX_DEFAULT 256                 // receive entries wanted (bootargs vnet_rx=N: fewer)
#define VNET_TX_DEFAULT 128                 // transmit entries wanted
#define VNET_HDR_LEN sizeof(struct virtio_net_hdr)
#define VNET_BUF_LEN (VNET_HDR_LEN + VNET_FRAME_MAX)
#define VNET_BUF_STRIDE 2048                // two buffers per page
#define VNET_RESET_TIMEOUT_MS 100

_Static_assert(VNET_BUF_LEN <= VNET_BUF_STRIDE, "a buffer must hold the header and a frame");
_Static_assert(PAGE_SIZE % VNET_BUF_STRIDE == 0, "buffers must not straddle pages");
_Static_assert((VNET_QUEUE_MAX & (VNET_QUEUE_MAX - 1)) == 0, "split queue sizes are powers of two");

// Where the three areas of a queue of n entries sit in its ring pages (one page
// for 128 entries, two for 256: the descriptors alone fill a page).
#define VQ_AVAIL_OFF(n) ALIGN_UP(VIRTQ_DESC_BYTES(n), VIRTQ_AVAIL_ALIGN)
#define VQ_USED_OFF(n) ALIGN_UP(VQ_AVAIL_OFF(n) + VIRTQ_AVAIL_BYTES(n), VIRTQ_USED_ALIGN)
#define VQ_RING_BYTES(n) (VQ_USED_OFF(n) + VIRTQ_USED_BYTES(n))
#define VQ_RING_PAGES(n) (ALIGN_UP(VQ_RING_BYTES(n), PAGE_SIZE) / PAGE_SIZE)

enum owner { OWN_DEVICE, OWN_CALLER, OWN_FREE };

// A frame that found every transmit buffer in flight: it waits, in order, for
// the next one the device gives back (see "Transmit backlog" below).
struct tx_waiting {
  struct tx_waiting *next;
  size_t len;
  uint8_t frame[VNET_FRAME_MAX];
};
#define TX_BACKLOG_MAX 256                  // frames; past that a frame is dropped

struct vq {
  uint32_t index;                           // queue number, written to QUEUE_NOTIFY
  uint32_t size;                            // entries, a power of two
  void *ring_page;                          // descriptor table, available and used rings
  volatile struct virtq_desc *desc;
  volatile struct virtq_avail *avail;
  volatile struct virtq_used *used;
  uint16_t avail_idx;                       // our copy of avail->idx (free-running)
  uint16_t used_idx;                        // used entries consumed so far (free-running)
  uint8_t *bufs;                            // size buffers, VNET_BUF_STRIDE apart
  size_t buf_pages;
  uint8_t owner[VNET_QUEUE_MAX];            // enum owner, per buffer
};

static struct {
  struct spinlock lock;
  volatile int present;
  volatile uint8_t *regs;
  uint32_t irq;
  uint8_t mac[6];
  struct vq rx, tx;
  uint16_t tx_free[VNET_QUEUE_MAX];         // transmit buffers owned by the driver
  uint32_t ntx_free;
  struct tx_waiting *wait_head, *wait_tail; // the transmit backlog, oldest first
  uint32_t nwaiting;
  struct vnet_stats st;
} vnet = { .lock = SPINLOCK_INIT("vnet") };

static struct waitq rx_wait = { SPINLOCK_INIT("vnet-rx"), 0, 0 };
static int irq_always;                      // bootargs vnet_irq=all ("Notification" above)

static uint32_t reg_read(volatile uint8_t *regs, uint32_t off) {
  return *(volatile uint32_t *)(regs + off);
}

static void reg_write(volatile uint8_t *regs, uint32_t off, uint32_t v) {
  *(volatile uint32_t *)(regs + off) = v;
}

// The address the device uses for a buffer. RAM is identity-mapped (vm.h), so a
// kernel pointer into RAM is its physical address.
static uint64_t dma_addr(const volatile void *p) { return (uint64_t)p; }

static uint8_t *buf_at(struct vq *q, uint32_t id) { return q->bufs + (size_t)id * VNET_BUF_STRIDE; }

// The buffer whose payload (just past the header) is at p, or -1 if p is not one.
static int buf_index(struct vq *q, const uint8_t *p) {
  if (!q->bufs || p < q->bufs + VNET_HDR_LEN)
    return -1;
  uint64_t off = (uint64_t)(p - VNET_HDR_LEN - q->bufs);
  if (off % VNET_BUF_STRIDE || off / VNET_BUF_STRIDE >= q->size)
    return -1;
  return (int)(off / VNET_BUF_STRIDE);
}

// ---- virtqueues ----

// Allocate and describe queue `index` to the device. desc_flags is
// VIRTQ_DESC_F_WRITE for receive buffers (the device writes them), 0 for transmit.
static const char *vq_setup(volatile uint8_t *regs, struct vq *q, uint32_t index, uint32_t want,
                            uint16_t desc_flags) {
  reg_write(regs, VIRTIO_MMIO_QUEUE_SEL, index);
  if (reg_read(regs, VIRTIO_MMIO_QUEUE_READY))
    return "queue already in use";
  uint32_t max = reg_read(regs, VIRTIO_MMIO_QUEUE_NUM_MAX);
  if (max == 0)
    return "queue not available";
  uint32_t n = want;
  while (n > max)
    n >>= 1;
  q->index = index;
  q->size = n;
  q->buf_pages = ALIGN_UP((uint64_t)n * VNET_BUF_STRIDE, PAGE_SIZE) / PAGE_SIZE;
  q->ring_page = palloc_zero(VQ_RING_PAGES(n));
  q->bufs = palloc(q->buf_pages);
  if (!q->ring_page || !q->bufs)
    return "out of memory";
  uint8_t *page = q->ring_page;
  q->desc = (volatile struct virtq_desc *)page;
  q->avail = (volatile struct virtq_avail *)(page + VQ_AVAIL_OFF(n));
  q->used = (volatile struct virtq_used *)(page + VQ_USED_OFF(n));
  q->avail_idx = q->used_idx = 0;
  for (uint32_t i = 0; i < n; i++) {
    q->desc[i].addr = dma_addr(buf_at(q, i));
    q->desc[i].len = VNET_BUF_LEN;
    q->desc[i].flags = desc_flags;
    q->desc[i].next = 0;
  }
  reg_write(regs, VIRTIO_MMIO_QUEUE_NUM, n);
  reg_write(regs, VIRTIO_MMIO_QUEUE_DESC_LOW, (uint32_t)dma_addr(q->desc));
  reg_write(regs, VIRTIO_MMIO_QUEUE_DESC_HIGH, (uint32_t)(dma_addr(q->desc) >> 32));
  reg_write(regs, VIRTIO_MMIO_QUEUE_DRIVER_LOW, (uint32_t)dma_addr(q->avail));
  reg_write(regs, VIRTIO_MMIO_QUEUE_DRIVER_HIGH, (uint32_t)(dma_addr(q->avail) >> 32));
  reg_write(regs, VIRTIO_MMIO_QUEUE_DEVICE_LOW, (uint32_t)dma_addr(q->used));
  reg_write(regs, VIRTIO_MMIO_QUEUE_DEVICE_HIGH, (uint32_t)(dma_addr(q->used) >> 32));
  reg_write(regs, VIRTIO_MMIO_QUEUE_READY, 1);
  return 0;
}

static void vq_free(struct vq *q) {
  pfree(q->ring_page, VQ_RING_PAGES(q->size));
  pfree(q->bufs, q->buf_pages);
  q->ring_page = 0;
  q->bufs = 0;
}

// Append buffer id to the available ring (without telling the device).
static void vq_add(struct vq *q, uint32_t id) {
  q->avail->ring[q->avail_idx & (q->size - 1)] = (uint16_t)id;
  __sync_synchronize();            // the entry (and the buffer) before the index that covers it
  q->avail->idx = ++q->avail_idx;
}

// Tell the device about new available buffers, unless it said it needs no telling.
static void vq_notify(struct vq *q) {
  __sync_synchronize();            // the new index before reading the device's flags (2.7.13)
  if (!(q->used->flags & VIRTQ_USED_F_NO_NOTIFY)) {
    reg_write(vnet.regs, VIRTIO_MMIO_QUEUE_NOTIFY, q->index);
    __atomic_fetch_add(q == &vnet.tx ? &vnet.st.tx_kicks : &vnet.st.rx_kicks, 1, __ATOMIC_RELAXED);
  }
}

// The next used entry, or 0 if the device has returned nothing new.
static int vq_next_used(struct vq *q, uint32_t *id, uint32_t *len) {
  if (q->used_idx == q->used->idx)
    return 0;
  __sync_synchronize();            // the entry (and the buffer) after the index that covers it
  volatile struct virtq_used_elem *e = &q->used->ring[q->used_idx & (q->size - 1)];
  *id = e->id;
  *len = e->len;
  q->used_idx++;
  return 1;
}

// ---- initialisation ----

// The first slot holding a modern virtio-net device, or NULL.
static volatile uint8_t *probe(uint32_t *irq) {
  for (uint32_t i = 0; i < board.nvirtio; i++) {
    const struct mmio_dev *d = &board.virtio[i];
    if (d->size < VIRTIO_MMIO_CONFIG)
      continue;
    volatile uint8_t *regs = mmio(d->base);
    if (reg_read(regs, VIRTIO_MMIO_MAGIC_VALUE) != VIRTIO_MMIO_MAGIC ||
        reg_read(regs, VIRTIO_MMIO_DEVICE_ID) != VIRTIO_ID_NET)
      continue;
    uint32_t version = reg_read(regs, VIRTIO_MMIO_VERSION);
    if (version == VIRTIO_MMIO_VERSION_MODERN) {
      *irq = d->irq;
      return regs;
    }
    if (version == VIRTIO_MMIO_VERSION_LEGACY)
      kprintf("virtio-net: card at 0x%lx uses the legacy interface (version 1), not supported; "
              "run QEMU with -global virtio-mmio.force-legacy=false\n", d->base);
    else
      kprintf("virtio-net: card at 0x%lx has unknown virtio-mmio version %u\n", d->base, version);
  }
  return 0;
}

static void read_mac(volatile uint8_t *regs, uint64_t features) {
  if (!(features & VIRTIO_FEATURE(VIRTIO_NET_F_MAC))) {
    // No address from the device: use a fixed locally administered one.
    static const uint8_t fallback[6] = { 0x02, 0, 0, 0, 0, 1 };
    memcpy(vnet.mac, fallback, sizeof vnet.mac);
    kprintf("virtio-net: the card has no MAC address; using a local one\n");
    return;
  }
  // Byte fields are read with byte accesses (4.2.2.2); retry if the device
  // changed its configuration meanwhile (2.5.1).
  uint32_t gen;
  do {
    gen = reg_read(regs, VIRTIO_MMIO_CONFIG_GENERATION);
    for (int i = 0; i < 6; i++)
      vnet.mac[i] = regs[VIRTIO_MMIO_CONFIG + VIRTIO_NET_CFG_MAC + i];
  } while (reg_read(regs, VIRTIO_MMIO_CONFIG_GENERATION) != gen);
}

static int init_failed(volatile uint8_t *regs, uint32_t status, const char *why) {
  reg_write(regs, VIRTIO_MMIO_STATUS, status | VIRTIO_STATUS_FAILED);
  vq_free(&vnet.rx);
  vq_free(&vnet.tx);
  kprintf("virtio-net: %s\n", why);
  return -EIO;
}

// Receive entries to ask for: VNET_RX_DEFAULT, or bootargs vnet_rx=N (a power
// of two from 8 up, for comparisons; others are rounded down). Why 256: under a
// closed loop on two harts QEMU's user network hands over bursts of frames in
// one turn of its main loop, and with 128 buffers the card found the ring
// empty 0.14-0.42 times a request (docs/results/ab-netcard.md).
static uint32_t rx_entries_wanted(void) {
  char val[16];
  uint32_t n = VNET_RX_DEFAULT;
  if (bootarg(board.bootargs, "vnet_rx", val, sizeof val)) {
    uint64_t v = bootarg_number(val, VNET_QUEUE_MAX);
    while (n > 8 && n > v)
      n >>= 1;
  }
  return n;
}

int vnet_init(void) {
  uint32_t irq = 0;
  volatile uint8_t *regs = probe(&irq);
  if (!regs) {
    kprintf("virtio-net: no usable network card\n");
    return -ENODEV;
  }
  // The initialisation sequence of 3.1.1.
  reg_write(regs, VIRTIO_MMIO_STATUS, 0);   // reset
  uint64_t deadline = rdtime() + VNET_RESET_TIMEOUT_MS * board.timebase_hz / 1000;
  while (reg_read(regs, VIRTIO_MMIO_STATUS) != 0)
    if (rdtime() >= deadline)
      return init_failed(regs, 0, "the card does not reset");
  uint32_t status = VIRTIO_STATUS_ACKNOWLEDGE;
  reg_write(regs, VIRTIO_MMIO_STATUS, status);
  status |= VIRTIO_STATUS_DRIVER;
  reg_write(regs, VIRTIO_MMIO_STATUS, status);

  reg_write(regs, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
  uint64_t offered = reg_read(regs, VIRTIO_MMIO_DEVICE_FEATURES);
  reg_write(regs, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
  offered |= (uint64_t)reg_read(regs, VIRTIO_MMIO_DEVICE_FEATURES) << 32;
  if (!(offered & VIRTIO_FEATURE(VIRTIO_F_VERSION_1)))
    return init_failed(regs, status, "the card does not offer VIRTIO_F_VERSION_1");
  uint64_t accepted = offered & (VIRTIO_FEATURE(VIRTIO_F_VERSION_1) | VIRTIO_FEATURE(VIRTIO_NET_F_MAC));
  reg_write(regs, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
  reg_write(regs, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)accepted);
  reg_write(regs, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
  reg_write(regs, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)(accepted >> 32));
  status |= VIRTIO_STATUS_FEATURES_OK;
  reg_write(regs, VIRTIO_MMIO_STATUS, status);
  if (!(reg_read(regs, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_FEATURES_OK))
    return init_failed(regs, status, "the card refused our features");

  const char *why;
  if ((why = vq_setup(regs, &vnet.rx, VIRTIO_NET_RXQ, rx_entries_wanted(), VIRTQ_DESC_F_WRITE)) != 0 ||
      (why = vq_setup(regs, &vnet.tx, VIRTIO_NET_TXQ, VNET_TX_DEFAULT, 0)) != 0)
    return init_failed(regs, status, why);
  read_mac(regs, accepted);

  // Every receive buffer goes to the device; every transmit buffer to the free list.
  for (uint32_t i = 0; i < vnet.rx.size; i++) {
    vnet.rx.owner[i] = OWN_DEVICE;
    vq_add(&vnet.rx, i);
  }
  for (uint32_t i = 0; i < vnet.tx.size; i++) {
    vnet.tx.owner[i] = OWN_FREE;
    vnet.tx_free[i] = (uint16_t)(vnet.tx.size - 1 - i);
  }
  vnet.ntx_free = vnet.tx.size;
  vnet.tx.avail->flags = VIRTQ_AVAIL_F_NO_INTERRUPT;   // no backlog yet (vnet_irq_always comes later)
  vnet.regs = regs;
  vnet.irq = irq;
  status |= VIRTIO_STATUS_DRIVER_OK;
  reg_write(regs, VIRTIO_MMIO_STATUS, status);
  vq_notify(&vnet.rx);
  __sync_synchronize();                     // everything above before other harts see `present`
  vnet.present = 1;
  plic_enable(irq, 0);                      // like the console: the boot hart takes it
  kprintf("virtio-net: mac %02x:%02x:%02x:%02x:%02x:%02x, %u rx and %u tx buffers, irq %u\n",
          vnet.mac[0], vnet.mac[1], vnet.mac[2], vnet.mac[3], vnet.mac[4], vnet.mac[5],
          vnet.rx.size, vnet.tx.size, irq);
  return 0;
}

int vnet_present(void) { return vnet.present; }

uint32_t vnet_irq(void) { return vnet.present ? vnet.irq : 0; }

void vnet_mac(uint8_t mac[6]) { memcpy(mac, vnet.mac, sizeof vnet.mac); }

struct waitq *vnet_rx_waitq(void) { return &rx_wait; }

static void backlog_send(void);

void vnet_intr(void) {
  if (!vnet.present)
    return;
  // The receive coroutine will look at the used ring until it finds it empty
  // (vnet_rx_look): no more receive interrupts until then.
  if (!irq_always)
    vnet.rx.avail->flags = VIRTQ_AVAIL_F_NO_INTERRUPT;
  // Acknowledge everything pending (used buffers, configuration change): the
  // interrupt line stays raised until we do.
  uint32_t pending = reg_read(vnet.regs, VIRTIO_MMIO_INTERRUPT_STATUS);
  reg_write(vnet.regs, VIRTIO_MMIO_INTERRUPT_ACK, pending);
  __atomic_fetch_add(&vnet.st.irqs, 1, __ATOMIC_RELAXED);
  backlog_send();
  waitq_wake_all(&rx_wait);
}

// ---- receive ----

// Interrupts only for a receiver that sleeps: vnet_intr turns the receive
// queue's interrupts off as it wakes the receiver, and the receiver turns
// them on in vnet_rx_look, registered on vnet_rx_waitq(), just before its
// last look at the used ring. A frame used after that look interrupts; one
// used before it is found by the look. Every write of the hint by vnet_intr
// is followed by a wake, so a receiver never sleeps with interrupts off.
uint8_t *vnet_rx_look(size_t *len) {
  if (vnet.present && !irq_always) {
    vnet.rx.avail->flags = 0;
    __sync_synchronize();          // the hint before the look at the used ring
  }
  return vnet_rx_next(len);
}

uint8_t *vnet_rx_next(size_t *len) {
  if (!vnet.present)
    return 0;
  struct vq *q = &vnet.rx;
  uint8_t *frame = 0;
  uint32_t id, used_len;
  int gave_back = 0;
  spin_lock(&vnet.lock);
  while (vq_next_used(q, &id, &used_len)) {
    if (id >= q->size || q->owner[id] != OWN_DEVICE) {
      vnet.st.rx_dropped++;                 // not a buffer the device had: ignore the entry
      continue;
    }
    if (used_len <= VNET_HDR_LEN || used_len - VNET_HDR_LEN > VNET_FRAME_MAX) {
      vnet.st.rx_dropped++;                 // bad length: give the buffer straight back
      vq_add(q, id);
      gave_back = 1;
      continue;
    }
    q->owner[id] = OWN_CALLER;
    *len = used_len - VNET_HDR_LEN;
    frame = buf_at(q, id) + VNET_HDR_LEN;
    vnet.st.rx_frames++;
    vnet.st.rx_bytes += *len;
    break;
  }
  spin_unlock(&vnet.lock);
  if (gave_back)
    vq_notify(q);
  return frame;
}

void vnet_rx_release(uint8_t *frame) {
  if (!frame)
    return;
  struct vq *q = &vnet.rx;
  spin_lock(&vnet.lock);
  int id = buf_index(q, frame);
  if (id < 0 || q->owner[id] != OWN_CALLER) {
    spin_unlock(&vnet.lock);
    kpanic("vnet_rx_release: %p is not a received frame held by the caller", frame);
  }
  q->owner[id] = OWN_DEVICE;
  vq_add(q, (uint32_t)id);
  spin_unlock(&vnet.lock);
  vq_notify(q);
}

// ---- transmit ----

// Move the buffers the device has finished sending to the free list.
static void tx_reclaim(void) {
  struct vq *q = &vnet.tx;
  uint32_t id, len;
  while (vq_next_used(q, &id, &len))
    if (id < q->size && q->owner[id] == OWN_DEVICE) {
      q->owner[id] = OWN_FREE;
      vnet.tx_free[vnet.ntx_free++] = (uint16_t)id;
    }
}

// ---- transmit backlog ----
// Under load the device can have every transmit buffer in flight (QEMU sends
// them from its main loop, which may be busy with the user network). A frame
// dropped then is a TCP segment lost on the wire, and with a request and its
// answer in one segment each there are no duplicate acknowledgements to
// recover it early: the connection waits out a retransmission timeout, half
// a second at lwIP's granularity. matrixd's closed loop lost 157 frames so in
// 5 s on one hart and 335 on two, and its slowest request took over half a
// second in every run (with the backlog: 37-100 ms). So such a frame is
// copied into a waiting list (vnet_tx_wait) and sent, in order, as soon as
// buffers come back: at the next transmit, and at the device's interrupt,
// which it raises for used transmit buffers too. While the list is not
// empty every new frame joins it, so frames leave in the order they came.
// Only past TX_BACKLOG_MAX waiting frames, or without memory, is a frame
// dropped (tx_full).
//
// Only the backlog needs the device's interrupt for used transmit buffers. It
// is asked for (VIRTQ_AVAIL_F_NO_INTERRUPT cleared) when a frame joins an
// empty backlog, before the look at the used ring that might send it at once,
// so a buffer the device returns after that look raises one; and the hint is
// set again when the backlog empties.

void vnet_irq_always(int on) {
  irq_always = on;
  if (on && vnet.present)
    vnet.tx.avail->flags = vnet.rx.avail->flags = 0;
}

// Lock held: ask for transmit interrupts only while frames wait.
static void tx_irq_update(void) {
  uint16_t want = vnet.wait_head || irq_always ? 0 : VIRTQ_AVAIL_F_NO_INTERRUPT;
  if (vnet.tx.avail->flags != want) {
    vnet.tx.avail->flags = want;
    __sync_synchronize();          // the flag before the next look at the used ring
  }
}

// Put waiting frames into free buffers, oldest first. Lock held; returns the
// records now unused, for the caller to free after the unlock, and whether
// anything was queued (*queued: then notify the device).
static struct tx_waiting *backlog_send_locked(int *queued) {
  struct vq *q = &vnet.tx;
  struct tx_waiting *done = 0;
  tx_reclaim();
  while (vnet.wait_head && vnet.ntx_free) {
    struct tx_waiting *w = vnet.wait_head;
    vnet.wait_head = w->next;
    if (!vnet.wait_head)
      vnet.wait_tail = 0;
    vnet.nwaiting--;
    uint32_t id = vnet.tx_free[--vnet.ntx_free];
    uint8_t *buf = buf_at(q, id);
    memset(buf, 0, VNET_HDR_LEN);
    memcpy(buf + VNET_HDR_LEN, w->frame, w->len);
    q->desc[id].len = (uint32_t)(VNET_HDR_LEN + w->len);
    q->owner[id] = OWN_DEVICE;
    vq_add(q, id);
    vnet.st.tx_frames++;
    vnet.st.tx_bytes += w->len;
    w->next = done;
    done = w;
    *queued = 1;
  }
  tx_irq_update();                 // (the backlog may have emptied)
  return done;
}

static void free_waiting(struct tx_waiting *w) {
  while (w) {
    struct tx_waiting *next = w->next;
    kfree(w);
    w = next;
  }
}

// The device gave buffers back (its interrupt): send what waits for them.
static void backlog_send(void) {
  if (!__atomic_load_n(&vnet.nwaiting, __ATOMIC_RELAXED))
    return;
  int queued = 0;
  spin_lock(&vnet.lock);
  struct tx_waiting *done = backlog_send_locked(&queued);
  spin_unlock(&vnet.lock);
  if (queued)
    vq_notify(&vnet.tx);
  free_waiting(done);
}

uint8_t *vnet_tx_wait_buf(void) {
  if (!vnet.present || __atomic_load_n(&vnet.nwaiting, __ATOMIC_RELAXED) >= TX_BACKLOG_MAX)
    return 0;
  struct tx_waiting *w = kmalloc(sizeof *w);
  return w ? w->frame : 0;
}

void vnet_tx_wait(uint8_t *frame, size_t len) {
  struct tx_waiting *w = (struct tx_waiting *)(frame - offsetof(struct tx_waiting, frame));
  if (len == 0 || len > VNET_FRAME_MAX) {
    kfree(w);
    return;
  }
  w->len = len;
  w->next = 0;
  int queued = 0;
  spin_lock(&vnet.lock);
  if (vnet.nwaiting >= TX_BACKLOG_MAX) {   // (filled up since vnet_tx_wait_buf looked)
    vnet.st.tx_full++;
    spin_unlock(&vnet.lock);
    kfree(w);
    return;
  }
  if (vnet.wait_tail)
    vnet.wait_tail->next = w;
  else
    vnet.wait_head = w;
  vnet.wait_tail = w;
  vnet.nwaiting++;
  vnet.st.tx_waited++;
  tx_irq_update();                 // interrupts on before the look below
  struct tx_waiting *done = backlog_send_locked(&queued);   // a buffer may be back already
  spin_unlock(&vnet.lock);
  if (queued)
    vq_notify(&vnet.tx);
  free_waiting(done);
}

uint8_t *vnet_tx_buf(void) {
  if (!vnet.present)
    return 0;
  struct vq *q = &vnet.tx;
  spin_lock(&vnet.lock);
  tx_reclaim();
  if (vnet.ntx_free == 0 || vnet.wait_head) {   // (frames wait: behind them)
    spin_unlock(&vnet.lock);
    return 0;
  }
  uint32_t id = vnet.tx_free[--vnet.ntx_free];
  q->owner[id] = OWN_CALLER;
  spin_unlock(&vnet.lock);
  uint8_t *buf = buf_at(q, id);
  memset(buf, 0, VNET_HDR_LEN);             // no checksum offload, no GSO
  return buf + VNET_HDR_LEN;
}

void vnet_tx_submit(uint8_t *buf, size_t len) {
  struct vq *q = &vnet.tx;
  spin_lock(&vnet.lock);
  int id = buf_index(q, buf);
  if (id < 0 || q->owner[id] != OWN_CALLER || len > VNET_FRAME_MAX) {
    spin_unlock(&vnet.lock);
    kpanic("vnet_tx_submit: %p (%lu bytes) is not a transmit buffer held by the caller",
           buf, (unsigned long)len);
  }
  if (len == 0) {                           // nothing to send: the buffer goes back unsent,
    q->owner[id] = OWN_FREE;                // to a frame that waits for one, if any
    vnet.tx_free[vnet.ntx_free++] = (uint16_t)id;
    int queued = 0;
    struct tx_waiting *done = vnet.wait_head ? backlog_send_locked(&queued) : 0;
    spin_unlock(&vnet.lock);
    if (queued)
      vq_notify(q);
    free_waiting(done);
    return;
  }
  q->desc[id].len = (uint32_t)(VNET_HDR_LEN + len);
  q->owner[id] = OWN_DEVICE;
  vq_add(q, (uint32_t)id);
  vnet.st.tx_frames++;
  vnet.st.tx_bytes += len;
  spin_unlock(&vnet.lock);
  vq_notify(q);
}

void vnet_get_stats(struct vnet_stats *st) {
  spin_lock(&vnet.lock);
  *st = vnet.st;
  spin_unlock(&vnet.lock);
}

static void print_stats(stats_out_fn *out) {
  if (!vnet_present()) {
    out("net: no network card\n");
    return;
  }
  uint8_t m[6];
  struct vnet_stats st;
  vnet_mac(m);
  vnet_get_stats(&st);
  out("net: mac %02x:%02x:%02x:%02x:%02x:%02x; rx %lu frames / %lu bytes, %lu dropped; "
      "tx %lu frames / %lu bytes, %lu waited for a buffer, %lu dropped (backlog full); irqs %lu; "
      "queue notifications rx %lu, tx %lu\n",
      m[0], m[1], m[2], m[3], m[4], m[5], st.rx_frames, st.rx_bytes, st.rx_dropped,
      st.tx_frames, st.tx_bytes, st.tx_waited, st.tx_full, st.irqs, st.rx_kicks, st.tx_kicks);
}
STATS_SOURCE(40, "net", print_stats);
