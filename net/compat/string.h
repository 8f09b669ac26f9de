// lwIP includes <string.h> for memcpy and friends; the kernel has its own
// (kernel/klib.h), with the standard names and signatures.
#ifndef CORAL_COMPAT_STRING_H
#define CORAL_COMPAT_STRING_H
#include "klib.h"
#endif
