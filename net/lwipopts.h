// lwIP 2.1.3 configuration for Coral (lwIP's "lwipopts.h" convention; every
// option not set here keeps lwIP's default from lwip/opt.h).
//
// The shape: raw API only (NO_SYS = 1), IPv4 + ARP + ICMP + TCP over one
// Ethernet interface (virtio-net), a static address on QEMU's user network.
// lwIP is not thread-safe; Coral serializes every call into it with one lock
// (net/net.h), so lwIP's own protection is off.
#ifndef CORAL_LWIPOPTS_H
#define CORAL_LWIPOPTS_H

#define NO_SYS 1
#define SYS_LIGHTWEIGHT_PROT 0       // the network lock serializes everything
#define LWIP_SOCKET 0                // Coral's socket layer is net/socket.c
#define LWIP_NETCONN 0
#define LWIP_TIMERS 1                // sys_check_timeouts(), called by the timer coroutine
#define LWIP_SINGLE_NETIF 0          // the card and the loopback interface
// Loopback (net/loopif.c): 127.0.0.1 on lwIP's own loop interface, and packets
// to the guest's own address looped on the card's. lwIP queues such packets;
// with NO_SYS nobody delivers them but netif_poll_all, which the loopback
// coroutine calls whenever net_unlock sees a queue that is not empty.
#define LWIP_NETIF_LOOPBACK 1
#define LWIP_HAVE_LOOPIF 1
#define LWIP_NETIF_LOOPBACK_MULTITHREADING 0
// TCP initial sequence numbers a peer cannot guess (RFC 6528): net/isn.c.
#define LWIP_HOOK_FILENAME "isn.h"
#define LWIP_HOOK_TCP_ISN isn_next

// ---- memory: everything comes from kmalloc, so the kernel's memory counters
// see lwIP's heap, and nothing is reserved up front. Pools become kmalloc
// objects of the pool's size (kmalloc's slabs make those cheap).
#define MEM_LIBC_MALLOC 1
#define MEMP_MEM_MALLOC 1
#define MEM_ALIGNMENT 8
void *net_malloc(unsigned long size);
void *net_calloc(unsigned long count, unsigned long size);
void net_free(void *p);
#define mem_clib_malloc net_malloc
#define mem_clib_calloc net_calloc
#define mem_clib_free net_free
// With MEMP_MEM_MALLOC these counts limit nothing; they only have to satisfy
// lwIP's sanity checks. Connections are limited by the socket layer.
#define MEMP_NUM_TCP_PCB 2048
#define MEMP_NUM_TCP_PCB_LISTEN 16
#define MEMP_NUM_TCP_SEG 4096
#define MEMP_NUM_PBUF 1024
#define PBUF_POOL_SIZE 256

// ---- protocols ----
#define LWIP_IPV4 1
#define LWIP_IPV6 0
#define LWIP_ARP 1
#define LWIP_ETHERNET 1
#define LWIP_ICMP 1                  // the guest answers ping
#define LWIP_RAW 0
#define LWIP_UDP 0                   // no DHCP or DNS: the address is static
#define LWIP_DHCP 0
#define LWIP_IGMP 0
#define LWIP_TCP 1
#define IP_REASSEMBLY 0              // TCP segments fit in one frame (MSS below)
#define IP_FRAG 0
#define ARP_QUEUEING 1

// ---- TCP ----
#define TCP_MSS 1460                 // a full Ethernet frame
#define TCP_WND (8 * TCP_MSS)
#define TCP_SND_BUF (8 * TCP_MSS)
#define TCP_SND_QUEUELEN (4 * TCP_SND_BUF / TCP_MSS)
#define TCP_LISTEN_BACKLOG 1         // listen(fd, backlog) limits unaccepted connections
#define TCP_QUEUE_OOSEQ 1
#define SO_REUSE 1                   // SOF_REUSEADDR: a server restarts while old connections are in TIME_WAIT
#define LWIP_TCP_KEEPALIVE 0
// TIME_WAIT lasts 2 * TCP_MSL. lwIP's default (60 s) keeps a closed
// connection's control block for two minutes; on a virtual link that cannot
// reorder old segments into a new connection, 2 s (4 s in TIME_WAIT) is
// plenty, and the kernel's memory returns to idle soon after a load ends.
#define TCP_MSL 2000UL

// ---- checks and statistics ----
#define CHECKSUM_GEN_IP 1            // the card offloads nothing (no CSUM features negotiated)
#define CHECKSUM_CHECK_IP 1
#define CHECKSUM_GEN_TCP 1
#define CHECKSUM_CHECK_TCP 1
#define LWIP_STATS 0                 // the socket layer and driver keep their own counters
#define LWIP_NETIF_LINK_CALLBACK 0
#define LWIP_NETIF_STATUS_CALLBACK 0

#endif
