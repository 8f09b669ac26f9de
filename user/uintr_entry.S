# User-interrupt entry (utvec points here). Everything belongs to the interrupted
# code, which must continue untouched: save the caller-saved registers on its
# stack (RISC-V has no red zone below sp), run the C handler (which preserves the
# callee-saved ones, as any C function does), restore, and uret -- an emulated
# instruction on stock QEMU, written as a word so as not to depend on the
# assembler still knowing the N extension, which the ratified spec dropped
# (docs/NEXT.md).
#
# Two entries, one body: cops_uintr_entry clears USIP first and ends with uret
# (native N, where both are instructions); cops_uintr_entry_ecall ends with the SYS_uintr_ret ecall
# (kernel/abi.h), which on the emulated backend does the handler's `csrc uip`
# and the `uret` in one trap instead of two through M-mode. It restores every
# register but a0 and a7 itself and leaves those two in the popped frame, at
# sp - 64 and sp - 8, where the kernel takes them back from.
#include "abi.h"

.macro SAVE_CALLER_SAVED
        addi    sp, sp, -128
        sd      ra, 0(sp)
        sd      t0, 8(sp)
        sd      t1, 16(sp)
        sd      t2, 24(sp)
        sd      t3, 32(sp)
        sd      t4, 40(sp)
        sd      t5, 48(sp)
        sd      t6, 56(sp)
        sd      a0, 64(sp)
        sd      a1, 72(sp)
        sd      a2, 80(sp)
        sd      a3, 88(sp)
        sd      a4, 96(sp)
        sd      a5, 104(sp)
        sd      a6, 112(sp)
        sd      a7, 120(sp)
.endm

# All but a0 and a7.
.macro RESTORE_MOST
        ld      ra, 0(sp)
        ld      t0, 8(sp)
        ld      t1, 16(sp)
        ld      t2, 24(sp)
        ld      t3, 32(sp)
        ld      t4, 40(sp)
        ld      t5, 48(sp)
        ld      t6, 56(sp)
        ld      a1, 72(sp)
        ld      a2, 80(sp)
        ld      a3, 88(sp)
        ld      a4, 96(sp)
        ld      a5, 104(sp)
        ld      a6, 112(sp)
.endm

        .globl cops_uintr_entry
        .balign 4
cops_uintr_entry:
        csrci   0x044, 1        # csrc uip, USIP: first, so a post from here on raises it again
        SAVE_CALLER_SAVED
        call    cops_uintr_handler
        RESTORE_MOST
        ld      a0, 64(sp)
        ld      a7, 120(sp)
        addi    sp, sp, 128
        .word   0x00200073      # uret

        .globl cops_uintr_entry_ecall
        .balign 4
cops_uintr_entry_ecall:
        SAVE_CALLER_SAVED
        call    cops_uintr_handler
        RESTORE_MOST
        addi    sp, sp, 128     # a0 at sp - UINTR_RET_A0_OFF, a7 at sp - UINTR_RET_A7_OFF
        li      a7, SYS_uintr_ret
        ecall                   # returns where the interrupt struck, a0 and a7 restored
