#!/usr/bin/env bash
# Where do a benchmark's instructions go? Runs one ubench benchmark twice under
# QEMU -icount shift=0,sleep=off with the insnprof plugin (scripts/host/insnprof.c), with
# ROUNDS and 2*ROUNDS repetitions, subtracts the two address profiles (boot and
# set-up cancel), and prints instructions per repetition by function, split
# into OpenSBI (M-mode), kernel, vDSO and the user program.
#
#   scripts/profile.sh BENCH [ROUNDS]     e.g. scripts/profile.sh async_roundtrip 400
#   NATIVE=1 scripts/profile.sh ...       on our QEMU with the N extension (make qemu-n)
#   SMP=2 scripts/profile.sh remote_delivery 400   two harts (counts both)
#   SMP=2 HART=1 scripts/profile.sh ...   count hart 1 alone (much slower)
#
# BENCH is a name `ubench --only` knows (it lists them); what one repetition is
# depends on the benchmark (async_roundtrip: ROUNDS/4 round trips, each with
# the benchmark's calibration around it; async_roundtrip_span: the same without
# the calibration; the switch
# benchmarks: 2*ROUNDS switches), and the report divides by that count.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/qemu-lib.sh
BUILD=${BUILD:-build}
bench=${1:?usage: scripts/profile.sh BENCH [ROUNDS]}
rounds=${2:-400}
case $bench in
  async_roundtrip|async_roundtrip_span) per=$((rounds / 4)) ;;
  remote_delivery) per=$((rounds / 20)) ;;
  stackless_switch|stackful_switch|process_switch|thread_switch) per=$((2 * rounds)) ;;
  *) per=$rounds ;;
esac
plugin=$(build_insnprof)
qemu=qemu-system-riscv64
cpu=()
if [ "${NATIVE:-0}" = 1 ]; then
  qemu=$BUILD/qemu-n/qemu-system-riscv64
  cpu=(-cpu rv64,n=on)
fi
out=$BUILD/profile
mkdir -p "$out"
for k in 1 2; do
  n=$((k * rounds))
  echo "profile: $bench x $n ..." >&2
  timeout 900 "$qemu" -machine virt "${cpu[@]}" -bios "$OPENSBI" -kernel "$BUILD/kernel.elf" \
    -nographic -smp "${SMP:-1}" -m 256M -icount shift=0,sleep=off -plugin "$plugin,out=$out/prof$k.txt${HART:+,hart=$HART}" \
    -append "idle_poll_us=0 user=ubench,--only,$bench,$n" < /dev/null > "$out/run$k.log" 2>&1 || true
  grep -q '^BENCH USER DONE' "$out/run$k.log" ||
    { echo "profile: run $k did not finish; see $out/run$k.log" >&2; exit 1; }
done
python3 scripts/profile-report.py "$out/prof1.txt" "$out/prof2.txt" "$per" \
  "$BUILD/kernel.elf" "$BUILD/vdso.elf" "$BUILD/user/bin/ubench"
