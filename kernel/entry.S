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
        # Only one hart may boot the kernel. OpenSBI should send one hart here,
        # but now and then (about one boot in 150 on QEMU 7.2 with Debian's
        # OpenSBI 1.1) a second one arrives too, and two harts clearing .bss
        # and running kmain wreck each other. The first to swap boot_claimed
        # boots. Any other parks: it publishes its hart id in entry_waiter and
        # spins until the boot hart writes its index + 1 into entry_go, then
        # enters as a secondary (kernel/main.c, start_secondaries). (Handing
        # it back to the firmware with HSM hart_stop does not work: the
        # firmware believes it is stopped already, and never starts it again.)
        la      t0, boot_claimed
        li      t1, 1
        amoswap.w.aq t1, t1, (t0)
        bnez    t1, 5f
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

5:      la      t0, entry_waiter
        sd      a0, 0(t0)       # a0 = our hart id
        fence   rw, rw
        la      t0, entry_go
6:      ld      a1, 0(t0)
        beqz    a1, 6b
        fence   rw, rw
        addi    a1, a1, -1      # our index
        j       secondary_entry

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

# In .data, not .bss: they must hold before .bss is cleared.
.section .data
.balign 8
.globl entry_waiter, entry_go
entry_waiter:                   # hart id of a hart parked at _entry, or -1
        .dword  -1
entry_go:                       # its index + 1, once the boot hart lets it go
        .dword  0
boot_claimed:
        .word   0

.section .bss
.balign 16
.globl boot_stacks
boot_stacks:
        .space  KSTACK_SIZE * BOARD_MAX_HARTS
