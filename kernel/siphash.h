// SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed hash of short messages
// whose output an observer cannot predict without the 128-bit key. The kernel
// uses it where a peer must not guess a value from others it has seen: TCP's
// initial sequence numbers (net/isn.c, RFC 6528). Not a general-purpose
// cryptographic hash, and not used as one.
#ifndef SIPHASH_H
#define SIPHASH_H
#include <stddef.h>
#include <stdint.h>

// The 64-bit SipHash-2-4 of msg[0..len) under key (key[0]: bytes 0-7 of the
// 16-byte key as a little-endian word, key[1]: bytes 8-15).
uint64_t siphash24(const uint64_t key[2], const void *msg, size_t len);

#endif
