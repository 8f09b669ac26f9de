// The status key (kernel/status.c): Ctrl-T prints the counters and listings.
#ifndef STATUS_H
#define STATUS_H
#define STATUS_KEY 0x14          // Ctrl-T
void status_start(void);         // once, at boot, before the console's interrupts
void status_key(void);           // the UART's interrupt saw the key
#endif
