// The user-interrupt controller of our QEMU (hw/qemu, "coral,uintc" in the
// device tree): receiver entries, each a set of pending bits, a target hart
// and an active flag. Hart h's USIP line is high while an active entry that
// names h has pending bits, so a post reaches a thread running on another
// hart by one store, without an IPI through that hart's kernel.
#ifndef UINTC_H
#define UINTC_H
#include <stdint.h>
#include "board.h"
#include "vm.h"

#define UINTC_RECV_CLAIM 0x0     // receive page: read = take and clear the pending bits
#define UINTC_SEND_PAGE(e) ((uint64_t)(e) << 12)

extern uint64_t uintc_base;     // physical; 0 if there is no controller (uintc.c's)

void uintc_init(const struct board *b);
int uintc_present(void);
int uintc_alloc(void);                     // an entry, or -1 if none is free
void uintc_free(int e);                    // inactive and empty again
void uintc_reset(int e);                   // keep it, but inactive and empty
uint64_t uintc_recv_page(int e);           // physical address of its receive page
// Set pending bit 0 (a user software interrupt). Inline: every post to a
// thread with an entry sends one, and the call was most of its cost.
static inline void uintc_send(int e) {
  *(volatile uint64_t *)mmio(uintc_base + UINTC_SEND_PAGE(e)) = 0;
}
int uintc_pending(int e);                  // any pending bit (no side effect)
void uintc_activate(int e, uint32_t hartid);
void uintc_deactivate(int e);

#endif
