// The N-extension model (see nmodel.h). Every rule here is also a line of
// hw/rtl/ucsr.sv; the testbench in hw/tb/ checks the two agree.
#include "nmodel.h"

uint64_t nm_u_ideleg(const struct nm_hart *h, const struct nm_env *e) {
  return h->sideleg & e->mideleg & NM_U_INTS;
}

uint64_t nm_uip(const struct nm_hart *h, const struct nm_env *e) {
  uint64_t soft = __atomic_load_n(&h->uip, __ATOMIC_SEQ_CST);
  return (soft | e->lines) & nm_u_ideleg(h, e);
}

void nm_raise(struct nm_hart *h, uint64_t bits) {
  __atomic_fetch_or(&h->uip, bits & NM_U_INTS, __ATOMIC_SEQ_CST);
}

// Bits 9:8 of a CSR number: the lowest privilege that may access it.
static int allowed(const struct nm_env *e, uint32_t csr) {
  return e->priv >= ((csr >> 8) & 3);
}

// Inlined into nm_csr_access, so that the kernel's emulated csrr (the common
// case) runs as a leaf with no registers to save.
static inline __attribute__((always_inline)) int
read_csr(const struct nm_hart *h, const struct nm_env *e, uint32_t csr, uint64_t *val) {
  if (!allowed(e, csr))
    return -1;
  switch (csr) {
  case NM_CSR_USTATUS:  *val = h->ustatus; return 0;
  case NM_CSR_UIE:      *val = h->uie & nm_u_ideleg(h, e); return 0;
  case NM_CSR_UTVEC:    *val = h->utvec; return 0;
  case NM_CSR_USCRATCH: *val = h->uscratch; return 0;
  case NM_CSR_UEPC:     *val = h->uepc; return 0;
  case NM_CSR_UCAUSE:   *val = h->ucause; return 0;
  case NM_CSR_UTVAL:    *val = h->utval; return 0;
  case NM_CSR_UIP:      *val = nm_uip(h, e); return 0;
  case NM_CSR_SEDELEG:  *val = h->sedeleg; return 0;
  case NM_CSR_SIDELEG:  *val = h->sideleg; return 0;
  }
  return -1;
}

int nm_csr_read(const struct nm_hart *h, const struct nm_env *e, uint32_t csr,
                uint64_t *val) {
  return read_csr(h, e, csr, val);
}

// uip: only USIP is writable, and only while it is U's. old is the software
// bit as csr_write_op saw it. Another hart may set
// it at any moment (uintr_post), so the update is two atomic operations on the
// bits this write changes rather than a plain store: a csrc of some other bit
// cannot erase a post that landed after the read. Alone, it is exactly
// uip <- (uip & ~w) | (val & w).
static void write_uip(struct nm_hart *h, const struct nm_env *e, uint64_t old,
                      uint64_t val) {
  uint64_t w = NM_USIP & nm_u_ideleg(h, e);
  if (val & w)
    __atomic_fetch_or(&h->uip, val & w, __ATOMIC_SEQ_CST);
  if (old & ~val & w)
    __atomic_fetch_and(&h->uip, ~(old & ~val & w), __ATOMIC_SEQ_CST);
}

static void write_csr(struct nm_hart *h, const struct nm_env *e, uint32_t csr,
                      uint64_t old, uint64_t val) {
  uint64_t d = nm_u_ideleg(h, e);
  switch (csr) {
  case NM_CSR_USTATUS:  h->ustatus = val & (NM_USTATUS_UIE | NM_USTATUS_UPIE); break;
  case NM_CSR_UIE:      h->uie = (h->uie & ~d) | (val & d); break;
  case NM_CSR_UTVEC:                                       // MODE 2, 3 are reserved:
    if ((val & 2) == 0)                                    // such a write is ignored,
      h->utvec = val;                                      // as QEMU does for stvec
    break;
  case NM_CSR_USCRATCH: h->uscratch = val; break;
  case NM_CSR_UEPC:     h->uepc = val & ~1ULL; break;
  case NM_CSR_UCAUSE:   h->ucause = val; break;
  case NM_CSR_UTVAL:    h->utval = val; break;
  case NM_CSR_UIP:      write_uip(h, e, old, val); break;
  case NM_CSR_SEDELEG:  h->sedeleg = val & e->medeleg & NM_U_EXCS; break;
  case NM_CSR_SIDELEG:  h->sideleg = val & e->mideleg & NM_U_INTS; break;
  }
}

// The write half of a CSR instruction (op already checked). Kept out of line
// so that a pure read (csrr, the common case in the kernel's emulation) saves
// no registers for it.
static __attribute__((noinline)) void csr_write_op(struct nm_hart *h,
                                                   const struct nm_env *e, uint32_t csr,
                                                   int op, uint64_t old, uint64_t src) {
  // As for mip.SEIP in the privileged spec: a device's USIP shows in the value
  // read, but only the software bit takes part in csrrs/csrrc.
  if (csr == NM_CSR_UIP)
    old = (old & ~NM_USIP) |
          (__atomic_load_n(&h->uip, __ATOMIC_SEQ_CST) & NM_USIP & nm_u_ideleg(h, e));
  uint64_t val = op == NM_CSRRW ? src : op == NM_CSRRS ? (old | src) : (old & ~src);
  write_csr(h, e, csr, old, val);
}

void nm_clear_usip(struct nm_hart *h, const struct nm_env *e) {
  // csr_write_op with op CSRRC and src USIP: only the software bit takes part,
  // and write_uip clears it only if it was set and is U's.
  uint64_t soft = __atomic_load_n(&h->uip, __ATOMIC_SEQ_CST);
  write_uip(h, e, soft, soft & ~NM_USIP);
}

int nm_csr_access(struct nm_hart *h, const struct nm_env *e, uint32_t csr, int op,
                  uint64_t src, int write, uint64_t *old) {
  if (op < NM_CSRRW || op > NM_CSRRC || read_csr(h, e, csr, old) != 0)
    return -1;
  if (write)
    csr_write_op(h, e, csr, op, *old, src);
  return 0;
}

int nm_pending_irq(const struct nm_hart *h, const struct nm_env *e) {
  if (e->priv != NM_PRIV_U || !(h->ustatus & NM_USTATUS_UIE))
    return -1;
  uint64_t p = nm_uip(h, e) & h->uie;
  if (p & NM_UEIP)
    return NM_IRQ_UEI;
  if (p & NM_USIP)
    return NM_IRQ_USI;
  if (p & NM_UTIP)
    return NM_IRQ_UTI;
  return -1;
}

int nm_exception_to_u(const struct nm_hart *h, const struct nm_env *e, uint64_t cause) {
  if (e->priv != NM_PRIV_U || cause >= 64)
    return 0;
  return ((h->sedeleg & e->medeleg) >> cause) & 1;
}

uint64_t nm_trap(struct nm_hart *h, uint64_t cause, uint64_t pc, uint64_t tval) {
  h->ustatus = (h->ustatus & NM_USTATUS_UIE) ? NM_USTATUS_UPIE : 0;
  h->uepc = pc & ~1ULL;
  h->ucause = cause;
  h->utval = tval;
  uint64_t base = h->utvec & ~3ULL;
  if ((cause & NM_CAUSE_INTERRUPT) && (h->utvec & 3) == 1)
    return base + 4 * (cause & 63);
  return base;
}

int nm_uret(struct nm_hart *h, const struct nm_env *e, uint64_t *pc) {
  if (e->priv != NM_PRIV_U)
    return -1;
  h->ustatus = ((h->ustatus & NM_USTATUS_UPIE) ? NM_USTATUS_UIE : 0) | NM_USTATUS_UPIE;
  *pc = h->uepc;
  return 0;
}
