// The vDSO image (build/vdso.bin, built from vdso/ and linked at USER_VDSO),
// embedded in the kernel. kernel/vdso_map.c copies it into pages once at boot and
// maps those same physical pages into every process.
  .section .rodata
  .balign 8
  .globl _vdso_start
_vdso_start:
  .incbin VDSO_PATH
  .globl _vdso_end
_vdso_end:
