// SBI calls: a7 = extension id, a6 = function id, a0..a2 = arguments;
// the firmware returns an error code in a0 and a value in a1.
#include "sbi.h"
#include "printf.h"

struct sbiret sbi_call4(long ext, long fid, long arg0, long arg1, long arg2, long arg3) {
  register long a0 __asm__("a0") = arg0;
  register long a1 __asm__("a1") = arg1;
  register long a2 __asm__("a2") = arg2;
  register long a3 __asm__("a3") = arg3;
  register long a6 __asm__("a6") = fid;
  register long a7 __asm__("a7") = ext;
  __asm__ volatile("ecall" : "+r"(a0), "+r"(a1) : "r"(a2), "r"(a3), "r"(a6), "r"(a7) : "memory");
  return (struct sbiret){ a0, a1 };
}

struct sbiret sbi_call(long ext, long fid, long arg0, long arg1, long arg2) {
  return sbi_call4(ext, fid, arg0, arg1, arg2, 0);
}

void sbi_console_putchar(int c) {
  sbi_call(0x01, 0, c, 0, 0);   // legacy console putchar
}

long sbi_probe_extension(long ext) {
  struct sbiret r = sbi_call(SBI_EXT_BASE, 3, ext, 0, 0);
  return r.error ? 0 : r.value;
}

void sbi_set_timer(uint64_t when) { sbi_call(SBI_EXT_TIME, 0, (long)when, 0, 0); }

void sbi_send_ipi(uint64_t hart_mask, uint64_t mask_base) {
  sbi_call(SBI_EXT_IPI, 0, (long)hart_mask, (long)mask_base, 0);
}

long sbi_remote_sfence_vma(uint64_t hart_mask, uint64_t mask_base, uint64_t start, uint64_t size) {
  return sbi_call4(SBI_EXT_RFENCE, 1, (long)hart_mask, (long)mask_base, (long)start, (long)size).error;
}

long sbi_hart_start(uint64_t hartid, uint64_t start, uint64_t opaque) {
  return sbi_call(SBI_EXT_HSM, 0, (long)hartid, (long)start, (long)opaque).error;
}

long sbi_hart_status(uint64_t hartid) {
  struct sbiret r = sbi_call(SBI_EXT_HSM, 2, (long)hartid, 0, 0);
  return r.error ? r.error : r.value;
}

void sbi_shutdown(int failure) {
  struct sbiret r = sbi_call(SBI_EXT_SRST, 0, SBI_RESET_SHUTDOWN,
                             failure ? SBI_RESET_REASON_FAILURE : SBI_RESET_REASON_NONE, 0);
  // Still here: the firmware has no way to end this machine (OpenSBI on the
  // LiteX SoC has no reset device). Say so, so that a person or a script
  // (make sim's --until) knows the run is over, and halt this hart.
  kprintf("poweroff: the firmware cannot power this machine off (SBI system reset: error %ld); "
          "halted (%s)\n", r.error, failure ? "failure" : "success");
  for (;;)
    __asm__ volatile("wfi");
}
