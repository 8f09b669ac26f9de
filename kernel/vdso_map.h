// The kernel side of the vDSO: one copy of the image, mapped into every process.
#ifndef VDSO_MAP_H
#define VDSO_MAP_H
#include <stdint.h>
#include "uvm.h"
int vdso_init(void);                 // boot: copy and check the image; 0 or -1
// Map the vDSO (R+X, shared) and a fresh executor page (R+W) into a process.
int vdso_map(pte_t *pagetable);
#endif
