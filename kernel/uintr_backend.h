// The two user-interrupt backends behind kernel/uintr.c (see uintr.h). Only
// uintr.c calls these.
#ifndef UINTR_BACKEND_H
#define UINTR_BACKEND_H
#include "uintr.h"

// kernel/uintr_emul.c
// (uintr_emul_deliver and uintr_native_enter/trap/leave are declared in
// uintr.h, for its inline wrappers.)
int uintr_emul_illegal(struct thread *t, uint32_t insn);
int uintr_emul_ecall_ret(struct thread *t);

// kernel/uintr_native.c
void uintr_native_init_hart(void);

#endif
