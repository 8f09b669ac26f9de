// The user-interrupt controller's model (see uintc_model.h).
#include "uintc_model.h"

void uintc_reset(struct uintc_model *m, int nrecv, int nhart, int hidw) {
  *m = (struct uintc_model){ .nrecv = nrecv, .nhart = nhart, .hidw = hidw };
}

uint64_t uintc_usip(const struct uintc_model *m) {
  uint64_t lines = 0;
  for (int r = 0; r < m->nrecv; r++)
    if (m->active[r] && m->pending[r] && m->hartid[r] < (uint64_t)m->nhart)
      lines |= 1ULL << m->hartid[r];
  return lines;
}

uint64_t uintc_mmio(struct uintc_model *m, int write, uint64_t addr, uint64_t wdata,
                    int *err) {
  uint64_t r = addr >> 5, reg = (addr >> 3) & 3;
  *err = (addr & 7) != 0 || r >= (uint64_t)m->nrecv;
  if (*err)
    return 0;
  if (write) {
    switch (reg) {
    case 0: m->pending[r] |= 1ULL << (wdata & 63); break;                 // SEND
    case 1: m->hartid[r] = wdata & ((1ULL << m->hidw) - 1); break;        // HARTID
    case 2: m->pending[r] |= wdata; break;                                // PENDING
    case 3: m->active[r] = wdata & 1; break;                              // ACTIVE
    }
    return 0;
  }
  switch (reg) {
  case 1: return m->hartid[r];
  case 2: { uint64_t p = m->pending[r]; m->pending[r] = 0; return p; }
  case 3: return m->active[r];
  }
  return 0;
}
