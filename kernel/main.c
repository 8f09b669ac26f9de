// Boot: the boot hart sets up everything from the device tree, starts the other
// harts through SBI HSM, picks the job named on the command line (bootargs) and
// joins the executor loop. Every hart ends in sched_loop().
#include "poweroff.h"
#include "uintc.h"
#include "uintr.h"
#include "board.h"
#include "hart.h"
#include "initrd.h"
#include "proc.h"
#include "status.h"
#include "switcher.h"
#include "vdso_map.h"
#include "prio.h"
#include "kco.h"
#include "klib.h"
#include "kmalloc.h"
#include "main.h"
#include "palloc.h"
#include "plic.h"
#include "printf.h"
#include "riscv.h"
#include "sbi.h"
#include "timer.h"
#include "trap.h"
#include "uart.h"
#include "virtio_net.h"
#include "vm.h"

struct hart harts[BOARD_MAX_HARTS];
uint32_t nharts_online;
struct board board;

extern char _kernel_end[];
extern const char _initrd_start[], _initrd_end[];
extern void secondary_entry(void);

static void set_tp(struct hart *h) { __asm__ volatile("mv tp, %0" :: "r"(h)); }

// Logical hart indexes: the boot hart (which OpenSBI may pick at random) is 0,
// the others follow in device-tree order.
static void assign_harts(uint64_t boot_hartid) {
  uint32_t n = 1;
  harts[0].hartid = (uint32_t)boot_hartid;
  harts[0].plic_ctx = -1;
  for (uint32_t i = 0; i < board.nharts; i++) {
    if (board.hartid[i] == boot_hartid) {
      harts[0].plic_ctx = board.plic_sctx[i];
      continue;
    }
    if (n == BOARD_MAX_HARTS)
      break;
    harts[n].hartid = board.hartid[i];
    harts[n].plic_ctx = board.plic_sctx[i];
    n++;
  }
  for (uint32_t i = 0; i < BOARD_MAX_HARTS; i++)
    harts[i].index = i;
  board.nharts = n;
}

// bootargs harts=N: the kernel uses the boot hart and N - 1 others, and the
// rest sleep in park_unused_hart. QEMU with -smp 2 and harts=1 still runs its
// vCPUs in parallel mode (atomics as host atomics, a second vCPU thread),
// which tells its cost from the kernel's own on two harts
// (docs/results/smp-light-kcuc.md).
static uint32_t harts_present;   // in the device tree, up to BOARD_MAX_HARTS

static void limit_harts(void) {
  harts_present = board.nharts;
  char val[16];
  if (!bootarg(board.bootargs, "harts", val, sizeof val))
    return;
  uint64_t v = bootarg_number(val, BOARD_MAX_HARTS);
  uint32_t n = v < BOARD_MAX_HARTS ? (uint32_t)v : BOARD_MAX_HARTS;
  if (n >= 1 && n < board.nharts) {
    kprintf("coral: using %u of %u harts (harts=%u)\n", n, board.nharts, n);
    board.nharts = n;
  }
}

static void hart_setup(void) {
  trap_init_hart();      // first, so that any fault below is reported
  // Let user programs read cycle, time and instret (benchmarks, uptime).
  csr_write(scounteren, 0x7);
  kvm_enable_hart();
  plic_init_hart();
  timer_init_hart();
  uintr_init_hart();
  this_hart()->online = 1;
  __atomic_fetch_add(&nharts_online, 1, __ATOMIC_SEQ_CST);
}

// A hart left out by bootargs harts=N sleeps here for good, every interrupt
// it could take switched off, so that its vCPU costs the emulator nothing.
// (Left stopped in the firmware instead, never started, it kept a host core
// busy: OpenSBI 1.1's stopped-hart loop on QEMU 7.2 spun at 100%.)
static void park_unused_hart(void) {
  intr_off();
  csr_write(sie, 0);
  if (timer_uses_sstc())
    csr_write(0x14d, ~0UL);     // stimecmp: no timer interrupt pending, ever
  for (;;)
    __asm__ volatile("wfi");
}

void secondary_main(uint64_t hartid, uint64_t index) {
  (void)hartid;
  if (index >= board.nharts)
    park_unused_hart();
  set_tp(&harts[index]);
  hart_setup();
  sched_loop();
}

// A hart that also arrived at _entry waits there (entry.S): let it in as
// secondary i. Returns 1 if hart i is that hart.
extern volatile int64_t entry_waiter, entry_go;
static int release_parked(uint32_t i) {
  if (__atomic_load_n(&entry_waiter, __ATOMIC_SEQ_CST) != (int64_t)harts[i].hartid)
    return 0;
  __atomic_store_n(&entry_go, (int64_t)i + 1, __ATOMIC_SEQ_CST);
  kprintf("coral: hart %u had also entered at _entry; it joins as a secondary\n", harts[i].hartid);
  return 1;
}

static void start_secondaries(void) {
  for (uint32_t i = 1; i < harts_present; i++) {   // (those past board.nharts: to park)
    if (release_parked(i))
      continue;
    long err = sbi_hart_start(harts[i].hartid, (uint64_t)secondary_entry, i);
    if (err && err != SBI_ERR_ALREADY_AVAILABLE)   // already running: parked, see below
      kprintf("hart %u: SBI hart_start failed (%ld)\n", harts[i].hartid, err);
  }
  // Wait (bounded) for them to report in; a hart that never does is left out.
  // 10 s: a safety net, far beyond what a hart needs even on a loaded host.
  // Meanwhile a hart that parked at _entry (it may arrive late) is let in.
  uint64_t deadline = rdtime() + 10 * board.timebase_hz;
  while (__atomic_load_n(&nharts_online, __ATOMIC_SEQ_CST) < board.nharts && rdtime() < deadline) {
    for (uint32_t i = 1; i < harts_present; i++)
      if (!__atomic_load_n(&harts[i].online, __ATOMIC_SEQ_CST) &&
          __atomic_load_n(&entry_go, __ATOMIC_SEQ_CST) == 0)
        release_parked(i);
    timer_nap(board.timebase_hz / 10000);   // 0.1 ms: let the others run (timer.h)
  }
}

void kmain(uint64_t hartid, uint64_t dtb) {
  set_tp(&harts[0]);
  trap_init_hart();      // before anything can fault
  char err[128];
  // Parse first: the device tree sits in RAM that palloc will hand out.
  if (board_parse((const void *)dtb, &board, err, sizeof err) != 0) {
    kprintf("coral: cannot use the device tree: %s\n", err);
    poweroff(1);
  }
  assign_harts(hartid);
  limit_harts();
  palloc_init((uint64_t)_kernel_end, board.mem_base + board.mem_size);
  kmalloc_init();
  kmalloc_use_caches(1);
  kvm_init(&board);
  uintr_select(board.has_n);
  uintc_init(&board);
  hart_setup();
  poweroff_init(&board);  // paging is on: the exit-status device can be reached
  plic_init();
  uart_init();
  sched_init();
  status_start();         // Ctrl-T on the console (kernel/status.c)
  proc_init();
  start_secondaries();

  struct palloc_stats ps;
  palloc_get_stats(&ps);
  kprintf("\nCoral: %u harts online, %lu MiB memory (%lu MiB free), timer %s, "
          "%u virtio-mmio slots\n",
          nharts_online, (unsigned long)(board.mem_size >> 20),
          (unsigned long)(ps.free_pages * PAGE_SIZE >> 20), timer_uses_sstc() ? "sstc" : "sbi",
          board.nvirtio);
  kprintf("uintr: user interrupts %s\n", uintr_backend_name());
  if (board.nharts_found > BOARD_MAX_HARTS)
    kprintf("coral: the device tree lists %u harts; using %u\n", board.nharts_found, BOARD_MAX_HARTS);
  if (nharts_online < board.nharts)
    kprintf("coral: only %u of %u harts came online\n", nharts_online, board.nharts);
  vnet_init();           // prints why if there is no usable card; the kernel runs without one
  if (initrd_open(_initrd_start, (size_t)(_initrd_end - _initrd_start)) != 0)
    kprintf("coral: no valid program archive in the kernel image\n");
  if (prio_init() != 0)
    kpanic("cannot allocate the vvar page");
  prio_vvar_timebase(board.timebase_hz);
  if (vdso_init() != 0)
    kprintf("coral: user programs cannot run without the vDSO\n");
  switcher_start();
  start_main_job(board.bootargs);
  sched_loop();
}
