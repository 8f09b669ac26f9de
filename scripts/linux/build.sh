#!/usr/bin/env bash
# Build the Linux baseline (booted by scripts/bench-light.sh for make
# bench-smp, and by scripts/bench-micro.sh): Debian's Linux 6.1 source (the
# linux-source-6.1 package, unpacked at build time and never committed),
# configured as tinyconfig plus scripts/linux/linux.config, with an initramfs
# built into the image that holds our init (scripts/linux/init.c), the
# host's matrix-echo server (scripts/host/mserver.c) and the microbenchmarks
# (scripts/linux/lbench.c), all static RISC-V Linux programs. Prints the
# image's path. The result is cached: a second run rebuilds nothing unless
# one of those inputs, or the source package's version, changed.
#
#   scripts/linux/build.sh [BUILD]     (default build/; the image is BUILD/linux/Image)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=$(realpath -m "${1:-build}")
dir=$BUILD/linux
bash scripts/deps.sh --linux >&2
tarball=/usr/src/linux-source-6.1.tar.xz
version=$(dpkg-query -W -f='${Version}' linux-source-6.1)
inputs=(scripts/linux/linux.config scripts/linux/init.c scripts/linux/lbench.c scripts/host/mserver.c
  user/matrix_proto.c user/matrix_proto.h scripts/linux/build.sh)
want=$( { echo "$version"; cat "${inputs[@]}"; } | sha256sum | cut -d' ' -f1)
if [ -f "$dir/Image" ] && [ "$(cat "$dir/Image.inputs" 2> /dev/null)" = "$want" ]; then
  echo "$dir/Image"
  exit 0
fi
mkdir -p "$dir"
if [ "$(cat "$dir/src.version" 2> /dev/null)" != "$version" ]; then
  echo "linux: unpacking Debian's linux-source-6.1 $version into $dir/src" >&2
  rm -rf "$dir/src" "$dir/obj"
  mkdir -p "$dir/src"
  tar -xf "$tarball" -C "$dir/src" --strip-components=1
  echo "$version" > "$dir/src.version"
fi
# The initramfs: our init and the server, static, and a console node.
cross=riscv64-linux-gnu-
mkdir -p "$dir/initramfs"
${cross}gcc -static -O2 -Wall -Wextra -Werror scripts/linux/init.c -o "$dir/initramfs/init"
${cross}gcc -static -O2 -Wall -Wextra -Werror -pthread scripts/linux/lbench.c -o "$dir/initramfs/lbench"
${cross}gcc -std=gnu11 -static -O2 -Wall -Wextra -Werror -Iuser scripts/host/mserver.c \
  user/matrix_proto.c -lm -o "$dir/initramfs/mserver"
cat > "$dir/initramfs.list" << LIST
dir /dev 0755 0 0
nod /dev/console 0600 0 0 c 5 1
file /init $dir/initramfs/init 0755 0 0
file /mserver $dir/initramfs/mserver 0755 0 0
file /lbench $dir/initramfs/lbench 0755 0 0
LIST
# The configuration: tinyconfig, then our fragment (with the initramfs's
# list at its absolute path), then Kconfig's defaults for whatever is left.
kmake() { make -s -C "$dir/src" O="$dir/obj" ARCH=riscv CROSS_COMPILE=$cross "$@"; }
mkdir -p "$dir/obj"
kmake tinyconfig > /dev/null
sed "s|^CONFIG_INITRAMFS_SOURCE=.*|CONFIG_INITRAMFS_SOURCE=\"$dir/initramfs.list\"|" \
  scripts/linux/linux.config > "$dir/fragment.config"
(cd "$dir/src" && ARCH=riscv scripts/kconfig/merge_config.sh -m -O "$dir/obj" "$dir/obj/.config" \
  "$dir/fragment.config" > /dev/null)
kmake olddefconfig
# Every option of the fragment must have survived (a dependency it lacks
# would drop it silently, and the guest would boot without, say, its network).
missing=$(grep '^CONFIG_' "$dir/fragment.config" | while read -r line; do
  grep -qxF "$line" "$dir/obj/.config" || echo "$line"; done)
if [ -n "$missing" ]; then
  echo "linux: Kconfig dropped these options of scripts/linux/linux.config:" $missing >&2
  exit 1
fi
echo "linux: building the kernel (about 3 minutes on 2 cores; once)" >&2
t0=$SECONDS
kmake -j"$(nproc)" Image >&2
cp "$dir/obj/arch/riscv/boot/Image" "$dir/Image"
echo "$want" > "$dir/Image.inputs"
echo "linux: built $dir/Image in $((SECONDS - t0)) s" >&2
echo "$dir/Image"
