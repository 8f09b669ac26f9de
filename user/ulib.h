// The Coral user library: system calls (usys.S) and a small libc subset
// (ulib.c, printf.c, umalloc.c, uthread.c). Every program includes this one
// header.
#ifndef CORAL_ULIB_H
#define CORAL_ULIB_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "abi.h"

// ---- system calls (usys.S; docs/ABI.md describes each one) ----
// Every call returns a negative errno (-EFAULT, ...) on failure.
void exit(int status) __attribute__((noreturn));
int getpid(void);
long write(int fd, const void *buf, long n);
long read(int fd, void *buf, long n);
int close(int fd);
int pipe(int fds[2]);
int sleep(long ms);
int yield(void);
int spawn(const char *name, const char *const argv[]);
int wait(int pid, int *status);
int kill(int pid);
long brk(void *addr);   // the new break, or -ENOMEM; brk(0) returns the current break
long uptime(void);      // milliseconds since boot, read in user mode (ulib.c)
long sys_uptime(void);  // the same by the system call
// The time CSR, which the kernel lets user mode read (scounteren); it counts at
// the vvar page's timebase_hz (10 MHz on QEMU's virt board).
static inline uint64_t rdtime(void) {
  uint64_t t;
  __asm__ volatile("rdtime %0" : "=r"(t));
  return t;
}
long kstat(int what);
// A system call by number, for what the stubs in usys.S cannot make: the
// async form (a7 | SYS_ASYNC, a4 = the caller's priority, a5 = its cid:
// abi.h), and in tests numbers and arguments of any kind. The kernel keeps
// every register but a0.
static inline long ecall_raw(uint64_t nr, long a0, long a1, long a2, long a4, long a5) {
  register long r_a0 __asm__("a0") = a0;
  register long r_a1 __asm__("a1") = a1;
  register long r_a2 __asm__("a2") = a2;
  register long r_a4 __asm__("a4") = a4;
  register long r_a5 __asm__("a5") = a5;
  register long r_a7 __asm__("a7") = (long)nr;
  __asm__ volatile("ecall" : "+r"(r_a0) : "r"(r_a1), "r"(r_a2), "r"(r_a4), "r"(r_a5), "r"(r_a7)
                   : "memory");
  return r_a0;
}
long uwait(void);
// Raw thread calls (kernel/abi.h). Use uthread_create/uthread_join below.
int thread_create(void (*entry)(void *), void *arg, void *stack_top);
void thread_exit(int status) __attribute__((noreturn));
int thread_join(int tid, int *status);
// (uthread.c) A thread running fn(arg) on a fresh 16 KiB stack; its return value becomes
// its exit status. Call from one thread at a time (they share one table of stacks).
int uthread_create(int (*fn)(void *), void *arg);
int uthread_join(int tid, int *status);     // also frees the thread's stack
// (uthread.c) A lock between the threads of one process (malloc's, ...), 0 =
// free. A thread that finds it held spins a little, then yields its hart.
// Never from a user-interrupt handler: it would wait for the very code it
// interrupted.
void ulock_acquire(volatile int *lock);
void ulock_release(volatile int *lock);
// TCP sockets (docs/ABI.md). A socket is a descriptor: close() ends it, and
// read/write work on a connected one like recv/send.
int socket(void);
int bind(int fd, int port);
int listen(int fd, int backlog);
int accept(int fd);
long recv(int fd, void *buf, long n);
long send(int fd, const void *buf, long n);
int shutdown(int fd, int how);
// Waits until the connection is up or has failed: -ECONNREFUSED, -ETIMEDOUT,
// -ENETUNREACH... ip in host order; IP4(127, 0, 0, 1) is the loopback interface.
int connect(int fd, uint32_t ip, int port);
#define IP4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))
int setkmode(int mode);       // KMODE_*: how the kernel serves calls that wait; returns the old mode
long uintr_recv(void);        // this thread's receive page on the user-interrupt controller, or 0
int dup(int fd);              // a second descriptor (the lowest free) for fd's file, or -EBADF / -EMFILE

// ---- strings and memory (ulib.c) ----
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strcpy(char *dst, const char *src);
char *strchr(const char *s, int c);
void *memset(void *dst, int c, size_t n);
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
int memcmp(const void *a, const void *b, size_t n);
int atoi(const char *s);
long atol(const char *s);
void sort_u64(uint64_t *v, long n);   // ascending, in place (benchmarks' samples)

// ---- formatted output (printf.c) ----
// Formats: %d %i %u %x %X %ld %lu %lx %p %s %c %%, with a width and the 0 and -
// flags. One call produces one write() (for output up to PRINTF_BUF bytes),
// so lines from different processes do not interleave mid-line. snprintf
// always NUL-terminates (if size > 0) and returns the length it wanted.
#define PRINTF_BUF 512
int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int fprintf(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int vfprintf(int fd, const char *fmt, va_list ap);
int snprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int puts(const char *s);   // s and a newline on fd 1

// The symbolic name of an error: errname(-EFAULT) is "EFAULT". Returns "" for
// values that are not a known negative errno.
const char *errname(long err);

// ---- processes (ulib.c) ----
// Waits with wait(-1) until the child `pid` exits and stores its exit status
// in *status (if status is not NULL). Any other child that exits meanwhile is
// reaped too and, if `other` is not NULL, reported through other(its pid, its
// exit status). Returns 0, or the negative errno wait() failed with (then
// *status is left alone).
int wait_for(int pid, int *status, void (*other)(int pid, int status));

// ---- console input (ulib.c) ----
// Reads one line from fd 0 into buf (at most max-1 characters, NUL-terminated,
// without the line end) and returns its length. The kernel does no echo or
// line editing, so readline does both: it echoes what it reads to fd 1,
// removes the previous character on backspace (0x7f or 0x08), and ends the
// line at \r or \n (echoed as a newline). Ctrl-D on an empty line counts as end
// of file. Returns -1 at end of file (or on a read error) when nothing was read.
int readline(char *buf, int max);

// ---- heap (umalloc.c, on top of brk) ----
void *malloc(size_t n);
void free(void *p);
void *calloc(size_t count, size_t size);
void *realloc(void *p, size_t n);

#endif
