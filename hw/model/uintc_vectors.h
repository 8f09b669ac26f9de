// Random accesses to the user-interrupt controller, one generator for both
// implementations that hw/model/uintc_model.c defines: the RTL's differential
// testbench (hw/tb/tb_diff.cpp) and the replay against QEMU's device
// (hw/qemu/tests/ntest.c) draw their accesses here, so the two are held to
// the model by the same kind of sequence. Plain C11, <stdint.h> only.
#ifndef UINTC_VECTORS_H
#define UINTC_VECTORS_H
#include <stdint.h>

struct uintc_vectors {
  uint64_t state;      // xorshift64* state: any value but 0
  int nrecv;           // receivers that exist (accesses go up to two past them)
  uint64_t window;     // bytes of the device an access may fall anywhere in
  int misaligned;      // whether an access may be misaligned (QEMU faults one)
};

struct uintc_access {
  int write;
  uint64_t addr, wdata;
};

// The next pseudo-random 64-bit number of v's sequence.
uint64_t uintc_vectors_next(struct uintc_vectors *v);
// One access: mostly a register (SEND, CLAIM, PENDING, HART, ACTIVE) of
// receiver 0 or 1, so that a hart's line rises and falls often; now and then
// of any receiver or one past the last, an offset beside a register, a
// misaligned address (if allowed), or anywhere in the window. The data suit
// the register: a vector number, a hart (one that does not exist too), bits.
struct uintc_access uintc_vectors_access(struct uintc_vectors *v);

#endif
