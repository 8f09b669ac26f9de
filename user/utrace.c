// utrace: the N extension as a user program sees it, written out as a trace.
// A fixed pseudo-random sequence of u-CSR instructions (every u-CSR; csrrw,
// csrrs, csrrc, their immediate forms, plain reads), `uret`, and user software
// interrupts the program raises itself through uip, with every value read and
// every entry of its handler printed. scripts/test.sh runs it on emulated user
// interrupts (stock QEMU: the kernel's emulation, kernel/nmodel.c) and on native
// ones (our QEMU with the N extension) and requires the two traces to be the
// same line for line: one definition of N, held by both.
//
// The handler (utrace_entry below) records ucause, uepc and ustatus, clears
// USIP and returns with uret; utvec always points at it (its writes are whole
// csrrw writes that keep the base and vary only the mode bits, so vectored mode
// is exercised too: USI is cause 0, which lands on the base). Exits 0 if it ran
// to the end.
#include "ulib.h"
#include "utest.h"

#define OPS 400

struct trap_log { uint64_t count, cause, epc, status; };
volatile struct trap_log trap_log;
extern void utrace_entry(void);

// The handler: t0-t2 are the interrupted code's, so they are saved on its
// stack; uscratch belongs to the test and is not touched.
__asm__(
  "        .text\n"
  "        .balign 4\n"
  "        .globl utrace_entry\n"
  "utrace_entry:\n"
  "        addi  sp, sp, -32\n"
  "        sd    t0, 0(sp)\n"
  "        sd    t1, 8(sp)\n"
  "        la    t0, trap_log\n"
  "        ld    t1, 0(t0)\n"
  "        addi  t1, t1, 1\n"
  "        sd    t1, 0(t0)\n"
  "        csrr  t1, 0x042\n"          // ucause
  "        sd    t1, 8(t0)\n"
  "        csrr  t1, 0x041\n"          // uepc
  "        sd    t1, 16(t0)\n"
  "        csrr  t1, 0x000\n"          // ustatus
  "        sd    t1, 24(t0)\n"
  "        li    t1, 1\n"
  "        csrc  0x044, t1\n"          // clear USIP
  "        ld    t0, 0(sp)\n"
  "        ld    t1, 8(sp)\n"
  "        addi  sp, sp, 32\n"
  "        .word 0x00200073\n");       // uret

static uint64_t seed = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void) {
  seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  return seed ^ (seed >> 29);
}

// One instruction on u-CSR `num` (a literal), kind `k`; returns the old value.
#define CSR_CASE(num)                                                                         \
  case num:                                                                                   \
    switch (k) {                                                                              \
    case 0: __asm__ volatile("csrrw %0, " #num ", %1" : "=r"(old) : "r"(v) : "memory"); break; \
    case 1: __asm__ volatile("csrrs %0, " #num ", %1" : "=r"(old) : "r"(v) : "memory"); break; \
    case 2: __asm__ volatile("csrrc %0, " #num ", %1" : "=r"(old) : "r"(v) : "memory"); break; \
    case 3: __asm__ volatile("csrrwi %0, " #num ", 17" : "=r"(old) :: "memory"); break;       \
    case 4: __asm__ volatile("csrrsi %0, " #num ", 1" : "=r"(old) :: "memory"); break;        \
    case 5: __asm__ volatile("csrrci %0, " #num ", 1" : "=r"(old) :: "memory"); break;        \
    default: __asm__ volatile("csrr %0, " #num : "=r"(old) :: "memory"); break;               \
    }                                                                                         \
    break;

static uint64_t csr_op(int num, int k, uint64_t v) {
  uint64_t old = 0;
  switch (num) {
    CSR_CASE(0x000) CSR_CASE(0x004) CSR_CASE(0x005) CSR_CASE(0x040)
    CSR_CASE(0x041) CSR_CASE(0x042) CSR_CASE(0x043) CSR_CASE(0x044)
  }
  return old;
}

static const int csrs[] = { 0x000, 0x004, 0x005, 0x040, 0x041, 0x042, 0x043, 0x044 };

// A value worth writing to csr: mostly the bits that mean something there,
// sometimes anything (what a WARL field keeps is part of the definition).
static uint64_t value_for(int csr) {
  uint64_t r = rnd();
  if (csr == 0x005)                  // utvec: keep the base, vary the mode
    return ((uint64_t)utrace_entry & ~3ULL) | (r & 3);
  if ((r & 7) == 0)
    return rnd();
  switch (csr) {
  case 0x000: return r & 0x11;       // ustatus: UIE, UPIE
  case 0x004: case 0x044: return r & 0x111;
  default: return rnd();
  }
}

// uret from ordinary code: uepc points just past it.
static void do_uret(void) {
  __asm__ volatile("la    t0, 1f\n\t"
                   "csrw  0x041, t0\n\t"
                   ".word 0x00200073\n"
                   "1:\n" ::: "t0", "memory");
}

int main(void) {
  utest_prog = "utrace";
  __asm__ volatile("csrw 0x005, %0" :: "r"((uint64_t)utrace_entry));
  uint64_t traps0 = 0, hash = 0;
  for (int i = 0; i < OPS; i++) {
    uint64_t r = rnd();
    if (r % 16 == 0) {
      do_uret();
      uint64_t st = csr_op(0x000, 6, 0);
      printf("utrace: %d uret -> ustatus %lx\n", i, (unsigned long)st);
      hash = hash * 31 + st;
    } else {
      int csr = csrs[(r >> 8) % 8], k = (int)((r >> 16) % 7);
      if (csr == 0x005 && k != 0)
        k = 6;                       // utvec: whole writes only, so the base stays
      uint64_t v = value_for(csr);
      uint64_t old = csr_op(csr, k, v);
      printf("utrace: %d csr %03x op %d value %lx -> %lx\n", i, csr, k, (unsigned long)v,
             (unsigned long)old);
      hash = hash * 31 + old;
    }
    if (trap_log.count != traps0) {
      traps0 = trap_log.count;
      printf("utrace: %d handler entered (%lu so far): ucause %lx uepc %lx ustatus %lx\n", i,
             (unsigned long)traps0, (unsigned long)trap_log.cause, (unsigned long)trap_log.epc,
             (unsigned long)trap_log.status);
      hash = hash * 31 + trap_log.cause + trap_log.epc + trap_log.status;
    }
  }
  // Leave the interrupt state quiet before exit.
  __asm__ volatile("csrw 0x000, zero\n\tcsrw 0x004, zero" ::: "memory");
  printf("utrace: %d operations, %lu handler entries, trace hash %lx\n", OPS,
         (unsigned long)trap_log.count, (unsigned long)hash);
  check("handler-entered", trap_log.count > 0, 1);
  return utest_summary();
}
