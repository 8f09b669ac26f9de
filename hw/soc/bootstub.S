# The SoC's ROM, at the Rocket's reset address (0x1000_0000): what QEMU's
# reset vector does for `make qemu`. Every hart enters OpenSBI's fw_jump at the
# start of RAM with a0 = its hart id and a1 = the device tree, which
# coral_soc.py preloads at DTB_ADDR. (LiteX's BIOS would jump there with
# a1 = 0, and fw_jump needs the tree.)
.section .text
.globl _start
_start:
        csrr    a0, mhartid
        li      a1, DTB_ADDR
        li      t0, RAM_BASE
        jr      t0
