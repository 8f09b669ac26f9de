#!/usr/bin/env bash
# Install every tool Coral needs, from Debian packages only. Idempotent: a package
# already present is skipped, and apt is not touched at all when nothing is missing.
#
#   scripts/deps.sh            toolchain, emulator, firmware (what build/test need)
#   scripts/deps.sh --all      also what later parts need (verilator, plotting, ...)
set -euo pipefail

core_pkgs=(
  gcc-riscv64-unknown-elf      # cross compiler for kernel, vDSO and user programs
  binutils-riscv64-unknown-elf
  picolibc-riscv64-unknown-elf # C library for user programs
  qemu-system-misc             # qemu-system-riscv64 (7.2, machine virt)
  opensbi                      # fw_dynamic.bin, the M-mode firmware
  gdb-multiarch                # make qemu-gdb
  device-tree-compiler         # dtc: tests decode the board's DTB
  gcc make python3
)
extra_pkgs=(
  verilator                    # hw/: RTL unit tests
  python3-matplotlib           # plots of benchmark results
)

pkgs=("${core_pkgs[@]}")
[ "${1:-}" = "--all" ] && pkgs+=("${extra_pkgs[@]}")

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
