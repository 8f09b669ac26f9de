// coralstat: a module of LiteX's Verilator simulator (loaded like its
// serial2console) that counts the simulated clock and reports on it.
//
//  - While the console is quiet (nothing printed for a few host seconds, and
//    the last character was a newline, so no prompt or half line is cut), it
//    prints "[sim] <cycles> cycles, <kHz> kHz, <s> s" on stderr: the boot
//    shows progress before OpenSBI's banner and during long silent stretches.
//  - CORAL_SIM_MAX_CYCLES=N ends the simulation after N cycles with status 124:
//    the tests' safety net, in simulated time, so it means the same on any host.
//  - On exit (end of simulation, SIGINT or SIGTERM) it prints the totals:
//    simulated cycles, host seconds and simulated kHz.
//  - CORAL_SIM_MARK=text: the first time the console prints text, it reports
//    the cycle count at that moment ("[sim] mark ... at cycle N").
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "error.h"
#include "modules.h"

struct session {
  char *sys_clk;
  char *tx_valid, *tx_ready, *tx;
  int last_clk;
};

static uint64_t cycles, max_cycles, quiet_since_cycle;
static double start_s, last_output_s, last_progress_s, progress_every = 3.0;
static int last_char = '\n';
static const char *mark;
static size_t mark_len, mark_got;
static int mark_done;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void report(const char *why) {
  double host = now() - start_s;
  char line[200];
  int n = snprintf(line, sizeof line,
                   "\n[sim] %s: %llu cycles simulated in %.1f s host time (%.1f kHz)\n", why,
                   (unsigned long long)cycles, host, host > 0 ? cycles / host / 1e3 : 0.0);
  if (write(2, line, (size_t)n) < 0) {
  }
}

static void on_signal(int sig) {
  report(sig == SIGINT ? "interrupted" : "stopped");
  _exit(128 + sig);
}

static void on_exit_report(void) { report("end"); }

static int coralstat_start(void *base) {
  (void)base;
  const char *s = getenv("CORAL_SIM_MAX_CYCLES");
  if (s && *s)
    max_cycles = strtoull(s, NULL, 0);
  s = getenv("CORAL_SIM_PROGRESS_SECONDS");
  if (s && *s)
    progress_every = atof(s);
  mark = getenv("CORAL_SIM_MARK");
  if (mark && *mark)
    mark_len = strlen(mark);
  start_s = last_output_s = last_progress_s = now();
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  atexit(on_exit_report);
  return RC_OK;
}

static int coralstat_new(void **sess, char *args) {
  (void)args;
  struct session *s = calloc(1, sizeof *s);
  if (!s)
    return RC_NOENMEM;
  *sess = s;
  return RC_OK;
}

static void *pad(struct pad_s *pads, const char *name) {
  for (int i = 0; pads[i].name; i++)
    if (!strcmp(pads[i].name, name))
      return pads[i].signal;
  return NULL;
}

static int coralstat_add_pads(void *sess, struct pad_list_s *plist) {
  struct session *s = sess;
  if (!strcmp(plist->name, "sys_clk"))
    s->sys_clk = pad(plist->pads, "sys_clk");
  if (!strcmp(plist->name, "serial")) {
    s->tx_valid = pad(plist->pads, "source_valid");
    s->tx_ready = pad(plist->pads, "source_ready");
    s->tx = pad(plist->pads, "source_data");
  }
  return RC_OK;
}

static void console_byte(int c) {
  last_char = c;
  last_output_s = -1;            // re-read the clock on the next check
  quiet_since_cycle = cycles;
  if (mark_len && !mark_done) {
    mark_got = (c == mark[mark_got]) ? mark_got + 1 : (c == mark[0] ? 1 : 0);
    if (mark_got == mark_len) {
      mark_done = 1;
      fprintf(stderr, "\n[sim] mark \"%s\" at cycle %llu (%.1f s host time)\n", mark,
              (unsigned long long)cycles, now() - start_s);
    }
  }
}

static int coralstat_tick(void *sess, uint64_t time_ps) {
  struct session *s = sess;
  (void)time_ps;
  int clk = *s->sys_clk;
  int rising = clk && !s->last_clk;
  s->last_clk = clk;
  if (!rising)
    return RC_OK;
  // serial2console takes a byte on every rising edge where source_valid is set.
  if (s->tx_valid && *s->tx_valid && s->tx_ready && *s->tx_ready)
    console_byte((unsigned char)*s->tx);
  cycles++;
  if (max_cycles && cycles >= max_cycles) {
    fflush(stdout);
    report("cycle limit reached");
    _exit(124);
  }
  if ((cycles & 0xffff) == 0) {
    double t = now();
    if (last_output_s < 0)
      last_output_s = t;
    if (last_char == '\n' && t - last_output_s >= progress_every &&
        t - last_progress_s >= progress_every) {
      fprintf(stderr, "[sim] %.2f M cycles, %.1f kHz, %.0f s\n", cycles / 1e6,
              cycles / (t - start_s) / 1e3, t - start_s);
      last_progress_s = t;
    }
  }
  return RC_OK;
}

static struct ext_module_s ext_mod = {
  "coralstat", coralstat_start, coralstat_new, coralstat_add_pads, NULL, coralstat_tick,
};

int litex_sim_ext_module_init(int (*register_module)(struct ext_module_s *)) {
  return register_module(&ext_mod);
}
