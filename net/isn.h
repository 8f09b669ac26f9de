// TCP initial sequence numbers that a peer cannot predict (RFC 6528), for
// lwIP's LWIP_HOOK_TCP_ISN (net/lwipopts.h names this file as its hook file).
#ifndef NET_ISN_H
#define NET_ISN_H
#include "lwip/ip_addr.h"

// Take the key from the device tree's rng-seed. Called once, before lwIP
// opens its first connection (net_start).
void isn_init(void);

// The ISN of a new connection: a clock that ticks every 4 microseconds plus
// a keyed hash of the connection's four addresses and ports.
u32_t isn_next(const ip_addr_t *local_ip, u16_t local_port, const ip_addr_t *remote_ip,
               u16_t remote_port);

#endif
