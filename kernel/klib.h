// Freestanding helpers the kernel provides for itself (kernel/klib.c).
// The names and signatures are the standard C ones, so portable files that use
// them (fdt.c, the allocators, the executor) also build unchanged against the
// host's libc in the unit tests.
#ifndef KLIB_H
#define KLIB_H
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

void *memset(void *dst, int c, size_t n);
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
size_t strnlen(const char *s, size_t max);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strstr(const char *hay, const char *needle);

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define ALIGN_UP(x, a) (((x) + (a) - 1) & ~((uint64_t)(a) - 1))
#define ALIGN_DOWN(x, a) ((x) & ~((uint64_t)(a) - 1))

#endif
