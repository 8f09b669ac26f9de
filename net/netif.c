// The virtio-net card as an lwIP network interface.
//
// Receive: a stackless kernel coroutine sleeps on the driver's wait queue; the
// card's interrupt wakes it, and it hands every received frame to lwIP
// (copied into a pbuf, so the card gets its buffer back at once). It takes
// up to RX_BATCH frames from the card and feeds them to lwIP in one section
// of the network lock, as a request (net_submit): if the lock is held, the
// holder runs the batch and this coroutine's hart goes on with other work
// until it is woken to give the buffers back. After a full batch it yields,
// so a flood of packets cannot keep other kernel coroutines of its priority
// off the hart.
// Transmit: lwIP's linkoutput copies the frame into one of the card's transmit
// buffers. If all are in flight the frame waits in the driver's backlog
// (kernel/virtio_net.c) and goes out, in order, when buffers come back; only
// if that is full too is it dropped with ERR_MEM, and TCP retransmits it
// later, as it would after a loss on the wire.
#include "net.h"
#include "kco.h"
#include "printf.h"
#include "virtio_net.h"
#include "waitq.h"
#include "abi.h"
#include "lwip/etharp.h"
#include "lwip/init.h"
#include "lwip/ip4_addr.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "netif/ethernet.h"

#define RX_BATCH 32
#define MTU 1500

static struct netif vnet_netif;

static err_t linkoutput(struct netif *nif, struct pbuf *p) {
  (void)nif;
  if (p->tot_len > VNET_FRAME_MAX)
    return ERR_IF;
  uint8_t *buf = vnet_tx_buf();
  if (buf) {
    pbuf_copy_partial(p, buf, p->tot_len, 0);
    vnet_tx_submit(buf, p->tot_len);
    netif_count_tx(1);
    return ERR_OK;
  }
  buf = vnet_tx_wait_buf();              // every card buffer in flight: wait for one
  netif_count_tx(buf != 0);
  if (!buf)
    return ERR_MEM;
  pbuf_copy_partial(p, buf, p->tot_len, 0);
  vnet_tx_wait(buf, p->tot_len);
  return ERR_OK;
}

static err_t interface_init(struct netif *nif) {
  nif->name[0] = 'v';
  nif->name[1] = 'n';
  nif->mtu = MTU;
  nif->hwaddr_len = ETH_HWADDR_LEN;
  vnet_mac(nif->hwaddr);
  nif->flags = NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET | NETIF_FLAG_LINK_UP;
  nif->output = etharp_output;
  nif->linkoutput = linkoutput;
  return ERR_OK;
}

// One frame into lwIP. Called with the network lock held.
static void input_frame(const uint8_t *frame, size_t len) {
  struct pbuf *p = pbuf_alloc(PBUF_RAW, (u16_t)len, PBUF_RAM);
  if (!p) {
    netif_count_rx(0);
    return;
  }
  pbuf_take(p, frame, (u16_t)len);
  // ethernet_input frees the pbuf in every case, also when it rejects it.
  if (vnet_netif.input(p, &vnet_netif) != ERR_OK)
    pbuf_free(p);
  netif_count_rx(1);
}

// The receive coroutine's state: a batch of frames taken from the card,
// kept here while its section waits for the lock.
static struct rx {
  struct waiter w;
  struct net_req req;
  int n;                             // frames in the batch; 0: none waiting
  uint8_t *frame[RX_BATCH];
  size_t len[RX_BATCH];
} rx;

static void rx_section(void *arg) {
  struct rx *r = arg;
  for (int i = 0; i < r->n; i++)
    input_frame(r->frame[i], r->len[i]);
}

// The batch has been fed to lwIP: give the card its buffers back.
static int rx_done(struct rx *r) {
  int full = r->n == RX_BATCH;
  for (int i = 0; i < r->n; i++)
    vnet_rx_release(r->frame[i]);
  r->n = 0;
  return full;
}

static int rx_poll(void *arg) {
  struct rx *r = arg;
  if (r->n) {                        // woken: has our batch's section run?
    if (!net_poll(&r->req))
      return CO_PENDING;
    if (rx_done(r))
      return CO_YIELD;
  }
  for (;;) {
    size_t len;
    while (r->n < RX_BATCH && (r->frame[r->n] = vnet_rx_next(&len)) != 0)
      r->len[r->n++] = len;
    if (!r->n) {
      // Register, then look once more: a frame that arrived in between has
      // already woken us (or will find us registered).
      waitq_add(vnet_rx_waitq(), &r->w, kco_current());
      if ((r->frame[0] = vnet_rx_look(&len)) == 0)   // (and interrupts on for the sleep)
        return CO_PENDING;
      waitq_remove(vnet_rx_waitq(), &r->w);
      r->len[r->n++] = len;
      continue;                      // and whatever else came
    }
    if (!net_submit(&r->req, rx_section, r))
      return CO_PENDING;             // the holder runs it; it wakes us
    if (rx_done(r))
      return CO_YIELD;
  }
}

int netif_virtio_start(void) {
  if (!vnet_present())
    return -ENODEV;
  ip4_addr_t addr, mask, gw;
  IP4_ADDR(&addr, 10, 0, 2, 15);
  IP4_ADDR(&mask, 255, 255, 255, 0);
  IP4_ADDR(&gw, 10, 0, 2, 2);
  net_lock();
  struct netif *nif = netif_add(&vnet_netif, &addr, &mask, &gw, 0, interface_init, ethernet_input);
  if (nif) {
    netif_set_default(nif);
    netif_set_up(nif);
  }
  net_unlock();
  if (!nif)
    return -ENOMEM;
  if (kco_spawn(rx_poll, &rx, NET_PRIO) < 0)
    return -ENOMEM;
  kprintf("net: 10.0.2.15/24 via 10.0.2.2, lwIP " LWIP_VERSION_STRING "\n");
  return 0;
}
