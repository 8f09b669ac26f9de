// The console monitor: a stackful kernel coroutine that reads lines from the UART
// and shows what the kernel is doing. `make qemu ARGS=monitor` boots into it
// (kernel/job.c), and so does a boot whose init cannot start; otherwise the
// console belongs to init and the shell.
#include "kco.h"
#include "klib.h"
#include "monitor.h"
#include "printf.h"
#include "poweroff.h"
#include "stats.h"
#include "timer.h"
#include "trace.h"
#include "uart.h"

#define LINE_MAX 128

static int read_line(char *buf, int max) {
  int n = 0;
  for (;;) {
    int c = console_getc();
    if (c == '\r' || c == '\n') {
      kprintf("\n");
      buf[n] = 0;
      return n;
    }
    if ((c == 0x7f || c == '\b') && n > 0) {
      n--;
      kprintf("\b \b");
    } else if (c >= ' ' && c < 0x7f && n < max - 1) {
      buf[n++] = (char)c;
      kprintf("%c", c);
    }
  }
}

extern const struct stats_source __stats_start[], __stats_end[];   // linker.ld

// Print every registered source of group; if group is 0, every counter, and
// the listings too if listings is set.
static void print_stats(const char *group, int listings) {
  for (const struct stats_source *src = __stats_start; src < __stats_end; src++)
    if (group ? strcmp(src->group, group) == 0 : listings || !src->listing)
      src->print(kprintf);
}

void monitor_stats(void) { print_stats(0, 0); }

void monitor_status(void) { print_stats(0, 1); }

static void help(void) {
  kprintf("commands:\n"
          "  stats     scheduler, interrupt, memory, console and network counters\n"
          "  net       network card counters\n"
          "  locks     spinlocks found held: waits and polls, by lock name\n"
          "  procs     processes and threads: user-interrupt and async-call state\n"
          "  sockets   TCP connections: lwIP state, unread bytes, waiters\n"
          "  check     verify the executor's invariants now\n"
          "  sleep MS  block this coroutine for MS milliseconds\n"
          "  trace on [N]  start the scheduler trace (N records a hart)\n"
          "  trace off     stop it; trace dump: stop and print it (base64)\n"
          "  trace         its state: records written, kept and lost per hart\n"
          "  poweroff  shut the machine down\n"
          "Ctrl-T prints stats, procs and sockets at any time, whoever has the console.\n");
}

// trace [on [N] | off | dump]: the scheduler trace (kernel/trace.h).
static void trace_command(const char *arg) {
  while (*arg == ' ')
    arg++;
  if (strncmp(arg, "on", 2) == 0) {
    uint32_t n = 0;
    for (const char *p = arg + 2; *p; p++)
      if (*p >= '0' && *p <= '9')
        n = n * 10 + (uint32_t)(*p - '0');
    if (trace_start(n) != 0)
      kprintf("trace: cannot allocate the rings\n");
    else
      kprintf("trace: on\n");
  } else if (strcmp(arg, "off") == 0) {
    trace_stop();
    kprintf("trace: off\n");
  } else if (strcmp(arg, "dump") == 0)
    trace_dump();
  else if (*arg == 0)
    trace_status();
  else
    kprintf("usage: trace [on [N] | off | dump]\n");
}

static void monitor_main(void *arg) {
  (void)arg;
  char line[LINE_MAX], why[128];
  kprintf("Type 'help' for commands.\n");
  for (;;) {
    kprintf("coral> ");
    if (read_line(line, sizeof line) == 0)
      continue;
    if (strcmp(line, "help") == 0)
      help();
    else if (strcmp(line, "stats") == 0)
      monitor_stats();
    else if (strcmp(line, "net") == 0 || strcmp(line, "locks") == 0 ||
             strcmp(line, "procs") == 0 || strcmp(line, "sockets") == 0)
      print_stats(line, 0);
    else if (strcmp(line, "check") == 0)
      kprintf("%s\n", exec_check(&kexec, why, sizeof why) ? why : "executor invariants hold");
    else if (strncmp(line, "sleep ", 6) == 0) {
      uint64_t ms = 0;
      for (const char *p = line + 6; *p >= '0' && *p <= '9'; p++)
        ms = ms * 10 + (uint64_t)(*p - '0');
      kco_sleep_ms(ms);
      kprintf("slept %lu ms\n", ms);
    } else if (strncmp(line, "trace", 5) == 0 && (line[5] == 0 || line[5] == ' '))
      trace_command(line + 5);
    else if (strcmp(line, "poweroff") == 0) {
      kprintf("bye\n");
      poweroff(0);
    } else
      kprintf("unknown command '%s' (try 'help')\n", line);
  }
}

void monitor_start(void) {
  if (kco_spawn_stackful(monitor_main, 0, MONITOR_PRIO, 0) < 0)
    kpanic("monitor: cannot spawn");
}
