// The system calls the trap answers by itself (syscall_fast, kernel/uservec.S):
// those that only read a value. They never wait, wake nothing, and use no
// register of the thread but a0-a5. Included by assembly too.
#ifndef PURECALLS_H
#define PURECALLS_H
#include "abi.h"

#define PURE_CALLS ((1 << SYS_getpid) | (1 << SYS_uptime))

#endif
