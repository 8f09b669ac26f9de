# The first user instructions of every program.
#
# The kernel enters _start with a0 = argc, a1 = argv and sp 16-byte aligned
# below the argv area (docs/ABI.md, "Process start"). We only need to make the
# frame chain end here, call main, and hand its return value to exit().

        .section .text.crt0, "ax", @progbits
        .globl _start
        .type _start, @function
_start:
        # Zero in ra marks the outermost frame for a debugger's unwinder (user
        # code has no frame pointers: it unwinds by the DWARF call-frame
        # information); s0 is zeroed too, for code built with frame pointers.
        li      s0, 0
        li      ra, 0
        call    cops_start      # a0 = argc, a1 = argv; runs main as a coroutine
        call    exit            # a0 = main's return value = the exit status
1:      j       1b              # exit does not return; never fall into whatever follows
        .size _start, . - _start
