// The RISC-V N extension (user-level interrupts) as a pure C model: the u-CSRs
// with their masks and access checks, trap entry to U, uret, and "which user
// interrupt is deliverable now". One model, two users:
//   - the kernel's emulation (kernel/uintr_emul.c) runs it on each thread's
//     shadow u-CSRs;
//   - the RTL's differential testbench (hw/tb/) compares hw/rtl/ucsr.sv with
//     it after every clock.
// Freestanding C11: no kernel header, no libc, only <stdint.h>. The one shared
// field (uip, which another hart may set) is touched with the compiler's
// __atomic builtins, as the kernel does everywhere else.
//
// Choices where the N draft leaves room (hw/README.md explains them):
//   - interrupt priority UEI > USI > UTI (the privileged spec's M/S order);
//   - a utvec write with a reserved MODE (2 or 3) is ignored, as QEMU treats
//     stvec and mtvec (so MODE bit 1 always reads 0);
//   - uie/uip show only bits delegated by both mideleg and sideleg; U may write
//     only USIP in uip; UTIP/UEIP (and a device's USIP) are wires (nm_env.lines),
//     shown in uip but, as for mip.SEIP, not part of a csrrs/csrrc's old value;
//   - sedeleg/sideleg keep what was legal when written, and are ANDed with
//     medeleg/mideleg again when used (a stale bit that M took back is inert);
//   - uret is legal only in U-mode.
#ifndef NMODEL_H
#define NMODEL_H
#include <stdint.h>

// CSR numbers. Bits 9:8 of the number are the lowest privilege allowed.
#define NM_CSR_USTATUS  0x000
#define NM_CSR_UIE      0x004
#define NM_CSR_UTVEC    0x005
#define NM_CSR_USCRATCH 0x040
#define NM_CSR_UEPC     0x041
#define NM_CSR_UCAUSE   0x042
#define NM_CSR_UTVAL    0x043
#define NM_CSR_UIP      0x044
#define NM_CSR_SEDELEG  0x102
#define NM_CSR_SIDELEG  0x103

#define NM_INSN_URET 0x00200073u

#define NM_USTATUS_UIE  (1ULL << 0)
#define NM_USTATUS_UPIE (1ULL << 4)

// Interrupt codes, and their bits in uie/uip/sideleg/mideleg.
#define NM_IRQ_USI 0
#define NM_IRQ_UTI 4
#define NM_IRQ_UEI 8
#define NM_USIP (1ULL << NM_IRQ_USI)
#define NM_UTIP (1ULL << NM_IRQ_UTI)
#define NM_UEIP (1ULL << NM_IRQ_UEI)
#define NM_U_INTS (NM_USIP | NM_UTIP | NM_UEIP)
// Exceptions that U-mode code can raise, so that sedeleg may hold them:
// causes 0-8 (misaligned/access faults, illegal, breakpoint, ecall from U)
// and the page faults 12, 13, 15.
#define NM_U_EXCS 0xB1FFULL
#define NM_CAUSE_INTERRUPT (1ULL << 63)

#define NM_PRIV_U 0
#define NM_PRIV_S 1
#define NM_PRIV_M 3

// csr_op: the low two bits of a CSR instruction's funct3.
#define NM_CSRRW 1
#define NM_CSRRS 2
#define NM_CSRRC 3

// The architectural state of one hart's N extension. All zero at reset.
struct nm_hart {
  uint64_t ustatus;    // UIE, UPIE
  uint64_t uie;        // enable bits, NM_U_INTS only; visible as uie & deleg
  uint64_t uip;        // software-set pending bits (USIP); atomic
  uint64_t utvec;      // BASE | MODE (0 or 1: bit 1 always 0)
  uint64_t uscratch;
  uint64_t uepc;       // bit 0 always 0
  uint64_t ucause;
  uint64_t utval;
  uint64_t sedeleg;    // NM_U_EXCS bits that medeleg had when written
  uint64_t sideleg;    // NM_U_INTS bits that mideleg had when written
};

// What the rest of the hart tells the model: its privilege, M's delegation
// registers, and the pending lines driven by hardware (UTIP, UEIP, and a
// device's USIP), in uip bit positions.
struct nm_env {
  unsigned priv;
  uint64_t mideleg, medeleg;
  uint64_t lines;
};

// Interrupts that belong to U right now: sideleg & mideleg. The S-level
// interrupt logic must not take these.
uint64_t nm_u_ideleg(const struct nm_hart *h, const struct nm_env *e);
// uip as read: (software bits | lines) & nm_u_ideleg.
uint64_t nm_uip(const struct nm_hart *h, const struct nm_env *e);
// S-mode (or a post from another hart) sets pending bits by hand.
void nm_raise(struct nm_hart *h, uint64_t bits);
// Exactly `csrc uip, USIP` (rd = x0) from U, which may always access uip: the
// kernel's SYS_uintr_ret does it on every emulated handler's return, and the
// general CSR path (read, then the write half) cost about 100 instructions.
void nm_clear_usip(struct nm_hart *h, const struct nm_env *e);

// Read CSR csr into *val. Returns 0, or -1 if it is not an N CSR or the
// privilege is too low (the instruction is then illegal).
int nm_csr_read(const struct nm_hart *h, const struct nm_env *e, uint32_t csr,
                uint64_t *val);
// One CSR instruction: op is NM_CSRRW/RS/RC, src the rs1 value or immediate,
// write says whether it writes (csrrw always; csrrs/csrrc only when rs1 is not
// x0). *old receives the value read. Returns 0, or -1 (illegal, no effect).
int nm_csr_access(struct nm_hart *h, const struct nm_env *e, uint32_t csr, int op,
                  uint64_t src, int write, uint64_t *old);

// The user interrupt to take now (NM_IRQ_*), or -1: only in U with UIE set,
// only for bits pending, enabled and delegated, in the order UEI > USI > UTI.
int nm_pending_irq(const struct nm_hart *h, const struct nm_env *e);
// Is exception cause (no interrupt bit) delegated to U? Only from U, and only
// if both sedeleg and medeleg say so.
int nm_exception_to_u(const struct nm_hart *h, const struct nm_env *e, uint64_t cause);
// Trap entry to U (the caller has decided it is taken): UPIE <- UIE, UIE <- 0,
// uepc, ucause, utval. Returns the handler's pc: utvec's base, plus 4 * code
// for an interrupt in vectored mode.
uint64_t nm_trap(struct nm_hart *h, uint64_t cause, uint64_t pc, uint64_t tval);
// uret: UIE <- UPIE, UPIE <- 1, *pc <- uepc. Returns 0, or -1 if not in U.
int nm_uret(struct nm_hart *h, const struct nm_env *e, uint64_t *pc);

#endif
