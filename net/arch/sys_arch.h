// lwIP port: operating-system emulation layer. Coral runs lwIP with NO_SYS = 1
// (no lwIP threads, semaphores or mailboxes): every call into lwIP is made by a
// kernel coroutine or a system call holding the network lock (net/net.h), so
// lwIP needs nothing from this header.
#ifndef CORAL_LWIP_ARCH_SYS_ARCH_H
#define CORAL_LWIP_ARCH_SYS_ARCH_H
#endif
