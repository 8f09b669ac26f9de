// Memory: allocator counters inside the running kernel, and the kernel page
// table's permissions.
#include "ktest.h"
#include "hart.h"
#include "klib.h"
#include "kmalloc.h"
#include "palloc.h"
#include "vm.h"

extern char _kernel_start[], _etext[], _erodata[], _kernel_end[];

KTEST(palloc_counts_and_contiguity) {
  struct palloc_stats a, b;
  palloc_get_stats(&a);
  KCHECK_EQ(a.total_pages * PAGE_SIZE + (uint64_t)_kernel_end - board.mem_base <= board.mem_size, 1);
  char *p = palloc(8);
  KREQUIRE(p);
  memset(p, 0xab, 8 * PAGE_SIZE);             // all 8 pages are ours
  palloc_get_stats(&b);
  KCHECK_EQ(b.free_pages, a.free_pages - 8);
  pfree(p, 8);
  palloc_get_stats(&b);
  KCHECK_EQ(b.free_pages, a.free_pages);
}

KTEST(kmalloc_live_counts_return_to_start) {
  struct kmalloc_stats a, b;
  kmalloc_get_stats(&a);
  void *small[64];
  for (int i = 0; i < 64; i++) {
    small[i] = kmalloc((size_t)(1 + i * 37));
    KREQUIRE(small[i]);
    memset(small[i], i, (size_t)(1 + i * 37));
  }
  void *big = kmalloc(3 * PAGE_SIZE + 1);
  KREQUIRE(big);
  kmalloc_get_stats(&b);
  KCHECK_EQ(b.live_objects, a.live_objects + 65);
  for (int i = 0; i < 64; i++)
    kfree(small[i]);
  kfree(big);
  kmalloc_get_stats(&b);
  KCHECK_EQ(b.live_objects, a.live_objects);
  KCHECK_EQ(b.live_bytes, a.live_bytes);
}

KTEST(kernel_page_permissions) {
  pte_t text = kvm_lookup((uint64_t)_kernel_start);
  pte_t ro = kvm_lookup((uint64_t)_etext);
  pte_t data = kvm_lookup((uint64_t)_erodata);
  pte_t ram_end = kvm_lookup(board.mem_base + board.mem_size - 1);
  pte_t uart = kvm_lookup(KMMIO_BASE + board.uart.base);
  KCHECK((text & (PTE_R | PTE_X)) == (PTE_R | PTE_X) && !(text & PTE_W));
  KCHECK((ro & PTE_R) && !(ro & (PTE_W | PTE_X)));
  KCHECK((data & (PTE_R | PTE_W)) == (PTE_R | PTE_W) && !(data & PTE_X));
  KCHECK(ram_end & PTE_W);
  KCHECK((uart & (PTE_R | PTE_W)) == (PTE_R | PTE_W));
  KCHECK(!(text & PTE_U) && !(data & PTE_U));
  KCHECK_EQ(kvm_lookup(0x1000), 0);           // the user half is empty
  KCHECK_EQ(kvm_lookup(board.mem_base + board.mem_size), 0);
}
