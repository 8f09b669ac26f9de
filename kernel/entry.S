# First instructions of the kernel.
#
# OpenSBI starts only the boot hart here, in S-mode with paging off, a0 = hart id
# and a1 = physical address of the device tree. Other harts are started later
# through SBI HSM at secondary_entry with a1 = their hart index (the "opaque"
# argument), so each finds its own boot stack without any shared counter.
#include "param.h"

.section .text.entry
.globl _entry
_entry:
        # Clear .bss before any C runs (the boot stacks live there too, but
        # nothing is on them yet).
        la      t0, __bss_start
        la      t1, __bss_end
1:      bgeu    t0, t1, 2f
        sd      zero, 0(t0)
        addi    t0, t0, 8
        j       1b
2:      la      sp, boot_stacks
        li      t0, KSTACK_SIZE
        add     sp, sp, t0
        li      s0, 0           # frame pointer 0 ends every backtrace
        call    kmain
3:      wfi
        j       3b

.globl secondary_entry
secondary_entry:
        # sp = boot_stacks + (index + 1) * KSTACK_SIZE
        la      sp, boot_stacks
        addi    t0, a1, 1
        li      t1, KSTACK_SIZE
        mul     t0, t0, t1
        add     sp, sp, t0
        li      s0, 0
        call    secondary_main
4:      wfi
        j       4b

.section .bss
.balign 16
.globl boot_stacks
boot_stacks:
        .space  KSTACK_SIZE * BOARD_MAX_HARTS
