// Kernel trap dispatch (see trap.h).
#include "trap.h"
#include "poweroff.h"
#include "hart.h"
#include "kco.h"
#include "plic.h"
#include "prio.h"
#include "printf.h"
#include "riscv.h"
#include "timer.h"
#include "uart.h"
#include "trace.h"
#include "virtio_net.h"

extern void kernelvec(void);

void trap_init_hart(void) {
  csr_write(stvec, (uint64_t)kernelvec);
  csr_set(sie, SIE_SEIE | SIE_SSIE);
}

static void external_interrupt(void) {
  uint32_t irq;
  while ((irq = plic_claim()) != 0) {
    TRACE_IRQ(TR_IRQ_DEV, irq);
    if (irq == board.uart.irq)
      uart_interrupt();
    else if (irq == vnet_irq())
      vnet_intr();
    plic_complete(irq);
  }
}

static const char *exception_name(uint64_t cause) {
  static const char *names[] = {
    [EXC_INST_MISALIGNED] = "instruction address misaligned",
    [EXC_INST_ACCESS] = "instruction access fault",
    [EXC_ILLEGAL_INST] = "illegal instruction",
    [EXC_BREAKPOINT] = "breakpoint",
    [EXC_LOAD_MISALIGNED] = "load address misaligned",
    [EXC_LOAD_ACCESS] = "load access fault",
    [EXC_STORE_MISALIGNED] = "store address misaligned",
    [EXC_STORE_ACCESS] = "store access fault",
    [EXC_ECALL_U] = "ecall from U-mode",
    [EXC_ECALL_S] = "ecall from S-mode",
    [EXC_INST_PAGE_FAULT] = "instruction page fault",
    [EXC_LOAD_PAGE_FAULT] = "load page fault",
    [EXC_STORE_PAGE_FAULT] = "store page fault",
  };
  if (cause < sizeof(names) / sizeof(names[0]) && names[cause])
    return names[cause];
  return "unknown exception";
}

static const char *const regnames[31] = {
  "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4", "a5",
  "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6",
};

void trap_report(const struct trapframe *tf) {
  struct hart *h = this_hart();
  // One report at a time, by the first hart that faults: another hart that
  // faults meanwhile waits (the machine is about to stop), and a fault during
  // the report itself (a bad frame in the backtrace, a broken console) must
  // not recurse: it is named, and the machine stops.
  static int reporter = -1;
  int none = -1;
  if (!__atomic_compare_exchange_n(&reporter, &none, (int)h->index, 0, __ATOMIC_SEQ_CST,
                                   __ATOMIC_SEQ_CST)) {
    if (none != (int)h->index)
      for (;;)
        wfi();
    kprintf("\nKERNEL FAULT while reporting a fault (hart %u, sepc %p, stval %p)\n", h->hartid,
            (void *)tf->sepc, (void *)tf->stval);
    poweroff(1);
  }
  kprintf("\nKERNEL FAULT on hart %u (index %u): %s\n", h->hartid, h->index,
          exception_name(tf->scause & ~SCAUSE_INTERRUPT));
  kprintf("  sepc %p  scause %p  stval %p  sstatus %p\n", (void *)tf->sepc,
          (void *)tf->scause, (void *)tf->stval, (void *)tf->sstatus);
  for (int i = 0; i < 31; i += 3) {
    for (int j = i; j < i + 3 && j < 31; j++)
      kprintf("  %3s %p", regnames[j], (void *)tf->x[j]);
    kprintf("\n");
  }
  if (h->cur)
    kprintf("  running coroutine cid %p\n", (void *)co_cid(h->cur));
  kprintf("  #-1 %p (faulting pc)\n", (void *)tf->sepc);
  backtrace_from(tf->x[7], tf->x[0]);   // s0 = its frame pointer, x1 = ra
}

int trap_interrupt(uint64_t cause) {
  switch (cause & ~SCAUSE_INTERRUPT) {
  case IRQ_S_TIMER:
    TRACE_IRQ(TR_IRQ_TIMER, 0);
    if (timer_interrupt()) {
      this_hart()->tick_unseen = 1;   // the running thread's turn may be over (switcher.c)
      prio_publish_kernel();    // (processes are ranked at their own kernel entries)
      sched_tick();
    }
    return 1;
  case IRQ_S_SOFT:               // an IPI from sched_kick: the loop will rescan
    TRACE_IRQ(TR_IRQ_SOFT, 0);
    this_hart()->irq_soft++;
    csr_clear(sip, SIE_SSIE);
    timer_take_handed();
    return 1;
  case IRQ_S_EXT:
    this_hart()->irq_ext++;
    external_interrupt();
    return 1;
  }
  return 0;
}

const char *trap_exception_name(uint64_t cause) { return exception_name(cause); }

void kernel_trap(struct trapframe *tf) {
  uint64_t cause = tf->scause;
  if ((cause & SCAUSE_INTERRUPT) && trap_interrupt(cause))
    return;
  trap_report(tf);
  kpanic_quiet("unexpected trap in the kernel (scause %p)", (void *)cause);
}
