// C model of the user-interrupt controller hw/rtl/uintc.sv (register map in
// that file and in hw/README.md). Used by the differential testbench only:
// the kernel has no controller yet. Plain C11, <stdint.h> only.
#ifndef UINTC_MODEL_H
#define UINTC_MODEL_H
#include <stdint.h>

#define UINTC_MAX_RECV 64

struct uintc_model {
  int nrecv, nhart, hidw;              // as the RTL's parameters
  uint8_t active[UINTC_MAX_RECV];
  uint64_t hartid[UINTC_MAX_RECV];
  uint64_t pending[UINTC_MAX_RECV];
};

// Reset state (all receivers inactive, hart 0, nothing pending).
void uintc_reset(struct uintc_model *m, int nrecv, int nhart, int hidw);
// USIP line of every hart, bit h for hart h.
uint64_t uintc_usip(const struct uintc_model *m);
// One MMIO access (addr is the offset in the window). Returns the read data
// (0 for a write or an error) and sets *err for a misaligned address or a
// receiver out of range. A read of PENDING clears it.
uint64_t uintc_mmio(struct uintc_model *m, int write, uint64_t addr, uint64_t wdata,
                    int *err);

#endif
