// Calls into the SBI firmware (OpenSBI): the RISC-V SBI specification v1.0.
#ifndef SBI_H
#define SBI_H
#include <stdint.h>

struct sbiret { long error; long value; };

#define SBI_EXT_BASE 0x10
#define SBI_EXT_TIME 0x54494D45
#define SBI_EXT_IPI 0x735049
#define SBI_EXT_HSM 0x48534D
#define SBI_EXT_SRST 0x53525354
#define SBI_EXT_RFENCE 0x52464E43

#define SBI_ERR_ALREADY_AVAILABLE (-6)   // HSM: the hart is already started
#define SBI_HSM_STARTED 0
#define SBI_HSM_STOPPED 1

#define SBI_RESET_SHUTDOWN 0
#define SBI_RESET_REASON_NONE 0
#define SBI_RESET_REASON_FAILURE 1

struct sbiret sbi_call(long ext, long fid, long a0, long a1, long a2);
struct sbiret sbi_call4(long ext, long fid, long a0, long a1, long a2, long a3);
void sbi_console_putchar(int c);            // legacy extension: before the UART is up
long sbi_probe_extension(long ext);
void sbi_set_timer(uint64_t when);
void sbi_send_ipi(uint64_t hart_mask, uint64_t mask_base);
// sfence.vma over [start, start + size) on the harts in the mask (all
// addresses if size is 0 or huge); returns once every one of them has done it.
long sbi_remote_sfence_vma(uint64_t hart_mask, uint64_t mask_base, uint64_t start, uint64_t size);
long sbi_hart_start(uint64_t hartid, uint64_t start, uint64_t opaque);
long sbi_hart_status(uint64_t hartid);
// Shut the machine down with a status; QEMU exits (non-zero on failure).
__attribute__((noreturn)) void sbi_shutdown(int failure);

#endif
