// The console monitor coroutine (kernel/monitor.c).
#ifndef MONITOR_H
#define MONITOR_H
#define MONITOR_PRIO 2
void monitor_start(void);
void monitor_stats(void);    // print every counter (also used by the tests on failure)
void monitor_status(void);   // the counters and the listings (procs, sockets): the status key
#endif
