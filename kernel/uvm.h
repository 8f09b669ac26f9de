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
#include "hart.h"

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
// A copy to or from user memory runs between these (copyin, copyout,
// copyinstr, and any other read of a user page by its physical address). The
// page it translated may be unmapped meanwhile by a sibling thread's brk on
// another hart; uvm_dealloc frees pages only after every hart that was in
// such a copy when the leaves went invalid has left it. The fences order the
// count against the walk (a copy that starts after the invalidation sees it).
// Never nested, never across a yield: a copy is a few loads and stores.
// (Plain stores: only this hart writes its count; others read it atomically.)
static inline void uvm_copy_enter(void) {
  volatile uint64_t *seq = &this_hart()->user_copy_seq;
  *seq = *seq + 1;
  __asm__ volatile("fence rw, rw" ::: "memory");
}
static inline void uvm_copy_exit(void) {
  volatile uint64_t *seq = &this_hart()->user_copy_seq;
  __asm__ volatile("fence rw, w" ::: "memory");
  *seq = *seq + 1;
}

// Run on root's address space (NULL: the kernel's table). Lazy: a hart that
// leaves a process for kernel work keeps its table loaded, and loads nothing
// if it comes back to it (every root maps the kernel alike, and kernel code
// reaches user memory through explicit walks, never satp). A satp write
// empties the TLB, and under QEMU the software TLB and its jump cache, whose
// refills cost the host more than the guest's own instructions: at -smp 2
// the old leave-and-reload made about 1.2 loads per matrixd request.
// A table so kept may belong to a process that ends meanwhile: uvm_free
// then leaves its root page to the last hart that holds it (uvm_reap).
extern uint32_t uvm_ndying;        // roots freed but still loaded somewhere
void uvm_reap(void);
static inline void uvm_activate(pte_t *root) {
  extern pte_t *kroot;             // (kernel/vm.c: the kernel's table, fixed after boot)
  pte_t *want = root ? root : kroot;
  struct hart *h = this_hart();
  if (h->satp_root == want)
    return;
  csr_write(satp, SATP_SV39 | ((uint64_t)want >> 12));
  sfence_vma();
  h->satp_loads++;
  // (after the fence: a hart that reads this no longer walks the old root)
  __atomic_store_n(&h->satp_root, want, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&uvm_ndying, __ATOMIC_SEQ_CST))
    uvm_reap();
}

#endif
