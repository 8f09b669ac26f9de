// The kernel's Sv39 page table (see vm.h for the layout). Large ranges use 2 MiB
// megapages where alignment allows; the kernel image uses 4 KiB pages so that its
// text, rodata and data get exact permissions.
#include "vm.h"
#include "klib.h"
#include "palloc.h"
#include "printf.h"
#include "riscv.h"
#include "hart.h"
#include "sbi.h"

#define LEVELS 3
#define MEGA (2UL << 20)
#define PA2PTE(pa) (((pa) >> 12) << 10)

extern char _kernel_start[], _etext[], _erodata[];

pte_t *kroot;                      // (read by uvm_activate, kernel/uvm.h)

// Find (creating if asked) the PTE for va at `level` (0 = 4 KiB leaf, 1 = 2 MiB).
pte_t *pt_walk(pte_t *root, uint64_t va, int level, int create) {
  pte_t *table = root;
  for (int l = LEVELS - 1; l > level; l--) {
    pte_t *pte = &table[VPN(va, l)];
    if (*pte & PTE_V) {
      if (*pte & (PTE_R | PTE_W | PTE_X))
        return 0;                      // a larger page is in the way
      table = (pte_t *)PTE2PA(*pte);
    } else {
      if (!create)
        return 0;
      pte_t *next = palloc_zero(1);
      if (!next)
        return 0;
      *pte = PA2PTE((uint64_t)next) | PTE_V;
      table = next;
    }
  }
  return &table[VPN(va, level)];
}

static void map_range(pte_t *root, uint64_t va, uint64_t pa, uint64_t size, uint64_t perm) {
  uint64_t end = va + size;
  while (va < end) {
    int mega = (va % MEGA) == 0 && (pa % MEGA) == 0 && end - va >= MEGA;
    pte_t *pte = pt_walk(root, va, mega ? 1 : 0, 1);
    if (!pte)
      kpanic("vm: cannot map %p (out of memory, or a larger page in the way)", (void *)va);
    if (*pte & PTE_V)
      kpanic("vm: remap of %p", (void *)va);
    // A and D preset: the kernel never relies on the hardware setting them.
    *pte = PA2PTE(pa) | perm | PTE_V | PTE_A | PTE_D | PTE_G;
    va += mega ? MEGA : PAGE_SIZE;
    pa += mega ? MEGA : PAGE_SIZE;
  }
}

static void map_device(pte_t *root, const struct mmio_dev *d) {
  if (!d->size)
    return;
  uint64_t base = ALIGN_DOWN(d->base, PAGE_SIZE);
  uint64_t size = ALIGN_UP(d->base + d->size, PAGE_SIZE) - base;
  map_range(root, KMMIO_BASE + base, base, size, PTE_R | PTE_W);
}

void kvm_init(const struct board *b) {
  kroot = palloc_zero(1);
  uint64_t text = (uint64_t)_kernel_start, etext = (uint64_t)_etext, erodata = (uint64_t)_erodata;
  uint64_t ram_end = b->mem_base + b->mem_size;
  map_range(kroot, text, text, etext - text, PTE_R | PTE_X);
  map_range(kroot, etext, etext, erodata - etext, PTE_R);
  map_range(kroot, erodata, erodata, ram_end - erodata, PTE_R | PTE_W);
  // RAM below the kernel belongs to OpenSBI (and PMP-protected): leave it unmapped.
  map_device(kroot, &b->uart);
  map_device(kroot, &b->plic);
  map_device(kroot, &b->finisher);
  map_device(kroot, &b->uintc);
  for (uint32_t i = 0; i < b->nvirtio; i++)
    map_device(kroot, &b->virtio[i]);
}

void kvm_enable_hart(void) {
  sfence_vma();
  csr_write(satp, SATP_SV39 | ((uint64_t)kroot >> 12));
  sfence_vma();
  this_hart()->satp_root = kroot;
}

pte_t *kvm_root(void) { return kroot; }

// One firmware call per other hart (ids may be anywhere below 2^32, so no one
// mask holds them all); each returns once that hart has fenced. Parked harts
// (bootargs harts=N) never ran user code and are not online.
void tlb_flush_all_harts(uint64_t start, uint64_t end) {
  uint32_t me = this_hart()->index;
  for (uint32_t i = 0; i < board.nharts; i++) {
    if (i == me || !__atomic_load_n(&harts[i].online, __ATOMIC_ACQUIRE))
      continue;
    long err = sbi_remote_sfence_vma(1, harts[i].hartid, start, end - start);
    if (err)
      kpanic("vm: the firmware's remote sfence.vma failed on hart %u (SBI error %ld)", harts[i].hartid, err);
  }
  sfence_vma();
}

pte_t kvm_lookup(uint64_t va) {
  pte_t *table = kroot;
  for (int l = LEVELS - 1; l >= 0; l--) {
    pte_t pte = table[VPN(va, l)];
    if (!(pte & PTE_V))
      return 0;
    if (pte & (PTE_R | PTE_W | PTE_X))
      return pte;
    table = (pte_t *)PTE2PA(pte);
  }
  return 0;
}
