#!/usr/bin/env bash
# Install every tool Coral needs, from Debian packages only. Idempotent: a package
# already present is skipped, and apt is not touched at all when nothing is missing.
#
#   scripts/deps.sh            toolchain, emulator, firmware (what build/test need)
#   scripts/deps.sh --all      also what later parts need (verilator, plotting, ...)
#   scripts/deps.sh --hw       only the RTL tools of hw/ (verilator, yosys)
#   scripts/deps.sh --eval     only what `make eval` adds: gnuplot for its plots
#   scripts/deps.sh --lwip DIR lwIP 2.1.3 from Debian's source package, unpacked
#                              into DIR/lwip-2.1.3 (an ignored build folder), with
#                              our patches (net/patches/) applied
#   scripts/deps.sh --deb-src PKG VER  make sure apt can fetch source package
#                              PKG at version VER (adds a deb-src entry if not;
#                              hw/qemu/build.sh uses it for QEMU)
#   scripts/deps.sh --linux    what the Linux baseline needs (scripts/linux/build.sh):
#                              Debian's Linux 6.1 source (linux-source-6.1),
#                              the RISC-V Linux cross compiler and C library
#   scripts/deps.sh --sim VENV what `make sim` needs: Verilator and the libraries
#                              of LiteX's simulator (Debian), and LiteX with the
#                              Rocket Verilog (PyPI, pinned) in the virtual
#                              environment VENV (an ignored build folder)
set -euo pipefail

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# Make sure `apt-get source PKG` can find version VER (a prefix is enough).
ensure_deb_src() {
  local pkg=$1 ver=$2
  # grep reads all of the output: with -q it could exit first, and pipefail
  # would then see apt-cache die of SIGPIPE and report "not found".
  if ! apt-cache showsrc "$pkg" 2>/dev/null | grep -F "Version: $ver" > /dev/null; then
    # No deb-src entry yet: add one with the same URI and suite as the
    # machine's own Debian entry.
    local uri suite
    uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    suite=$(awk '/^Suites:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    [ -n "$uri" ] || uri=http://deb.debian.org/debian
    [ -n "$suite" ] || suite=bookworm
    echo "deps.sh: adding a deb-src entry for $uri $suite (to fetch $pkg's source package)"
    printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$uri" "$suite" | $SUDO tee /etc/apt/sources.list.d/coral-src.sources > /dev/null
    $SUDO apt-get update -qq
  fi
}

# lwIP is third-party source: it is never committed, only fetched. Debian's
# source package is the upstream release (the orig tarball, with a few files
# Debian cannot ship removed: "+dfsg1") plus Debian's packaging, which Coral
# does not need. dpkg-source may be absent, so the tarball is unpacked by hand.
# The tarball is kept in DIR/lwip-dl, so that a change to our patches only
# unpacks it again.
#
# Our own changes to lwIP are patch files in net/patches/ (net/patches/README.md
# says what each does), applied in name order with `patch --fuzz=0`: a
# different lwIP (a new Debian revision) that moved the lines they touch
# fails here, loudly, instead of being patched somewhere else. The unpacked
# tree records which patches it has (.coral-patches, a hash of their names
# and contents) and is unpacked afresh when they change.
fetch_lwip() {
  local dir=$1 ver=2.1.3
  local tree=$dir/lwip-$ver dl=$dir/lwip-dl
  local patches=() want
  if [ -n "${LWIP_PATCHES+set}" ]; then
    # The Makefile names them (LWIP_PATCHES= builds lwIP as Debian ships
    # it, to measure what a patch changes: scripts/profile-idle.sh --compare).
    read -r -a patches <<< "$LWIP_PATCHES"
  else
    shopt -s nullglob
    patches=("$(dirname "$0")"/../net/patches/[0-9]*.patch)
    shopt -u nullglob
  fi
  want=$( { echo "$ver"; for p in "${patches[@]}"; do basename "$p"; cat "$p"; done; } | sha256sum | cut -d' ' -f1)
  [ -f "$tree/src/core/tcp.c" ] && [ "$(cat "$tree/.coral-patches" 2>/dev/null)" = "$want" ] && return 0
  local orig
  orig=$(ls "$dl"/lwip_"$ver"*.orig.tar.* 2>/dev/null | head -1 || true)
  if [ -z "$orig" ]; then
    ensure_deb_src lwip "$ver"
    local tmp
    tmp=$(mktemp -d)
    echo "deps.sh: fetching lwIP $ver (Debian source package) into $dir"
    (cd "$tmp" && chmod 777 . && apt-get source --download-only -qq lwip > /dev/null 2>&1) ||
      { echo "deps.sh: apt-get source lwip failed" >&2; rm -rf "$tmp"; exit 1; }
    orig=$(ls "$tmp"/lwip_"$ver"*.orig.tar.* 2>/dev/null | head -1)
    [ -n "$orig" ] || { echo "deps.sh: no lwIP $ver orig tarball in the source package" >&2; rm -rf "$tmp"; exit 1; }
    mkdir -p "$dl"
    cp "$orig" "$dl/"
    rm -rf "$tmp"
    orig=$dl/$(basename "$orig")
  fi
  rm -rf "$tree"
  mkdir -p "$dir"
  tar -xf "$orig" -C "$dir"
  [ -f "$tree/src/core/tcp.c" ] || { echo "deps.sh: unexpected lwIP tarball layout" >&2; exit 1; }
  local p
  for p in "${patches[@]}"; do
    echo "deps.sh: lwIP: applying $(basename "$p")"
    patch -d "$tree" -p1 --fuzz=0 --no-backup-if-mismatch -s < "$p" ||
      { echo "deps.sh: $(basename "$p") does not apply to this lwIP $ver: update it (net/patches/)" >&2; rm -rf "$tree"; exit 1; }
  done
  echo "$want" > "$tree/.coral-patches"
}

# LiteX 2022.12 is the newest LiteX whose Rocket wrapper asks for the file
# names the newest pythondata-cpu-rocket (0.0.post7146) ships; every other
# package is the release of that time. hw/soc/README.md says why each is pinned.
sim_pip=(
  litex==2022.12 litedram==2022.12 liteeth==2022.12 liteiclink==2022.12 litescope==2022.12
  migen==0.9.2
  pythondata-cpu-rocket==0.0.post7146
  pythondata-software-picolibc==1.7.9.post181
  pythondata-software-compiler_rt==0.0.post6206
  pythondata-misc-tapcfg==0.0.post517
)
# The ZCU102's pins (make fpga) come from LiteX-Boards, whose only release on
# PyPI is 2023.12: installed without its dependencies, so that it cannot
# replace LiteX 2022.12 (hw/soc/zcu102.py bridges the one name that differs).
sim_pip_nodeps=(litex-boards==2023.12)
sim_venv() {
  local venv=$1 want
  want=$(printf '%s\n' "${sim_pip[@]}" "${sim_pip_nodeps[@]}")
  [ -f "$venv/.pinned" ] && [ "$(cat "$venv/.pinned")" = "$want" ] && return 0
  echo "deps.sh: installing LiteX and the Rocket core (PyPI, pinned) into $venv"
  [ -x "$venv/bin/pip" ] || /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q "${sim_pip[@]}"
  "$venv/bin/pip" install -q --no-deps "${sim_pip_nodeps[@]}"
  printf '%s\n' "$want" > "$venv/.pinned"
}

if [ "${1:-}" = "--lwip" ]; then
  fetch_lwip "${2:?usage: deps.sh --lwip DIR}"
  exit 0
fi
if [ "${1:-}" = "--deb-src" ]; then
  ensure_deb_src "${2:?usage: deps.sh --deb-src PKG VER}" "${3:?usage: deps.sh --deb-src PKG VER}"
  exit 0
fi

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
hw_pkgs=(
  verilator                    # hw/: lint and the differential testbench
  yosys                        # hw/: synthesis estimates (make hw-synth)
)
sim_pkgs=(
  verilator zlib1g-dev         # make sim: LiteX's Verilator simulation
  libevent-dev libjson-c-dev   # ... its simulated peripherals (serial over the terminal)
  meson ninja-build python3-venv
)
eval_pkgs=(
  gnuplot-nox                  # make eval: the PNG figures of docs/results/eval.md
  gdb-multiarch                # make eval: reads the kernel's memory counters (Table 3)
)
linux_pkgs=(
  linux-source-6.1             # the Linux baseline: built at bench time (never committed)
  gcc-riscv64-linux-gnu libc6-dev-riscv64-cross   # ... and its init and server, static
  flex bison bc                # what the kernel's build needs besides gcc and make
)
extra_pkgs=(
  "${hw_pkgs[@]}"
  "${eval_pkgs[@]}"
  python3-matplotlib           # plots of benchmark results
)

pkgs=("${core_pkgs[@]}")
[ "${1:-}" = "--all" ] && pkgs+=("${extra_pkgs[@]}")
[ "${1:-}" = "--hw" ] && pkgs=("${hw_pkgs[@]}")
[ "${1:-}" = "--eval" ] && pkgs=("${eval_pkgs[@]}")
[ "${1:-}" = "--sim" ] && pkgs=("${sim_pkgs[@]}")
[ "${1:-}" = "--linux" ] && pkgs=("${linux_pkgs[@]}")

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ "${1:-}" = "--sim" ] && sim_venv "${2:?usage: deps.sh --sim VENV}"
exit 0
