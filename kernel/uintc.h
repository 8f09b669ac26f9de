// The user-interrupt controller of our QEMU (hw/qemu, "coral,uintc" in the
// device tree): receiver entries, each a set of pending bits, a target hart
// and an active flag. Hart h's USIP line is high while an active entry that
// names h has pending bits, so a post reaches a thread running on another
// hart by one store, without an IPI through that hart's kernel.
#ifndef UINTC_H
#define UINTC_H
#include <stdint.h>
#include "board.h"

#define UINTC_RECV_CLAIM 0x0     // receive page: read = take and clear the pending bits

void uintc_init(const struct board *b);
int uintc_present(void);
int uintc_alloc(void);                     // an entry, or -1 if none is free
void uintc_free(int e);                    // inactive and empty again
void uintc_reset(int e);                   // keep it, but inactive and empty
uint64_t uintc_recv_page(int e);           // physical address of its receive page
void uintc_send(int e);                    // set pending bit 0 (a user software interrupt)
int uintc_pending(int e);                  // any pending bit (no side effect)
void uintc_activate(int e, uint32_t hartid);
void uintc_deactivate(int e);

#endif
