// Random accesses to the user-interrupt controller (see uintc_vectors.h).
#include "uintc_vectors.h"
#include "uintc_model.h"

uint64_t uintc_vectors_next(struct uintc_vectors *v) {
  v->state ^= v->state >> 12;
  v->state ^= v->state << 25;
  v->state ^= v->state >> 27;
  return v->state * 2685821657736338717ULL;
}

static uint64_t below(struct uintc_vectors *v, uint64_t n) { return uintc_vectors_next(v) % n; }

struct uintc_access uintc_vectors_access(struct uintc_vectors *v) {
  struct uintc_access a;
  a.write = (int)below(v, 2);
  uint64_t r = below(v, 8) ? below(v, 2) : below(v, (uint64_t)v->nrecv + 2), reg = below(v, 5);
  switch (reg) {
  case 0: a.addr = UINTC_SEND_PAGE(r); break;
  case 1: a.addr = UINTC_RECV_PAGE(r); break;
  case 2: a.addr = UINTC_RECV_PAGE(r) + 8; break;
  case 3: a.addr = UINTC_CTRL(r); break;
  default: a.addr = UINTC_CTRL(r) + 8; break;
  }
  if (below(v, 16) == 0)
    a.addr += 8 * (1 + below(v, 4));
  if (v->misaligned && below(v, 32) == 0)
    a.addr |= 1 + below(v, 7);
  if (below(v, 64) == 0)
    a.addr = below(v, v->window) & (v->misaligned ? ~0ULL : ~7ULL);
  if (a.addr >= v->window)
    a.addr = UINTC_CTRL(0);        // (a send page past the last receiver: past the end)
  switch (reg) {
  case 0: a.wdata = below(v, 8) == 0 ? uintc_vectors_next(v) : below(v, 64); break;
  case 3: a.wdata = below(v, 8) == 0 ? uintc_vectors_next(v) : below(v, 3); break;   // (harts 0-2)
  case 1: case 2: a.wdata = below(v, 2) ? 0 : uintc_vectors_next(v); break;
  default: a.wdata = below(v, 8) == 0 ? uintc_vectors_next(v) : below(v, 2); break;
  }
  return a;
}
