// kprintf, ksnprintf and kpanic. Output goes through a putc hook: the SBI legacy
// console during early boot, the UART once it is mapped and initialised.
#include "poweroff.h"
#include "printf.h"
#include "hart.h"
#include "klib.h"
#include "riscv.h"
#include "sbi.h"
#include "spinlock.h"

static void (*out_putc)(int) = sbi_console_putchar;
static struct spinlock print_lock = SPINLOCK_INIT("printf");
static volatile int panicking;   // once set, print without the lock and never return

void console_set_output(void (*putc)(int c)) { out_putc = putc; }

struct sink { char *buf; size_t size, len; };

static void emit(struct sink *s, char c) {
  if (s->len + 1 < s->size)
    s->buf[s->len] = c;
  s->len++;
}

static void emit_num(struct sink *s, unsigned long long v, int base, int neg, int width, char pad) {
  char tmp[24];
  int n = 0;
  do {
    tmp[n++] = "0123456789abcdef"[v % (unsigned)base];
    v /= (unsigned)base;
  } while (v);
  if (neg)
    tmp[n++] = '-';
  for (int i = n; i < width; i++)
    emit(s, pad);
  while (n)
    emit(s, tmp[--n]);
}

int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap) {
  struct sink s = { buf, size, 0 };
  for (; *fmt; fmt++) {
    if (*fmt != '%') {
      emit(&s, *fmt);
      continue;
    }
    fmt++;
    char pad = ' ';
    int width = 0, longs = 0;
    if (*fmt == '0')
      pad = '0', fmt++;
    while (*fmt >= '0' && *fmt <= '9')
      width = width * 10 + (*fmt++ - '0');
    while (*fmt == 'l')
      longs++, fmt++;
    switch (*fmt) {
    case 'd':
    case 'i': {
      long long v = longs ? va_arg(ap, long long) : va_arg(ap, int);
      emit_num(&s, v < 0 ? -(unsigned long long)v : (unsigned long long)v, 10, v < 0, width, pad);
      break;
    }
    case 'u':
      emit_num(&s, longs ? va_arg(ap, unsigned long long) : va_arg(ap, unsigned), 10, 0, width, pad);
      break;
    case 'x':
      emit_num(&s, longs ? va_arg(ap, unsigned long long) : va_arg(ap, unsigned), 16, 0, width, pad);
      break;
    case 'p':
      emit(&s, '0'), emit(&s, 'x');
      emit_num(&s, (unsigned long long)(uintptr_t)va_arg(ap, void *), 16, 0, 16, '0');
      break;
    case 's': {
      const char *str = va_arg(ap, const char *);
      if (!str)
        str = "(null)";
      int n = (int)strlen(str);
      for (int i = n; i < width; i++)
        emit(&s, ' ');
      while (*str)
        emit(&s, *str++);
      break;
    }
    case 'c':
      emit(&s, (char)va_arg(ap, int));
      break;
    case '%':
      emit(&s, '%');
      break;
    case 0:
      fmt--;
      break;
    default:
      emit(&s, '%');
      emit(&s, *fmt);
    }
  }
  if (size)
    buf[s.len < size ? s.len : size - 1] = 0;
  return (int)s.len;
}

int ksnprintf(char *buf, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = kvsnprintf(buf, size, fmt, ap);
  va_end(ap);
  return n;
}

static void put_string(const char *s) {
  for (; *s; s++) {
    if (*s == '\n')
      out_putc('\r');
    out_putc(*s);
  }
}

void console_put(const char *s, size_t n) {
  int locked = !panicking;       // (a panic prints without the lock)
  if (locked)
    spin_lock(&print_lock);
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '\n')
      out_putc('\r');
    out_putc(s[i]);
  }
  if (locked)
    spin_unlock(&print_lock);
}

void kprintf(const char *fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  kvsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  console_put(buf, strlen(buf));
}

// Walk the frame-pointer chain (the kernel is built with -fno-omit-frame-pointer):
// a RISC-V frame keeps the return address at fp-8 and the caller's fp at fp-16.
// A leaf function saves only the caller's fp, at fp-8; such a frame is
// recognised because fp-8 then holds a stack address rather than a text address,
// and its return address is still in ra (leaf_ra, when the caller knows it).
// Resolve the addresses with: riscv64-unknown-elf-addr2line -e build/kernel.elf ADDR
extern char _kernel_start[], _etext[];

static int is_text(unsigned long a) {
  return a >= (unsigned long)_kernel_start && a < (unsigned long)_etext;
}

// Could fp be a kernel frame pointer? Stacks are the boot stacks (in the
// kernel image) and pages from palloc: mapped RAM from the kernel to the end
// of memory. Anything else (stale stack words, RAM below the kernel that
// OpenSBI keeps unmapped) must not be dereferenced: reading it would fault
// inside the fault report.
static int is_frame(unsigned long fp) {
  return (fp & 7) == 0 && fp >= (unsigned long)_kernel_start + 16 &&
         fp <= board.mem_base + board.mem_size;
}

void backtrace_from(unsigned long fp, unsigned long leaf_ra) {
  kprintf("backtrace:\n");
  for (int depth = 0; depth < 32; depth++) {
    if (!is_frame(fp))
      break;
    unsigned long ra = *(unsigned long *)(fp - 8);
    unsigned long prev = *(unsigned long *)(fp - 16);
    if (!is_text(ra) && depth == 0 && is_text(leaf_ra)) {
      prev = ra;             // leaf frame: fp-8 holds the caller's fp
      ra = leaf_ra;
    }
    if (!is_text(ra))
      break;
    kprintf("  #%d %p\n", depth, (void *)ra);
    if (prev <= fp)          // frames move towards higher addresses; stop on nonsense
      break;
    fp = prev;
  }
}

static __attribute__((noreturn)) void panic_v(int with_backtrace, const char *fmt, va_list ap) {
  intr_off();
  int first = !__atomic_exchange_n(&panicking, 1, __ATOMIC_SEQ_CST);
  if (first) {
    char buf[256];
    kvsnprintf(buf, sizeof buf, fmt, ap);
    put_string("\nPANIC: ");
    put_string(buf);
    put_string("\n");
    if (with_backtrace)
      backtrace_from(read_fp(), 0);
    poweroff(1);
  }
  for (;;)      // another hart is already reporting a panic
    wfi();
}

void kpanic(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  panic_v(1, fmt, ap);
}

void kpanic_quiet(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  panic_v(0, fmt, ap);
}
