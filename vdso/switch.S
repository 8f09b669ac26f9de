# The full-save context switch and the first-entry trampoline of stackful
# coroutines (vdso/stackful.h).

# void full_switch(struct full_ctx *save /*a0*/, const struct full_ctx *load /*a1*/)
# Saves every callee-saved register of the caller, loads the other context's and
# returns into it. This is what a switch costs when nothing is known about the
# call site.
.globl full_switch
full_switch:
        sd      ra, 0(a0)
        sd      sp, 8(a0)
        sd      s0, 16(a0)
        sd      s1, 24(a0)
        sd      s2, 32(a0)
        sd      s3, 40(a0)
        sd      s4, 48(a0)
        sd      s5, 56(a0)
        sd      s6, 64(a0)
        sd      s7, 72(a0)
        sd      s8, 80(a0)
        sd      s9, 88(a0)
        sd      s10, 96(a0)
        sd      s11, 104(a0)
        ld      ra, 0(a1)
        ld      sp, 8(a1)
        ld      s0, 16(a1)
        ld      s1, 24(a1)
        ld      s2, 32(a1)
        ld      s3, 40(a1)
        ld      s4, 48(a1)
        ld      s5, 56(a1)
        ld      s6, 64(a1)
        ld      s7, 72(a1)
        ld      s8, 80(a1)
        ld      s9, 88(a1)
        ld      s10, 96(a1)
        ld      s11, 104(a1)
        ret

# First instruction of every stackful coroutine: s0 holds its struct stackful.
# A CACS coroutine arrives from the switch in stackful.h, which left the
# executor's resume address in t2 for the side it resumes to store: store it
# in exec_cacs.pc (offset 32; a full-save coroutine does not use that slot).
# Clear s0 and ra so a backtrace from inside the coroutine ends here.
.globl stackful_trampoline
stackful_trampoline:
        sd      t2, 32(s0)
        mv      a0, s0
        li      s0, 0
        li      ra, 0
        call    stackful_main
        unimp
