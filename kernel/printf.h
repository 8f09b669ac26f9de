// Kernel console output. kprintf is synchronous (polls the UART), so it works in
// any context: early boot, interrupt handlers, panics.
#ifndef PRINTF_H
#define PRINTF_H
#include <stdarg.h>
#include <stddef.h>

// Formats: %d %i %u %x %p %s %c %%, length modifiers l and ll, width and 0 flag.
int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int ksnprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// Print the message and a backtrace, then shut down with failure status.
__attribute__((noreturn, format(printf, 1, 2))) void kpanic(const char *fmt, ...);
// The same without the backtrace (the caller has printed a better one).
__attribute__((noreturn, format(printf, 1, 2))) void kpanic_quiet(const char *fmt, ...);
void console_set_output(void (*putc)(int c));   // switch from SBI to the UART
// A process's console output: n bytes, under the lock kprintf takes, so a
// kernel line (a trace dump's, above all) is never cut by a process's.
void console_put(const char *s, size_t n);
// Print return addresses up the frame-pointer chain; leaf_ra is the ra register
// of the innermost frame if known (0 otherwise), for leaf functions.
void backtrace_from(unsigned long fp, unsigned long leaf_ra);

#define KASSERT(cond) do { if (!(cond)) kpanic("assertion failed: %s at %s:%d", #cond, __FILE__, __LINE__); } while (0)

#endif
