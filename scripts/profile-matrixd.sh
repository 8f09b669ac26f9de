#!/usr/bin/env bash
# Where do a matrixd request's guest instructions go, on one hart and on two?
# Boots matrixd (MODEL, default kcuc) with SMP harts under the insnprof plugin
# (scripts/host/insnprof.c) *without* -icount, so that two harts run at once
# as they do in make bench-smp (under -icount QEMU runs its vCPUs in turn on
# one thread, and no hart would ever spin on a lock another hart holds).
# After a 2 s warm-up of the closed loop (128 connections, n x n matrices) and a
# pause, the plugin snapshots its counters; then a DURATION_S closed loop, a
# pause, and a second snapshot. The difference, divided by the requests
# answered in between, is printed by function and by where the code runs
# (scripts/profile-report.py), summed over every hart.
#
# The counts are instructions, but not repeatable ones: how long a hart spins
# on a lock another hart holds depends on how the host ran the two vCPU
# threads, so compare runs side by side and run each more than once. The
# plugin slows the guest, so requests per second here are not bench-smp's.
#
#   scripts/profile-matrixd.sh [SMP] [MODEL] [N]     e.g. scripts/profile-matrixd.sh 2 kcuc 15
#   (env: BUILD, DURATION_S (5), BOOTARGS: more kernel arguments, e.g. "netlock=spin",
#    LOAD: the client's connections and interval, "-c 128 -i 0" (the closed
#    loop) by default; "-c 64 -i 100" is bench-light.sh's light load;
#    MATRIXD_ARGS: more matrixd options, commas for spaces, e.g. "-t,1";
#    TAG: a name for this run's files besides model, harts and n)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/qemu-lib.sh     # BUILD, boot_matrixd, halt_qemu, build_for_profile, insnprof_snap
trap halt_qemu EXIT
QEMU_LIMIT=600
smp=${1:-2}
model=${2:-kcuc}
n=${3:-15}
MCLIENT=$BUILD/host/mclient
DIR=$BUILD/profile-matrixd
mkdir -p "$DIR"
build_for_profile profile-matrixd "$DIR" || exit 1
base=$DIR/$model-smp$smp-n$n${TAG:+-$TAG}
req=$base.snapreq
rm -f "$base".*.prof "$req" "$req.new"

QEMU_EXTRA="-mem-prealloc -plugin $PLUGIN,out=$base.exit.prof,snap=$req"
if ! boot_matrixd "$base.log" "$smp" "${BOOTARGS:+$BOOTARGS }user=matrixd,-m,$model,-q${MATRIXD_ARGS:+,$MATRIXD_ARGS}"; then
  echo "profile-matrixd: matrixd did not start; see $base.log" >&2
  exit 1
fi
echo "profile-matrixd: $model on $smp hart(s), n = $n: warm-up ..." >&2
LOAD=${LOAD:--c 128 -i 0}
timeout 120 "$MCLIENT" -p "$PORT" $LOAD -d 2 -n "$n" > "$base.warm" 2>&1
sleep 2
insnprof_snap "$req" "$base.0.prof" || exit 1
echo "profile-matrixd: load ($LOAD) for ${DURATION_S:-5} s ..." >&2
timeout 120 "$MCLIENT" -p "$PORT" $LOAD -d "${DURATION_S:-5}" -n "$n" > "$base.out" 2>&1
sleep 2
insnprof_snap "$req" "$base.1.prof" || exit 1
halt_qemu
line=$(grep -m1 "^mclient: conns=" "$base.out")
answered=$(sed -n 's/.* answered=\([0-9]*\).*/\1/p' <<< "$line")
wrong=$(sed -n 's/.* wrong=\([0-9]*\).*/\1/p' <<< "$line")
if [ -z "$answered" ] || [ "$answered" = 0 ] || [ "$wrong" != 0 ]; then
  echo "profile-matrixd: the load failed: ${line:-no summary} (see $base.out)" >&2
  exit 1
fi
echo "$line"
echo "per request ($answered requests):"
python3 scripts/profile-report.py "$base.0.prof" "$base.1.prof" "$answered" \
  "$BUILD/kernel.elf" "$BUILD/vdso.elf" "$BUILD/user/bin/matrixd"
