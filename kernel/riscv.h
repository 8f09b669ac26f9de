// RISC-V privileged-architecture helpers for S-mode: CSR access, status bits,
// counters. Only what the kernel uses; names follow the privileged spec.
#ifndef RISCV_H
#define RISCV_H
#include <stdint.h>

#define csr_read(csr) ({ uint64_t v_; __asm__ volatile("csrr %0, " #csr : "=r"(v_)); v_; })
#define csr_write(csr, val) __asm__ volatile("csrw " #csr ", %0" :: "rK"((uint64_t)(val)) : "memory")
#define csr_set(csr, bits) __asm__ volatile("csrs " #csr ", %0" :: "rK"((uint64_t)(bits)) : "memory")
#define csr_clear(csr, bits) __asm__ volatile("csrc " #csr ", %0" :: "rK"((uint64_t)(bits)) : "memory")

// sstatus
#define SSTATUS_SIE (1UL << 1)
#define SSTATUS_SPIE (1UL << 5)
#define SSTATUS_SPP (1UL << 8)
#define SSTATUS_SUM (1UL << 18)

// sie / sip bits and interrupt causes
#define IRQ_S_SOFT 1
#define IRQ_S_TIMER 5
#define IRQ_S_EXT 9
#define SIE_SSIE (1UL << IRQ_S_SOFT)
#define SIE_STIE (1UL << IRQ_S_TIMER)
#define SIE_SEIE (1UL << IRQ_S_EXT)
#define SCAUSE_INTERRUPT (1UL << 63)

// Exception causes (scause without the interrupt bit)
#define EXC_INST_MISALIGNED 0
#define EXC_INST_ACCESS 1
#define EXC_ILLEGAL_INST 2
#define EXC_BREAKPOINT 3
#define EXC_LOAD_MISALIGNED 4
#define EXC_LOAD_ACCESS 5
#define EXC_STORE_MISALIGNED 6
#define EXC_STORE_ACCESS 7
#define EXC_ECALL_U 8
#define EXC_ECALL_S 9
#define EXC_INST_PAGE_FAULT 12
#define EXC_LOAD_PAGE_FAULT 13
#define EXC_STORE_PAGE_FAULT 15

// Sstc: the supervisor timer compare register (CSR 0x14d).
#define CSR_STIMECMP 0x14d

static inline void intr_on(void) { csr_set(sstatus, SSTATUS_SIE); }
static inline void intr_off(void) { csr_clear(sstatus, SSTATUS_SIE); }
static inline int intr_get(void) { return (csr_read(sstatus) & SSTATUS_SIE) != 0; }

static inline uint64_t rdtime(void) { uint64_t t; __asm__ volatile("rdtime %0" : "=r"(t)); return t; }
// Under QEMU -icount shift=0 these count guest instructions exactly.
static inline uint64_t rdinstret(void) { uint64_t t; __asm__ volatile("rdinstret %0" : "=r"(t)); return t; }
static inline uint64_t rdcycle(void) { uint64_t t; __asm__ volatile("rdcycle %0" : "=r"(t)); return t; }

static inline void sfence_vma(void) { __asm__ volatile("sfence.vma zero, zero" ::: "memory"); }
static inline void wfi(void) { __asm__ volatile("wfi" ::: "memory"); }

static inline uint64_t read_fp(void) { uint64_t fp; __asm__ volatile("mv %0, s0" : "=r"(fp)); return fp; }

#endif
