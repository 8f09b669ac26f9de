// User address spaces (Sv39). A process's root page table shares the kernel's
// upper entries (RAM identity map and device window, never PTE_U), so traps and
// kernel code run on it unchanged; the user half (below 0x80000000, root entries
// 0 and 1) belongs to the process alone.
//
// copyin/copyout walk the process's own page table and copy through the kernel's
// identity map of RAM, so they work from any hart and any kernel coroutine,
// whatever satp is loaded; every user range is checked page by page for presence
// and the PTE_U and R/W permissions it needs.
#ifndef UVM_H
#define UVM_H
#include <stdint.h>
#include <stddef.h>
#include "vm.h"
#include "riscv.h"

#define USER_VA_END 0x80000000UL     // user addresses are below this

pte_t *uvm_create(void);                                    // NULL if out of memory
void uvm_free(pte_t *root);                                 // frees user pages and tables
// Allocate zeroed pages for [start, end) (page-rounded) with perm (PTE_R/W/X; PTE_U
// is added). Returns 0 or -ENOMEM (then nothing stays mapped).
int uvm_alloc(pte_t *root, uint64_t start, uint64_t end, uint64_t perm);
void uvm_dealloc(pte_t *root, uint64_t start, uint64_t end); // unmap and free
// Map a kernel-owned page (e.g. the vDSO) into a process; it is marked
// PTE_SHARED and never freed with the process. 0 or -ENOMEM.
int uvm_map_shared(pte_t *root, uint64_t va, uint64_t pa, uint64_t perm);
// Physical address of user va if mapped with all of `need` (PTE_R/W/X) and PTE_U.
uint64_t uvm_translate(pte_t *root, uint64_t va, uint64_t need);
// Kernel-internal: fill mapped user pages regardless of their R/W/X permissions
// (loading read-only program text). 0 or -EFAULT if a page is not mapped.
int uvm_load(pte_t *root, uint64_t dst, const void *src, size_t len);
int copyout(pte_t *root, uint64_t dst, const void *src, size_t len);   // 0 or -EFAULT
int copyin(pte_t *root, void *dst, uint64_t src, size_t len);          // 0 or -EFAULT
// Copy a NUL-terminated string of at most max bytes (including the NUL).
// Returns its length, -EFAULT, or -ENAMETOOLONG if no NUL within max bytes.
long copyinstr(pte_t *root, char *dst, uint64_t src, size_t max);
// Load satp (root NULL: the kernel's table). Inline: a process switch does it twice.
static inline void uvm_activate(pte_t *root) {
  extern pte_t *kroot;             // (kernel/vm.c: the kernel's table, fixed after boot)
  csr_write(satp, SATP_SV39 | ((uint64_t)(root ? root : kroot) >> 12));
  sfence_vma();
}

#endif
