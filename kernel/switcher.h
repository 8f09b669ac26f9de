// Switching coroutines (kernel/switcher.c): they run user threads.
#ifndef SWITCHER_H
#define SWITCHER_H
#include <stdint.h>
#define SWITCHER_PRIO 6      // while idle; running a process, a switcher takes its priority
void switcher_start(void);   // one per online hart
#endif
