// Kernel trap handling: interrupts are dispatched to their handlers; any
// exception taken in S-mode is a kernel bug and produces a full report.
#ifndef TRAP_H
#define TRAP_H
#include <stdint.h>

// Saved by kernelvec.S, in this order: x1..x31 (index 0 = x1), then CSRs.
struct trapframe {
  uint64_t x[31];
  uint64_t sepc, sstatus, scause, stval;
};

void trap_init_hart(void);     // install the vector, enable interrupt sources
void kernel_trap(struct trapframe *tf);
void trap_report(const struct trapframe *tf);
// Handle an interrupt cause (scause with bit 63 set); 0 if it is not one we know.
int trap_interrupt(uint64_t cause);
const char *trap_exception_name(uint64_t cause);
#endif
