# Entry and trap stubs of the bare-metal N-extension test (see ntest.c).
# QEMU virt with -bios none jumps here in M-mode, on every hart: hart 0 runs
# the test, hart 1 is the receiver of the cross-hart UINTC check, others park.
# Memory is bare (satp = 0) and shared by all three modes, so each trap stub
# saves the caller-saved registers on the interrupted code's stack, calls its
# C handler with a pointer to them, restores them and returns with the
# mode's xRET. uret is emitted as a word: binutils 2.40 no longer knows it.
#define URET .word 0x00200073

  .section .text.start
  .globl _start
_start:
  csrr t0, mhartid
  li t1, 1
  beq t0, t1, 2f
  bnez t0, park
  la sp, stack_top
  call m_main
  j park
2:
  la sp, stack1_top
  call m_secondary
  .globl park
park:
  wfi
  j park
1:
  j 1b

# Frame: 16 saved registers; a7 at 15*8 is the ecall command (ntest.c reads it).
.macro SAVE
  addi sp, sp, -128
  sd ra, 0*8(sp)
  sd t0, 1*8(sp)
  sd t1, 2*8(sp)
  sd t2, 3*8(sp)
  sd t3, 4*8(sp)
  sd t4, 5*8(sp)
  sd t5, 6*8(sp)
  sd t6, 7*8(sp)
  sd a0, 8*8(sp)
  sd a1, 9*8(sp)
  sd a2, 10*8(sp)
  sd a3, 11*8(sp)
  sd a4, 12*8(sp)
  sd a5, 13*8(sp)
  sd a6, 14*8(sp)
  sd a7, 15*8(sp)
  mv a0, sp
.endm

.macro RESTORE
  ld ra, 0*8(sp)
  ld t0, 1*8(sp)
  ld t1, 2*8(sp)
  ld t2, 3*8(sp)
  ld t3, 4*8(sp)
  ld t4, 5*8(sp)
  ld t5, 6*8(sp)
  ld t6, 7*8(sp)
  ld a0, 8*8(sp)
  ld a1, 9*8(sp)
  ld a2, 10*8(sp)
  ld a3, 11*8(sp)
  ld a4, 12*8(sp)
  ld a5, 13*8(sp)
  ld a6, 14*8(sp)
  ld a7, 15*8(sp)
  addi sp, sp, 128
.endm

  .text
  .balign 4
  .globl m_trap
m_trap:
  SAVE
  call m_trap_c
  RESTORE
  mret

  .balign 4
  .globl s_trap
s_trap:
  SAVE
  call s_trap_c
  RESTORE
  sret

  .balign 4
  .globl u_trap
u_trap:
  SAVE
  call u_trap_c
  RESTORE
  URET

  .balign 4
  .globl u_trap1
u_trap1:               # hart 1's handler
  SAVE
  call u_trap1_c
  RESTORE
  URET

# Vectored utvec table: interrupt cause c enters at u_vec + 4*c. Only the
# slots a test expects to be used lead to u_trap; slot 0 (also where
# exceptions enter) is marked so a test can tell which slot was taken.
  .balign 64
  .globl u_vec
  .option push
  .option norvc        # 4-byte slots: a compressed j would be 2 bytes
u_vec:
  j u_vec_slot0        # 0: USI, and every exception
  j u_vec_bad          # 1
  j u_vec_bad          # 2
  j u_vec_bad          # 3
  j u_vec_bad          # 4: UTI (not used)
  j u_vec_bad          # 5
  j u_vec_bad          # 6
  j u_vec_bad          # 7
  j u_vec_slot8        # 8: UEI
  .option pop
u_vec_slot0:
  SAVE
  li a1, 0
  call u_vec_c
  RESTORE
  URET
u_vec_slot8:
  SAVE
  li a1, 8
  call u_vec_c
  RESTORE
  URET
u_vec_bad:
  SAVE
  li a1, -1
  call u_vec_c
  RESTORE
  URET

  .bss
  .balign 16
  .space 16384
stack_top:
  .space 8192
stack1_top:
