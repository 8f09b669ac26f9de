# Entering and leaving U-mode.
#
# user_return(uc) saves the kernel's ra, sp, s0 (the frame pointer) and tp
# (which user code may clobber) in uc->k, points sscratch at uc, loads every
# user register from uc->x and sret's to uc->pc. The next trap from U-mode
# lands in uservec, which saves the user registers into uc->x, restores those
# four and returns -- so the trap looks like a return from user_return().
# s1-s11 are not kept: the one caller (switcher.c's enter_user) tells the
# compiler the call clobbers them, so it keeps only what it needs across the
# call (a few values), instead of 11 saves and 11 loads on every trap.
# The caller must have interrupts off: stvec points at uservec only in between.
#
# A system call that only reads a value (syscall_fast in kernel/syscall.c
# says which), and the submit of an async read or write of a pipe
# (syscall_fast_async), is answered without that return: uservec saves just the
# registers C code may change and those the kernel replaces, calls
# syscall_fast on the switcher's stack, and if it answers, restores them and
# sret's. Otherwise (and for every other trap) it saves the rest and returns
# into run_thread as above.

#include "purecalls.h"

.equ K_RA, 0
.equ K_SP, 8
.equ K_S0, 16
.equ K_TP, 24
.equ X, 32              # uc->x[0]
.equ PC, 288

.globl user_return
.balign 4
user_return:
        sd      ra, K_RA(a0)
        sd      sp, K_SP(a0)
        sd      s0, K_S0(a0)
        sd      tp, K_TP(a0)
        csrw    sscratch, a0
        la      t0, uservec
        csrw    stvec, t0
        ld      t0, PC(a0)
        csrw    sepc, t0
        # sret to U-mode (SPP = 0) with interrupts enabled there (SPIE = 1)
        li      t0, (1 << 8)
        csrc    sstatus, t0
        li      t0, (1 << 5)
        csrs    sstatus, t0
        ld      x1, (X + 8 * 1)(a0)
        ld      x2, (X + 8 * 2)(a0)
        ld      x3, (X + 8 * 3)(a0)
        ld      x4, (X + 8 * 4)(a0)
        ld      x5, (X + 8 * 5)(a0)
        ld      x6, (X + 8 * 6)(a0)
        ld      x7, (X + 8 * 7)(a0)
        ld      x8, (X + 8 * 8)(a0)
        ld      x9, (X + 8 * 9)(a0)
        ld      x11, (X + 8 * 11)(a0)
        ld      x12, (X + 8 * 12)(a0)
        ld      x13, (X + 8 * 13)(a0)
        ld      x14, (X + 8 * 14)(a0)
        ld      x15, (X + 8 * 15)(a0)
        ld      x16, (X + 8 * 16)(a0)
        ld      x17, (X + 8 * 17)(a0)
        ld      x18, (X + 8 * 18)(a0)
        ld      x19, (X + 8 * 19)(a0)
        ld      x20, (X + 8 * 20)(a0)
        ld      x21, (X + 8 * 21)(a0)
        ld      x22, (X + 8 * 22)(a0)
        ld      x23, (X + 8 * 23)(a0)
        ld      x24, (X + 8 * 24)(a0)
        ld      x25, (X + 8 * 25)(a0)
        ld      x26, (X + 8 * 26)(a0)
        ld      x27, (X + 8 * 27)(a0)
        ld      x28, (X + 8 * 28)(a0)
        ld      x29, (X + 8 * 29)(a0)
        ld      x30, (X + 8 * 30)(a0)
        ld      x31, (X + 8 * 31)(a0)
        ld      x10, (X + 8 * 10)(a0)
        sret

.globl uservec
.balign 4
uservec:
        csrrw   a0, sscratch, a0        # a0 = uc, sscratch = user a0
        # What C code may change, and what the kernel replaces (sp, gp, tp, s0).
        sd      x1, (X + 8 * 1)(a0)
        sd      x2, (X + 8 * 2)(a0)
        sd      x3, (X + 8 * 3)(a0)
        sd      x4, (X + 8 * 4)(a0)
        sd      x5, (X + 8 * 5)(a0)
        sd      x6, (X + 8 * 6)(a0)
        sd      x7, (X + 8 * 7)(a0)
        sd      x8, (X + 8 * 8)(a0)
        sd      x11, (X + 8 * 11)(a0)
        sd      x12, (X + 8 * 12)(a0)
        sd      x13, (X + 8 * 13)(a0)
        sd      x14, (X + 8 * 14)(a0)
        sd      x15, (X + 8 * 15)(a0)
        sd      x16, (X + 8 * 16)(a0)
        sd      x17, (X + 8 * 17)(a0)
        sd      x28, (X + 8 * 28)(a0)
        sd      x29, (X + 8 * 29)(a0)
        sd      x30, (X + 8 * 30)(a0)
        sd      x31, (X + 8 * 31)(a0)
        csrr    t0, sscratch
        sd      t0, (X + 8 * 10)(a0)
        csrw    sscratch, a0            # uc again: found there after the call
        ld      sp, K_SP(a0)
        ld      s0, K_S0(a0)
        ld      tp, K_TP(a0)
        la      t0, kernelvec           # a fault in the kernel from here on is the kernel's
        csrw    stvec, t0
        csrr    t0, scause
        li      t1, 8                   # EXC_ECALL_U
        bne     t0, t1, full
        li      t1, 32                  # a7 (still the caller's): a pure call?
        bgeu    a7, t1, 2f              # (SYS_ASYNC makes it >= 32)
        li      t1, PURE_CALLS
        srl     t1, t1, a7
        andi    t1, t1, 1
        beqz    t1, full
        call    syscall_fast            # a0 = uc = the thread (uc is its first member)
        j       3f
2:      li      t1, SYS_ASYNC | SYS_read   # or an async read or write?
        beq     a7, t1, 4f
        li      t1, SYS_ASYNC | SYS_write
        bne     a7, t1, full
4:      call    syscall_fast_async
3:      csrr    t0, sscratch
        bnez    a0, 1f
        # Answered: straight back to U, past the ecall (s1-s11 were never touched).
        la      t1, uservec
        csrw    stvec, t1
        csrr    t1, sepc
        addi    t1, t1, 4
        csrw    sepc, t1
        ld      x1, (X + 8 * 1)(t0)
        ld      x2, (X + 8 * 2)(t0)
        ld      x3, (X + 8 * 3)(t0)
        ld      x4, (X + 8 * 4)(t0)
        ld      x6, (X + 8 * 6)(t0)
        ld      x7, (X + 8 * 7)(t0)
        ld      x8, (X + 8 * 8)(t0)
        ld      x10, (X + 8 * 10)(t0)
        ld      x11, (X + 8 * 11)(t0)
        ld      x12, (X + 8 * 12)(t0)
        ld      x13, (X + 8 * 13)(t0)
        ld      x14, (X + 8 * 14)(t0)
        ld      x15, (X + 8 * 15)(t0)
        ld      x16, (X + 8 * 16)(t0)
        ld      x17, (X + 8 * 17)(t0)
        ld      x28, (X + 8 * 28)(t0)
        ld      x29, (X + 8 * 29)(t0)
        ld      x30, (X + 8 * 30)(t0)
        ld      x31, (X + 8 * 31)(t0)
        ld      x5, (X + 8 * 5)(t0)
        sret
1:      mv      a0, t0
full:   # The full path: the registers C code keeps and the pc, then back into run_thread.
        csrr    t0, sepc
        sd      t0, PC(a0)
        sd      x9, (X + 8 * 9)(a0)
        sd      x18, (X + 8 * 18)(a0)
        sd      x19, (X + 8 * 19)(a0)
        sd      x20, (X + 8 * 20)(a0)
        sd      x21, (X + 8 * 21)(a0)
        sd      x22, (X + 8 * 22)(a0)
        sd      x23, (X + 8 * 23)(a0)
        sd      x24, (X + 8 * 24)(a0)
        sd      x25, (X + 8 * 25)(a0)
        sd      x26, (X + 8 * 26)(a0)
        sd      x27, (X + 8 * 27)(a0)
        csrw    sscratch, zero
        ld      ra, K_RA(a0)
        ret
