// lwIP port: compiler and platform definitions (lwIP's "arch/cc.h" convention).
// Coral is freestanding: no libc headers beyond what gcc provides itself, so
// the printf format macros lwIP would take from <inttypes.h> are spelled out
// here, and diagnostics and assertions go to the kernel console.
#ifndef CORAL_LWIP_ARCH_CC_H
#define CORAL_LWIP_ARCH_CC_H

#define LWIP_NO_INTTYPES_H 1
#define LWIP_NO_CTYPE_H 1
#define LWIP_NO_UNISTD_H 1

#define X8_F "02x"
#define U16_F "u"
#define S16_F "d"
#define X16_F "x"
#define U32_F "u"
#define S32_F "d"
#define X32_F "x"
#define SZT_F "lu"

#define BYTE_ORDER LITTLE_ENDIAN

void kprintf(const char *fmt, ...);
__attribute__((noreturn)) void kpanic(const char *fmt, ...);
unsigned int net_rand(void);

// lwIP's diagnostics are printf-style with an extra pair of parentheses.
#define LWIP_PLATFORM_DIAG(x) do { kprintf x; } while (0)
// An lwIP assertion is a kernel bug, never a consequence of what a peer sent.
#define LWIP_PLATFORM_ASSERT(x) kpanic("lwIP assertion \"%s\" failed at %s:%d", x, __FILE__, __LINE__)
#define LWIP_RAND() ((u32_t)net_rand())

#endif
