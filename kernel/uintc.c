// The user-interrupt controller (see uintc.h): the kernel's driver. The
// register layout is the device's (hw/qemu/0002-hw-intc-coral-uintc.patch):
// entry e has a send page at e * 4 KiB (SEND: set bit val & 63), a receive
// page at 0x40000 + e * 4 KiB (CLAIM: read and clear; PENDING: peek), and
// two control words at 0x80000 + e * 16 (HART, then ACTIVE). All accesses are
// 64-bit. The kernel keeps the send and control pages; a thread's receive
// page is mapped into its process, so its handler can take the bits itself.
#include "uintc.h"
#include "spinlock.h"
#include "vm.h"

#define RECV_PAGE(e) (0x40000 + ((uint64_t)(e) << 12))
#define RECV_PENDING 0x8
#define CTRL(e) (0x80000 + ((uint64_t)(e) << 4))
#define MAX_ENTRIES 64

uint64_t uintc_base;           // physical; 0 if there is no controller
static uint32_t entries;
static uint64_t in_use;        // bit e: entry e belongs to a thread
static struct spinlock lock = SPINLOCK_INIT("uintc");

static volatile uint64_t *reg(uint64_t off) { return (volatile uint64_t *)mmio(uintc_base + off); }

void uintc_init(const struct board *b) {
  if (!b->uintc.size || !b->uintc_entries)
    return;
  uintc_base = b->uintc.base;
  entries = b->uintc_entries < MAX_ENTRIES ? b->uintc_entries : MAX_ENTRIES;
}

int uintc_present(void) { return uintc_base != 0; }

int uintc_alloc(void) {
  if (!uintc_base)
    return -1;
  spin_lock(&lock);
  int e = -1;
  for (uint32_t i = 0; i < entries && e < 0; i++)
    if (!(in_use & (1ULL << i)))
      e = (int)i;
  if (e >= 0)
    in_use |= 1ULL << e;
  spin_unlock(&lock);
  if (e >= 0)
    uintc_reset(e);            // start empty
  return e;
}

void uintc_reset(int e) {
  uintc_deactivate(e);
  (void)*reg(RECV_PAGE(e) + UINTC_RECV_CLAIM);
}

void uintc_free(int e) {
  uintc_reset(e);
  spin_lock(&lock);
  in_use &= ~(1ULL << e);
  spin_unlock(&lock);
}

uint64_t uintc_recv_page(int e) { return uintc_base + RECV_PAGE(e); }
int uintc_pending(int e) { return *reg(RECV_PAGE(e) + RECV_PENDING) != 0; }
void uintc_activate(int e, uint32_t hartid) {
  *reg(CTRL(e)) = hartid;
  *reg(CTRL(e) + 8) = 1;
}
void uintc_deactivate(int e) { *reg(CTRL(e) + 8) = 0; }
