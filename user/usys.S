# System call stubs: one function per SYS_* number in kernel/abi.h.
#
# The C prototypes are in ulib.h. Arguments are already in a0..a5, where the
# calling convention put them, so a stub only loads the call number into a7 and
# traps. The kernel returns the result (or -errno) in a0, which is also where C
# expects a return value.

#include "abi.h"

        .text

# SYSCALL name, number: defines `name` as a global function.
.macro SYSCALL name, number
        .globl \name
        .type \name, @function
        .balign 4
\name:
        li      a7, \number
        ecall
        ret
        .size \name, . - \name
.endm

# The C preprocessor glues SYS_ onto the name; the assembler macro sees the
# number. (cpp runs first, so `SYS_\name` inside .macro would never expand.)
#define STUB(name) SYSCALL name, SYS_##name

STUB(exit)
STUB(getpid)
STUB(write)
STUB(read)
STUB(close)
STUB(pipe)
STUB(sleep)
STUB(yield)
STUB(spawn)
STUB(wait)
STUB(kill)
STUB(brk)
SYSCALL sys_uptime, SYS_uptime     # uptime() is in ulib.c: the call only without the vvar's timebase
STUB(kstat)
STUB(uwait)
STUB(thread_create)
STUB(thread_exit)
STUB(thread_join)
STUB(socket)
STUB(bind)
STUB(listen)
STUB(accept)
STUB(recv)
STUB(send)
STUB(shutdown)
STUB(setkmode)
STUB(uintr_recv)
STUB(dup)
STUB(connect)
