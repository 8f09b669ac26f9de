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
  addr &= 0xfffff;                     // the window decodes 20 address bits
  uint64_t region = addr >> 18, off = addr & 0xfff, r = (addr >> 12) & 63;
  *err = 1;
  if (addr & 7)
    return 0;
  if (region == 2) {                   // control words
    if (addr >= UINTC_CTRL(UINTC_MAX_RECV))
      return 0;
    r = (addr >> 4) & 63;
  }
  if (r >= (uint64_t)m->nrecv || region == 3)
    return 0;
  if (region == 0) {                   // a send page
    if (!write) {
      *err = 0;                        // (any aligned read there: 0)
      return 0;
    }
    if (off != 0)
      return 0;
    m->pending[r] |= 1ULL << (wdata & 63);                        // SEND
  } else if (region == 1) {            // a receive page
    if (off == 0 && !write) {                                     // CLAIM
      uint64_t p = m->pending[r];
      m->pending[r] = 0;
      *err = 0;
      return p;
    }
    if (off != 8)
      return 0;
    if (!write) {                                                 // PENDING
      *err = 0;
      return m->pending[r];
    }
    m->pending[r] |= wdata;
  } else if (addr & 8) {                                          // ACTIVE
    if (!write) {
      *err = 0;
      return m->active[r];
    }
    m->active[r] = wdata & 1;
  } else {                                                        // HART
    if (!write) {
      *err = 0;
      return m->hartid[r];
    }
    if (wdata >= (uint64_t)m->nhart)
      return 0;
    m->hartid[r] = wdata & ((1ULL << m->hidw) - 1);
  }
  *err = 0;
  return 0;
}
