# full_switch for user programs: the inline stackful helpers in vdso/stackful.h
# name it, and its one copy lives in the vDSO. Tail-jump there through the
# vDSO's entry table (offset 96, checked by a _Static_assert in user/cops.c), so
# the switch sees exactly its caller's registers.
#include "abi.h"
        .globl full_switch
full_switch:
        li      t0, USER_VDSO
        ld      t0, 96(t0)
        jr      t0
