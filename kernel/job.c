// Choose what the machine does after boot from the kernel command line (main.h).
#include "klib.h"
#include "main.h"
#include "monitor.h"
#include "printf.h"
#include "kco.h"
#include "poweroff.h"
#include "proc.h"
#include "fd.h"
#include "net.h"
#include "socket.h"
#include "board.h"
#include "prio.h"
#include "timer.h"
#include "trace.h"
#include "hart.h"
#include "param.h"
#include "park.h"
#include "syscall.h"
#include "virtio_net.h"

int bootarg(const char *args, const char *key, char *out, size_t outlen) {
  size_t klen = strlen(key);
  for (const char *p = args; *p;) {
    while (*p == ' ')
      p++;
    const char *end = p;
    while (*end && *end != ' ')
      end++;
    if ((size_t)(end - p) >= klen && strncmp(p, key, klen) == 0 &&
        (p[klen] == '=' || p + klen == end)) {
      size_t n = 0;
      if (p[klen] == '=')
        for (const char *v = p + klen + 1; v < end && n + 1 < outlen; v++)
          out[n++] = *v;
      out[n] = 0;
      return 1;
    }
    p = end;
  }
  return 0;
}

static void provoke_fault(void *arg) {
  (void)arg;
  kprintf("fault: loading from an unmapped address\n");
  volatile uint64_t *bad = (volatile uint64_t *)0x1000;
  (void)*bad;
}

// ---- the first user process ----
// Start `init` (which starts the shell), or with user=PROG, `init PROG`, and
// shut down with its status when it ends (the form the tests use). Commas in
// PROG separate arguments: user=matrixd,-m,ktut runs `init matrixd -m ktut`.
static int start_init(char *prog) {
  char *argv[MAXARG + 1] = { "init" };
  int argc = 1;
  for (char *s = prog; s && *s && argc < MAXARG;) {
    argv[argc++] = s;
    while (*s && *s != ',')
      s++;
    if (*s)
      *s++ = 0;
  }
  argv[argc] = 0;
  int err;
  struct proc *p = proc_spawn("init", argc, argv, 0, &err);
  if (!p) {
    kprintf("coral: cannot start init: error %d\n", err);
    return -1;
  }
  proc_set_init(p->pid, prog != 0);
  return 0;
}

extern const struct boot_job __boot_jobs_start[], __boot_jobs_end[];   // linker.ld

// The first registered job that args name (its value in val), or 0.
static const struct boot_job *registered_job(const char *args, char *val, size_t vallen) {
  for (const struct boot_job *j = __boot_jobs_start; j < __boot_jobs_end; j++)
    if (bootarg(args, j->key, val, vallen))
      return j;
  return 0;
}

uint64_t bootarg_number(const char *val, uint64_t cap) {
  uint64_t n = 0;
  for (const char *p = val; *p >= '0' && *p <= '9' && n <= cap; p++)
    n = n * 10 + (uint64_t)(*p - '0');
  return n;
}

// A bootarg's microseconds: at most about a second.
static uint32_t bootarg_us(const char *val) { return (uint32_t)bootarg_number(val, 999999); }

void start_main_job(const char *args) {
  char val[BOARD_BOOTARGS_MAX];
  const struct boot_job *job;
  if (bootarg(args, "trace", val, sizeof val))
    trace_boot(val);
  if (bootarg(args, "idle_poll_us", val, sizeof val)) {
    uint32_t us = bootarg_us(val);
    sched_set_idle_poll(us);
    kprintf("sched: idle harts poll %u us before they halt\n", us);
  }
  uint32_t kick_us = UWAIT_KICK_DELAY_US;
  if (bootarg(args, "kick_us", val, sizeof val)) {
    kick_us = bootarg_us(val);
    kprintf("sched: idle executor threads are kicked after %u us of ready work (kick_us)\n", kick_us);
  }
  uwait_set_kick_delay_us(kick_us);
  if (bootarg(args, "tick_kick", val, sizeof val) && strcmp(val, "any") == 0) {
    sched_tick_kicks_any(1);
    kprintf("sched: a busy hart's tick kicks whenever work waits (tick_kick=any)\n");
  }
  uint32_t park_ms = PARK_DELAY_MS;
  if (bootarg(args, "park_ms", val, sizeof val)) {
    park_ms = (uint32_t)bootarg_number(val, 100000);
    if (park_ms)
      kprintf("sched: a hart idle for %u ms parks (park_ms)\n", park_ms);
    else
      kprintf("sched: idle harts never park (park_ms=0)\n");
  }
  park_set_delay_ms(park_ms);
  if (bootarg(args, "idle_tick", val, sizeof val) && strcmp(val, "1") == 0) {
    timer_set_idle_tick(1);
    kprintf("timer: idle harts keep their tick (idle_tick=1)\n");
  }
  if (bootarg(args, "netlock", val, sizeof val)) {
    // spin: the spinlock it was; nohandoff: system calls spin for it, as
    // before they could wait elsewhere (both for comparison); busy: every
    // try finds it held (tests). net/netlock.c.
    int known = 1;
    if (strcmp(val, "spin") == 0)
      net_lock_use_spinlock(1);
    else if (strcmp(val, "nohandoff") == 0)
      net_lock_tries_spin(1);
    else if (strcmp(val, "busy") == 0)
      net_lock_tries_fail(1);
    else
      known = 0;
    kprintf(known ? "net: the network lock: netlock=%s\n"
                  : "net: netlock=%s is not spin, nohandoff or busy: ignored\n", val);
  }
  if (bootarg(args, "netrecv", val, sizeof val) && strcmp(val, "locked") == 0) {
    sock_recv_always_locked(1);
    kprintf("net: every receive takes the network lock (netrecv=locked)\n");
  }
  if (bootarg(args, "netsend", val, sizeof val) && strcmp(val, "locked") == 0) {
    sock_send_always_locked(1);
    kprintf("net: every send waits for the network lock (netsend=locked)\n");
  }
  if (bootarg(args, "vnet_irq", val, sizeof val) && strcmp(val, "all") == 0) {
    vnet_irq_always(1);
    kprintf("virtio-net: an interrupt for every used buffer (vnet_irq=all)\n");
  }
  if (bootarg(args, "uptime", val, sizeof val) && strcmp(val, "syscall") == 0) {
    prio_vvar_timebase(0);
    kprintf("coral: uptime() is a system call (uptime=syscall)\n");
  }
  if (bootarg(args, "ipi", val, sizeof val) && strcmp(val, "now") == 0) {
    hart_ipi_at_once(1);
    kprintf("sched: IPIs are sent at once, with a spinlock held too (ipi=now)\n");
  }
  if (bootarg(args, "nofile", val, sizeof val)) {
    fdt_set_limit((long)bootarg_number(val, NOFILE_MAX));
    kprintf("proc: %d descriptors per process\n", fdt_limit());
  }
  if (bootarg(args, "user", val, sizeof val)) {
    if (start_init(val) != 0)
      poweroff(1);
    // `monitor` beside user=PROG: the console monitor too, for a PROG that
    // does not read the console (make trace drives `trace` there).
    if (bootarg(args, "monitor", val, sizeof val))
      monitor_start();
  } else if ((job = registered_job(args, val, sizeof val)) != 0)
    job->start(val);
  else if (bootarg(args, "poweroff", val, sizeof val)) {
    kprintf("poweroff: boot complete\n");
    poweroff(0);
  } else if (bootarg(args, "fault", val, sizeof val))
    kco_spawn_stackful(provoke_fault, 0, 0, 0);
  else if (bootarg(args, "monitor", val, sizeof val) || start_init(0) != 0)
    monitor_start();
}
