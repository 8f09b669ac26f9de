// Sv39 kernel address space.
//   - RAM is identity-mapped (virtual = physical): text read+exec, rodata read,
//     everything else read+write.
//   - Device registers are mapped at KMMIO_BASE + physical address, in the upper
//     half, so that the lower half stays free for user processes.
#ifndef VM_H
#define VM_H
#include <stdint.h>
#include "board.h"

#define KMMIO_BASE 0xffffffc000000000UL

typedef uint64_t pte_t;
#define SATP_SV39 (8UL << 60)
#define PTE_V (1UL << 0)
#define PTE_R (1UL << 1)
#define PTE_W (1UL << 2)
#define PTE_X (1UL << 3)
#define PTE_U (1UL << 4)
#define PTE_G (1UL << 5)
#define PTE_A (1UL << 6)
#define PTE_D (1UL << 7)
#define PTE_SHARED (1UL << 8)   // software bit (RSW): page owned by the kernel, not the process

// Build the kernel page table from the board description (boot hart, paging off).
void kvm_init(const struct board *b);
// Turn paging on for the calling hart.
void kvm_enable_hart(void);
// The kernel virtual address of a device register block.
static inline volatile void *mmio(uint64_t pa) { return (volatile void *)(KMMIO_BASE + pa); }
// The PTE for va at `level` (0: 4 KiB leaf, 1: 2 MiB) in the table at root,
// creating intermediate tables if asked. NULL if absent, out of memory, or a
// larger page covers va. Shared by the kernel map and user address spaces.
pte_t *pt_walk(pte_t *root, uint64_t va, int level, int create);

#define VPN(va, level) (((va) >> (12 + 9 * (level))) & 0x1ff)
#define PTE2PA(pte) (((pte) >> 10) << 12)
// pt_walk's read-only case for a 4 KiB leaf, unrolled: three loads. Every
// user buffer a system call touches is translated through it.
static inline pte_t *pt_leaf(pte_t *root, uint64_t va) {
  pte_t e = root[VPN(va, 2)];
  if ((e & (PTE_V | PTE_R | PTE_W | PTE_X)) != PTE_V)
    return 0;                          // absent, or a larger page
  e = ((pte_t *)PTE2PA(e))[VPN(va, 1)];
  if ((e & (PTE_V | PTE_R | PTE_W | PTE_X)) != PTE_V)
    return 0;
  return &((pte_t *)PTE2PA(e))[VPN(va, 0)];
}
// Make every online hart (this one too) drop the translations it may have
// cached for [start, end), and return once all have: a leaf made invalid may
// still be in another hart's TLB, in use by a thread running there.
void tlb_flush_all_harts(uint64_t start, uint64_t end);
// Walk the kernel page table (tests and fault reports). Returns the leaf PTE or 0.
pte_t kvm_lookup(uint64_t va);

#endif
