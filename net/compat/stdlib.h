// lwIP includes <stdlib.h> in a few files; its heap goes through
// mem_clib_malloc (kmalloc, see net/lwipopts.h), and the one function it does
// use, atoi (netif_find), comes from net/port.c.
#ifndef CORAL_COMPAT_STDLIB_H
#define CORAL_COMPAT_STDLIB_H
#include <stddef.h>
int atoi(const char *s);
#endif
