// The console monitor: a stackful kernel coroutine that reads lines from the UART
// and shows what the kernel is doing. `make qemu ARGS=monitor` boots into it
// (kernel/job.c), and so does a boot whose init cannot start; otherwise the
// console belongs to init and the shell.
#include "hart.h"
#include "kco.h"
#include "klib.h"
#include "kmalloc.h"
#include "monitor.h"
#include "palloc.h"
#include "printf.h"
#include "sbi.h"
#include "timer.h"
#include "uart.h"
#include "virtio_net.h"
#include "net.h"
#include "socket.h"

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

static void net_stats(void) {
  if (!vnet_present()) {
    kprintf("net: no network card\n");
    return;
  }
  uint8_t m[6];
  struct vnet_stats st;
  vnet_mac(m);
  vnet_get_stats(&st);
  kprintf("net: mac %02x:%02x:%02x:%02x:%02x:%02x; rx %lu frames / %lu bytes, %lu dropped; "
          "tx %lu frames / %lu bytes, %lu full; irqs %lu\n",
          m[0], m[1], m[2], m[3], m[4], m[5], st.rx_frames, st.rx_bytes, st.rx_dropped,
          st.tx_frames, st.tx_bytes, st.tx_full, st.irqs);
  if (!net_started()) {
    kprintf("     stack not started (the first socket starts it)\n");
    return;
  }
  struct net_stats ns;
  struct sock_stats ss;
  net_get_stats(&ns);
  sock_get_stats(&ss);
  kprintf("     lwIP: rx %lu frames, %lu dropped; tx %lu frames, %lu refused (card full); timer runs %lu\n",
          ns.rx_frames, ns.rx_dropped, ns.tx_frames, ns.tx_full, ns.timer_runs);
  kprintf("     sockets %d, tcp pcbs %d; accepted %lu, refused %lu, reset %lu; bytes in %lu, out %lu\n",
          sock_count(), sock_tcp_pcbs(), ss.accepted, ss.refused, ss.resets, ss.bytes_in, ss.bytes_out);
}

void monitor_stats(void) {
  struct exec_stats es;
  exec_get_stats(&kexec, &es);
  kprintf("executor: live %u (ready %u, running %u, blocked %u), slots %u, best prio %u\n",
          es.live, es.ready, es.running, es.blocked, es.slots, exec_best_prio(&kexec));
  kprintf("          spawned %lu, exited %lu, wakes %lu (remembered %lu, stale %lu)\n",
          es.spawned, es.exited, es.wakes, es.wakes_remembered, es.stale_wakes);
  for (uint32_t i = 0; i < nharts_online; i++) {
    struct hart *h = &harts[i];
    kprintf("hart %u (id %u): dispatches %lu, ticks %lu, irq timer %lu soft %lu ext %lu, idle waits %lu\n",
            i, h->hartid, h->dispatches, h->ticks, h->irq_timer, h->irq_soft, h->irq_ext, h->idle_wfi);
  }
  struct palloc_stats ps;
  struct kmalloc_stats ks;
  palloc_get_stats(&ps);
  kmalloc_get_stats(&ks);
  kprintf("memory: pages %lu free of %lu; kmalloc live %lu objects / %lu bytes, slab pages %lu, large pages %lu\n",
          ps.free_pages, ps.total_pages, ks.live_objects, ks.live_bytes, ks.slab_pages, ks.large_pages);
  kprintf("uart: %lu bytes received, %lu dropped\n", uart_rx_count(), uart_rx_dropped());
  net_stats();
}

static void help(void) {
  kprintf("commands:\n"
          "  stats     scheduler, interrupt, memory, console and network counters\n"
          "  net       network card counters\n"
          "  check     verify the executor's invariants now\n"
          "  sleep MS  block this coroutine for MS milliseconds\n"
          "  poweroff  shut the machine down\n");
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
    else if (strcmp(line, "net") == 0)
      net_stats();
    else if (strcmp(line, "check") == 0)
      kprintf("%s\n", exec_check(&kexec, why, sizeof why) ? why : "executor invariants hold");
    else if (strncmp(line, "sleep ", 6) == 0) {
      uint64_t ms = 0;
      for (const char *p = line + 6; *p >= '0' && *p <= '9'; p++)
        ms = ms * 10 + (uint64_t)(*p - '0');
      kco_sleep_ms(ms);
      kprintf("slept %lu ms\n", ms);
    } else if (strcmp(line, "poweroff") == 0) {
      kprintf("bye\n");
      sbi_shutdown(0);
    } else
      kprintf("unknown command '%s' (try 'help')\n", line);
  }
}

void monitor_start(void) {
  if (kco_spawn_stackful(monitor_main, 0, MONITOR_PRIO, 0) < 0)
    kpanic("monitor: cannot spawn");
}
