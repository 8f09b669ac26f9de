// C model of the user-interrupt controller hw/rtl/uintc.sv (register map in
// that file and in hw/README.md: the QEMU device's, which kernel/uintc.c
// drives). Both implementations are held to it: the RTL by the differential
// testbench (hw/tb/tb_diff.cpp), the QEMU device (the same map written again
// inside QEMU, hw/qemu/0002-hw-intc-coral-uintc.patch) by a replay in the
// bare-metal hw/qemu/tests/ntest.c, which links this file. Plain C11,
// <stdint.h> only.
#ifndef UINTC_MODEL_H
#define UINTC_MODEL_H
#include <stdint.h>

#define UINTC_MAX_RECV 64
#define UINTC_SEND_PAGE(r) ((uint64_t)(r) << 12)             // +0 SEND
#define UINTC_RECV_PAGE(r) (0x40000 + ((uint64_t)(r) << 12)) // +0 CLAIM, +8 PENDING
#define UINTC_CTRL(r) (0x80000 + ((uint64_t)(r) << 4))       // +0 HART, +8 ACTIVE

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
// One MMIO access (addr is the offset in the 1 MiB window). Returns the read
// data (0 for a write or an error) and sets *err for an access the map does
// not allow (misaligned, no such receiver or register, a write to CLAIM, a
// hart that does not exist); such an access changes nothing. A read of CLAIM
// clears the receiver's pending bits.
uint64_t uintc_mmio(struct uintc_model *m, int write, uint64_t addr, uint64_t wdata,
                    int *err);

#endif
