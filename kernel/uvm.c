// User address spaces: see uvm.h.
#include "uvm.h"
#include "hart.h"
#include "spinlock.h"
#include "abi.h"
#include "klib.h"
#include "palloc.h"
#include "printf.h"
#include "riscv.h"

#define PA2PTE(pa) (((pa) >> 12) << 10)
#define USER_ROOT_ENTRIES 2          // root entries 0 and 1 cover [0, 0x80000000)

extern pte_t *kvm_root(void);

pte_t *uvm_create(void) {
  pte_t *root = palloc_zero(1);
  if (!root)
    return 0;
  pte_t *k = kvm_root();
  for (int i = USER_ROOT_ENTRIES; i < 512; i++)
    root[i] = k[i];                  // share the kernel half
  return root;
}

// The 4 KiB leaf PTE for user va (user mappings use no larger pages), creating
// tables if asked. NULL if va is not a user address, absent, or no memory.
static pte_t *walk(pte_t *root, uint64_t va, int create) {
  if (va >= USER_VA_END)
    return 0;
  return create ? pt_walk(root, va, 0, 1) : pt_leaf(root, va);
}

// A kernel copy on another hart may have translated one of the pages just
// made invalid before it saw them so: wait until each hart that is in a copy
// now has left that copy (uvm_copy_enter). Copies are short; this hart's own
// are not running (it is here).
static void wait_for_user_copies(void) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);   // (the leaves' stores before the looks)
  uint32_t me = this_hart()->index;
  for (uint32_t i = 0; i < board.nharts; i++) {
    if (i == me)
      continue;
    uint64_t seq = __atomic_load_n(&harts[i].user_copy_seq, __ATOMIC_ACQUIRE);
    if (seq & 1)
      while (__atomic_load_n(&harts[i].user_copy_seq, __ATOMIC_ACQUIRE) == seq)
        ;
  }
}

// Unmapping is two passes with a TLB flush between: the leaves are made
// invalid (keeping their addresses), every hart forgets the translations it
// may hold (a thread of the process may run on any of them, and the one
// calling here went on using them: without the flush a store reached a page
// after it was given back, and the page may belong to someone else by then),
// and only then are the pages freed. Callers serialize changes to one
// address space (sys_brk: the process's vm_lock).
void uvm_dealloc(pte_t *root, uint64_t start, uint64_t end) {
  int unmapped = 0;
  for (uint64_t va = ALIGN_UP(start, PAGE_SIZE); va < end; va += PAGE_SIZE) {
    pte_t *pte = walk(root, va, 0);
    if (pte && (*pte & PTE_V)) {
      *pte &= ~(pte_t)PTE_V;
      unmapped = 1;
    }
  }
  if (!unmapped)
    return;
  tlb_flush_all_harts(ALIGN_UP(start, PAGE_SIZE), end);
  wait_for_user_copies();
  for (uint64_t va = ALIGN_UP(start, PAGE_SIZE); va < end; va += PAGE_SIZE) {
    pte_t *pte = walk(root, va, 0);
    if (pte && *pte) {
      if (!(*pte & PTE_SHARED))
        pfree((void *)PTE2PA(*pte), 1);
      *pte = 0;
    }
  }
}

int uvm_alloc(pte_t *root, uint64_t start, uint64_t end, uint64_t perm) {
  start = ALIGN_DOWN(start, PAGE_SIZE);
  end = ALIGN_UP(end, PAGE_SIZE);
  if (end > USER_VA_END || start > end)
    return -ENOMEM;
  for (uint64_t va = start; va < end; va += PAGE_SIZE) {
    pte_t *pte = walk(root, va, 1);
    void *page = pte && !(*pte & PTE_V) ? palloc_zero(1) : 0;
    if (!page) {
      uvm_dealloc(root, start, va);
      return -ENOMEM;
    }
    *pte = PA2PTE((uint64_t)page) | perm | PTE_U | PTE_V | PTE_A | PTE_D;
  }
  return 0;
}

static void free_table(pte_t *table, int level) {
  for (int i = 0; i < 512; i++) {
    pte_t pte = table[i];
    if (!(pte & PTE_V))
      continue;
    if (level > 0 && !(pte & (PTE_R | PTE_W | PTE_X)))
      free_table((pte_t *)PTE2PA(pte), level - 1);
    else if (!(pte & PTE_SHARED))
      pfree((void *)PTE2PA(pte), 1);
  }
  pfree(table, 1);
}

// Roots of ended processes that some hart still holds in satp (uvm_activate
// keeps a table loaded across kernel work), chained through their first entry
// (a page address has its low bits clear, so the entry reads as invalid).
// The last holder frees each: its next satp write calls uvm_reap. A hart that
// sleeps holding one is woken, and moves to the kernel's table before it
// sleeps again (sched.c, idle_wait); KSTAT_QUIET waits for the list to empty.
uint32_t uvm_ndying;
static pte_t *dying;
static struct spinlock dying_lock = SPINLOCK_INIT("uvm dying");

// The harts (bit i: index i) that hold root in satp now.
static uint64_t root_holders(pte_t *root) {
  uint64_t held = 0;
  for (uint32_t i = 0; i < board.nharts; i++)
    if (__atomic_load_n(&harts[i].satp_root, __ATOMIC_SEQ_CST) == root)
      held |= 1ULL << i;
  return held;
}

void uvm_reap(void) {
  spin_lock(&dying_lock);
  for (pte_t **link = &dying; *link;) {
    pte_t *root = *link;
    if (root_holders(root)) {
      link = (pte_t **)&root[0];
      continue;
    }
    *link = (pte_t *)root[0];
    root[0] = 0;
    pfree(root, 1);
    __atomic_fetch_sub(&uvm_ndying, 1, __ATOMIC_SEQ_CST);
  }
  spin_unlock(&dying_lock);
}

void uvm_free(pte_t *root) {
  if (!root)
    return;
  for (int i = 0; i < USER_ROOT_ENTRIES; i++) {
    pte_t e = root[i];
    root[i] = 0;
    if (e & PTE_V)
      free_table((pte_t *)PTE2PA(e), 1);
  }
  if (this_hart()->satp_root == root)
    uvm_activate(0);
  // Announce it (seq_cst), then look for holders: a holder that moves off
  // after the look sees uvm_ndying and reaps it.
  spin_lock(&dying_lock);
  root[0] = (pte_t)dying;
  dying = root;
  __atomic_fetch_add(&uvm_ndying, 1, __ATOMIC_SEQ_CST);
  spin_unlock(&dying_lock);
  uvm_reap();
  // Holders left: wake them, a sleeping hart would hold it until its next
  // work (sched.c, idle_wait). The others free it at their next satp load.
  // (After the reap the page may be someone else's root: an interrupt too
  // many then, nothing worse.)
  uint64_t held = root_holders(root);
  for (uint32_t i = 0; held; i++, held >>= 1)
    if (held & 1)
      hart_ipi(i, IPI_ADDRSPACE);
}

int uvm_map_shared(pte_t *root, uint64_t va, uint64_t pa, uint64_t perm) {
  pte_t *pte = walk(root, va, 1);
  if (!pte || (*pte & PTE_V))
    return -ENOMEM;
  *pte = PA2PTE(pa) | perm | PTE_U | PTE_V | PTE_A | PTE_D | PTE_SHARED;
  return 0;
}

// (inline: copy_user's one-page case, on every transfer, uses it without a call)
static inline __attribute__((always_inline)) uint64_t translate(pte_t *root, uint64_t va,
                                                               uint64_t need) {
  pte_t *pte = walk(root, va, 0);
  if (!pte || !(*pte & PTE_V) || !(*pte & PTE_U) || (*pte & need) != need)
    return 0;
  return PTE2PA(*pte) + (va & (PAGE_SIZE - 1));
}

uint64_t uvm_translate(pte_t *root, uint64_t va, uint64_t need) { return translate(root, va, need); }

// Copy between a user range and a kernel buffer, page by page (the range is
// checked against USER_VA_END already).
static __attribute__((noinline)) int copy_user_pages(pte_t *root, uint64_t uva, char *kbuf,
                                                     size_t len, int to_user) {
  int r = 0;
  uvm_copy_enter();
  while (len > 0) {
    uint64_t pa = uvm_translate(root, uva, to_user ? PTE_W : PTE_R);
    if (!pa) {
      r = -EFAULT;
      break;
    }
    size_t n = PAGE_SIZE - (uva & (PAGE_SIZE - 1));
    if (n > len)
      n = len;
    if (to_user)
      memcpy((void *)pa, kbuf, n);
    else
      memcpy(kbuf, (const void *)pa, n);
    uva += n;
    kbuf += n;
    len -= n;
  }
  uvm_copy_exit();
  return r;
}

// (inline: copyout and copyin are each a copy_user, not a call to it)
static inline __attribute__((always_inline)) int copy_user(pte_t *root, uint64_t uva, char *kbuf,
                                                          size_t len, int to_user) {
  if (uva + len < uva || uva + len > USER_VA_END)
    return -EFAULT;
  // Within one page, the common case (a pipe's byte, a small struct): one
  // translation and one copy, a small frame (the page loop, with its ten
  // saved registers, is a function of its own), and a copy of a few bytes
  // done here rather than through memcpy's set-up. A 1-byte pipe transfer
  // spent about 80 instructions in the general loop and memcpy.
  if (len == 0 || (uva & (PAGE_SIZE - 1)) + len > PAGE_SIZE)
    return copy_user_pages(root, uva, kbuf, len, to_user);
  uvm_copy_enter();
  char *pa = (char *)translate(root, uva, to_user ? PTE_W : PTE_R);
  if (!pa) {
    uvm_copy_exit();
    return -EFAULT;
  }
  char *dst = to_user ? pa : kbuf;
  const char *src = to_user ? kbuf : pa;
  if (len > 8)
    memcpy(dst, src, len);
  else
    for (size_t i = 0; i < len; i++)
      dst[i] = src[i];
  uvm_copy_exit();
  return 0;
}

int uvm_load(pte_t *root, uint64_t dst, const void *src, size_t len) {
  while (len > 0) {
    uint64_t pa = uvm_translate(root, dst, 0);
    if (!pa)
      return -EFAULT;
    size_t n = PAGE_SIZE - (dst & (PAGE_SIZE - 1));
    if (n > len)
      n = len;
    memcpy((void *)pa, src, n);
    dst += n;
    src = (const char *)src + n;
    len -= n;
  }
  return 0;
}

int copyout(pte_t *root, uint64_t dst, const void *src, size_t len) {
  return copy_user(root, dst, (char *)src, len, 1);
}

int copyin(pte_t *root, void *dst, uint64_t src, size_t len) {
  return copy_user(root, src, dst, len, 0);
}

long copyinstr(pte_t *root, char *dst, uint64_t src, size_t max) {
  long r = -ENAMETOOLONG;
  uvm_copy_enter();
  for (size_t i = 0; i < max; i++) {
    uint64_t pa = src + i < USER_VA_END ? uvm_translate(root, src + i, PTE_R) : 0;
    if (!pa) {
      r = -EFAULT;
      break;
    }
    dst[i] = *(const char *)pa;
    if (dst[i] == 0) {
      r = (long)i;
      break;
    }
  }
  uvm_copy_exit();
  return r;
}


