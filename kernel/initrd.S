// The initrd (see initrd.h): the archive of user programs, packed by
// scripts/mkinitrd.py and linked into the kernel's read-only data. The Makefile
// names the archive with -DINITRD_PATH=\"build/initrd.img\" (a quoted string);
// this file is run through the C preprocessor, so .incbin sees the path.
// kernel/main.c passes [_initrd_start, _initrd_end) to initrd_open().
//
// Without INITRD_PATH the archive is empty (zero bytes), which initrd_open()
// rejects: the kernel still links, and says at boot that it has no programs.

  .section .rodata
  .balign 8
  .globl _initrd_start
_initrd_start:
#ifdef INITRD_PATH
  .incbin INITRD_PATH
#else
  .warning "INITRD_PATH is not defined: the kernel carries no user programs"
#endif
  .globl _initrd_end
_initrd_end:
