// Ending the machine with a verdict: the emulator's exit status says whether
// the run (a test job, init's exit status) succeeded.
#ifndef POWEROFF_H
#define POWEROFF_H
#include "board.h"

// Call once paging is on: uses the board's test device if it has one.
void poweroff_init(const struct board *b);
// Stop the machine; failure != 0 makes QEMU exit with status 1.
__attribute__((noreturn)) void poweroff(int failure);

#endif
