#!/usr/bin/env bash
# Build Coral's own QEMU: Debian's QEMU 7.2 source package (exactly the version
# installed as qemu-system-misc), with Debian's patches applied by dpkg-source,
# then ours (hw/qemu/[0-9]*.patch, in order), for riscv64-softmmu only.
# QEMU's source is never committed: it is fetched and unpacked under build/.
#
#   hw/qemu/build.sh               fetch, patch, configure, build; does nothing
#                                  when the stamp (patches + version + flags)
#                                  says the binary is up to date
#   hw/qemu/build.sh --force       build even if the stamp matches
#   hw/qemu/build.sh --diff [-n K] PATH..
#                                  print the edits in src/ to PATH.. (files or
#                                  directories of the tree) as a patch, against
#                                  pristine/ with our first K patches applied
#                                  (default 0): how a patch is (re)made
#
# Layout of build/qemu-n/:
#   dl/        the source package (.dsc, .orig.tar.xz, .debian.tar.xz)
#   pristine/  dpkg-source -x output, never edited: what patches are made against
#   src/       pristine + our patches
#   obj/       meson/ninja build tree
#   qemu-system-riscv64   the result (a link into obj/)
#
# JOBS (default 2) sets ninja's parallelism; it runs under nice -n 10.
set -euo pipefail

cd "$(dirname "$0")/../.."
HERE=hw/qemu
OUT=build/qemu-n
JOBS=${JOBS:-2}
CONFIGURE_FLAGS=(
  --target-list=riscv64-softmmu
  --without-default-features    # every optional feature off: faster build ...
  --enable-slirp                # ... but keep -netdev user (matrixd tests)
  --enable-fdt=system           # Debian's libfdt: the virt board needs it
  --enable-plugins              # -plugin: scripts/profile.sh NATIVE=1 counts instructions per function
  --disable-docs
  --disable-debug-info
  --disable-werror              # a newer compiler's warning must not stop us
)

say() { echo "qemu-n: $*"; }
die() { echo "qemu-n: error: $*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

if [ "${1:-}" = "--diff" ]; then
  shift
  k=0
  if [ "${1:-}" = "-n" ]; then k=$2; shift 2; fi
  [ $# -gt 0 ] || die "usage: build.sh --diff [-n K] PATH..."
  [ -d "$OUT/pristine" ] && [ -d "$OUT/src" ] || die "no $OUT/pristine or $OUT/src: build first"
  shopt -s nullglob
  earlier=("$HERE"/[0-9]*.patch)
  earlier=("${earlier[@]:0:$k}")
  # The base: PATH.. and whatever the earlier patches touch, from pristine/,
  # with those patches applied.
  rm -rf "$OUT/diffbase"
  mkdir -p "$OUT/diffbase"
  for f in "$@" $(sed -n 's#^+++ b/\([^\t]*\).*#\1#p' "${earlier[@]}" /dev/null); do
    [ -e "$OUT/pristine/$f" ] || continue
    mkdir -p "$OUT/diffbase/$(dirname "$f")"
    cp -a "$OUT/pristine/$f" "$OUT/diffbase/$(dirname "$f")/"
  done
  for p in "${earlier[@]}"; do
    patch -d "$OUT/diffbase" -p1 --fuzz=0 -s < "$p" > /dev/null || die "$p does not apply"
  done
  for p in "$@"; do
    # diff exits 1 when the trees differ, which is the point here.
    (cd "$OUT" && diff -ruN "diffbase/$p" "src/$p" || [ $? -eq 1 ])
  done | sed -e 's#^diff -ruN diffbase/\([^ ]*\) src/.*#diff -u a/\1 b/\1#' \
             -e 's#^--- diffbase/\([^\t]*\)\t.*#--- a/\1#' \
             -e 's#^+++ src/\([^\t]*\)\t.*#+++ b/\1#'
  rm -rf "$OUT/diffbase"
  exit 0
fi
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1

ver=$(dpkg-query -W -f='${source:Version}' qemu-system-misc 2>/dev/null) ||
  die "qemu-system-misc is not installed: run scripts/deps.sh"
[ -n "$ver" ] || die "cannot tell qemu-system-misc's source version"

shopt -s nullglob
patches=("$HERE"/[0-9]*.patch)
shopt -u nullglob
stamp_key=$( { echo "$ver"; echo "${CONFIGURE_FLAGS[*]}";
               for p in "${patches[@]}"; do echo "$p"; cat "$p"; done; } | sha256sum | cut -d' ' -f1)
if [ $FORCE -eq 0 ] && [ -x "$OUT/qemu-system-riscv64" ] &&
   [ "$(cat "$OUT/stamp" 2>/dev/null)" = "$stamp_key" ]; then
  say "up to date ($OUT/qemu-system-riscv64, QEMU $ver + ${#patches[@]} patches)"
  exit 0
fi
rm -f "$OUT/stamp"
t_all=$(now)

# Build dependencies (Debian packages only).
deps=(dpkg-dev ninja-build meson pkg-config libglib2.0-dev libpixman-1-dev
      libfdt-dev libslirp-dev zlib1g-dev gcc make python3)
missing=()
for p in "${deps[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing build dependencies: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# 1. Fetch the source package of the installed version.
t=$(now)
upstream=${ver#*:}          # drop the epoch: 7.2+dfsg-7+deb12u18
dsc="$OUT/dl/qemu_${upstream}.dsc"
if [ ! -f "$dsc" ]; then
  bash scripts/deps.sh --deb-src qemu "$ver"
  say "fetching Debian's source package qemu=$ver"
  mkdir -p "$OUT/dl"
  chmod 777 "$OUT/dl"         # apt's download user must be able to write here
  (cd "$OUT/dl" && apt-get source --download-only -qq "qemu=$ver") ||
    die "apt-get source qemu=$ver failed"
  [ -f "$dsc" ] || die "no $dsc after apt-get source"
fi
say "fetch: $(since "$t")"

# 2. Unpack with Debian's patches (once per version).
t=$(now)
if [ "$(cat "$OUT/pristine/.coral-version" 2>/dev/null)" != "$ver" ]; then
  say "unpacking with dpkg-source -x (applies Debian's quilt series)"
  rm -rf "$OUT/pristine" "$OUT/src" "$OUT/obj"
  dpkg-source -q -x "$dsc" "$OUT/pristine" > /dev/null
  rm -f "$OUT"/qemu_*.orig.tar.*   # dpkg-source leaves a copy beside the tree
  echo "$ver" > "$OUT/pristine/.coral-version"
fi

# 3. src = pristine + our patches. An existing src is brought back to pristine
# file by file (a plain cp gives the file a new mtime, so ninja recompiles
# what a dropped or changed patch had touched), which keeps rebuilds small.
if [ ! -d "$OUT/src" ]; then
  cp -a "$OUT/pristine" "$OUT/src"
else
  (cd "$OUT" && diff -rq pristine src || true) | while read -r line; do
    case $line in
      "Files pristine/"*" differ")
        f=${line#Files pristine/}; f=${f%% and src/*}
        cp "$OUT/pristine/$f" "$OUT/src/$f" ;;
      "Only in src/"*|"Only in src:"*)
        d=${line#Only in }; d=${d%%: *}; n=${line##*: }
        rm -rf "${OUT:?}/$d/$n" ;;
      "Only in pristine/"*|"Only in pristine:"*)
        d=${line#Only in pristine}; d=${d%%: *}; n=${line##*: }
        cp -a "$OUT/pristine$d/$n" "$OUT/src$d/$n" ;;
      *) die "unexpected diff output: $line" ;;
    esac
  done
fi
for p in "${patches[@]}"; do
  say "applying $(basename "$p")"
  patch -d "$OUT/src" -p1 --fuzz=0 --no-backup-if-mismatch -s < "$p" ||
    die "$(basename "$p") does not apply to qemu $ver: refresh it (see $HERE/README.md)"
done
say "unpack + patch: $(since "$t")"

# 4. Configure (again only when the flags changed).
t=$(now)
if [ "$(cat "$OUT/obj/.coral-configure" 2>/dev/null)" != "${CONFIGURE_FLAGS[*]}" ]; then
  say "configure ${CONFIGURE_FLAGS[*]}"
  rm -rf "$OUT/obj"
  mkdir -p "$OUT/obj"
  (cd "$OUT/obj" && ../src/configure "${CONFIGURE_FLAGS[@]}" > configure.log 2>&1) ||
    { tail -20 "$OUT/obj/configure.log"; die "configure failed (log: $OUT/obj/configure.log)"; }
  echo "${CONFIGURE_FLAGS[*]}" > "$OUT/obj/.coral-configure"
fi
say "configure: $(since "$t")"

# 5. Build only the one binary.
t=$(now)
say "building qemu-system-riscv64 (ninja -j$JOBS under nice)"
nice -n 10 ninja -C "$OUT/obj" -j"$JOBS" qemu-system-riscv64 ||
  die "build failed"
ln -sf obj/qemu-system-riscv64 "$OUT/qemu-system-riscv64"
say "build: $(since "$t")"

echo "$stamp_key" > "$OUT/stamp"
say "done in $(since "$t_all"): $OUT/qemu-system-riscv64"
"$OUT/qemu-system-riscv64" --version | head -1
