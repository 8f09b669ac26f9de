# make sim-probe: a tiny S-mode payload that OpenSBI enters in place of Coral
# on the simulated Rocket, to measure what Coral's timer tick is built from:
# cycles for 100 `rdtime` (this Rocket has no time CSR: each one traps to
# OpenSBI, which emulates it) and for 100 SBI set_timer calls. Prints both
# totals in hex through the SBI console, then "@@" (sim.py stops there).
.globl _start
_start:
  li s2, 100
  rdcycle s0
1: rdtime t0
  addi s2, s2, -1
  bnez s2, 1b
  rdcycle s1
  sub a0, s1, s0
  call hex
  li s2, 100
  rdcycle s0
2: li a0, -1
  li a7, 0          # legacy set_timer (far future)
  ecall
  addi s2, s2, -1
  bnez s2, 2b
  rdcycle s1
  sub a0, s1, s0
  call hex
  li a0, '@'
  call putc
  li a0, '@'
  call putc
  li a0, '\n'
  call putc
3: j 3b
hex:                # print a0 as 16 hex digits and a newline
  mv s3, a0
  mv s5, ra
  li s4, 60
4: srl a0, s3, s4
  andi a0, a0, 15
  li t1, 10
  blt a0, t1, 5f
  addi a0, a0, 'a'-10-'0'
5: addi a0, a0, '0'
  call putc
  addi s4, s4, -4
  bgez s4, 4b
  li a0, '\n'
  call putc
  mv ra, s5
  ret
putc:
  li a7, 1
  ecall
  ret
