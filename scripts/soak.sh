#!/usr/bin/env bash
# make soak: matrixd in four models and several priority schemes in one boot,
# 128 connections from the host for MINUTES minutes (30 by default), bad input
# in bursts, and the kernel's counters at the end compared with the start
# (scripts/soak.py does the run; this script builds, picks the ports and boots).
#
#   scripts/soak.sh [--test [NAME]] [soak.py options]
#                                (env: MINUTES=30, ROUND=60 seconds per round,
#                                 SMP=2 harts, SUMMARY (docs/results/soak.md),
#                                 BUILD, QEMU, QEMU_CPU, OPENSBI)
#
# Without --test the result goes to docs/results/soak.md and the logs to
# $BUILD/soak/. --test is make test's short run: MINUTES=0.75 in rounds of 15 s
# (three rounds, bad input in each), PASS/FAIL lines for each check, the
# summary and logs in $BUILD/test-logs/ (names start with NAME, default soak).
# Exit status 0 iff the run passed (soak.py says why not).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/qemu-lib.sh     # BUILD, QEMU, qemu_cmd, free_port

if [ "${1:-}" = "--test" ]; then
  NAME=soak
  case "${2:-}" in -*|"") shift ;; *) NAME=$2; shift 2 ;; esac
  MINUTES=${MINUTES:-0.75} ROUND=${ROUND:-15} WARMUP=5
  LOGDIR=$BUILD/test-logs SUMMARY=$BUILD/test-logs/$NAME.md CMD="make test (scripts/soak.sh --test)"
  set -- --checks "$@"
else
  NAME=soak MINUTES=${MINUTES:-30} ROUND=${ROUND:-60} WARMUP=10
  LOGDIR=$BUILD/soak SUMMARY=${SUMMARY:-docs/results/soak.md} CMD="make soak MINUTES=$MINUTES${SMP:+ SMP=$SMP}"
fi
mkdir -p "$LOGDIR"

if ! make -s BUILD="$BUILD" all client > "$LOGDIR/soak.build.log" 2>&1; then
  echo "soak: FAIL the kernel or the host client does not build (see $LOGDIR/soak.build.log)"
  exit 1
fi

# One host port for each matrixd (guest ports 80..83), forwarded by QEMU.
ports=() fwd=""
for guest in 80 81 82 83; do
  p=$(free_port)
  ports+=("$p")
  [ "$guest" = 80 ] || fwd+=" $p:$guest"
done
# The run's own limit, a safety net: the soak, plus generous room for boot,
# warm-up, rounds that run late and the end's settling.
QEMU_LIMIT=$(awk -v m="$MINUTES" 'BEGIN { printf "%d", m * 60 * 1.5 + 900 }')
# (qemu_cmd sets QEMU_GDB_PORT: on a failure soak.py takes every hart's
# backtrace through that stub, as the watchdog does on a hang.)
QEMU_HOSTFWD=$fwd qemu_cmd "${SMP:-2}" 256M "" "${ports[0]}"

IFS=, eval 'portlist="${ports[*]}"'
exec python3 scripts/soak.py --ports "$portlist" --minutes "$MINUTES" --round "$ROUND" \
  --warmup "$WARMUP" --log "$LOGDIR/$NAME-qemu.log" --summary "$SUMMARY" --command "$CMD" \
  --mclient "$BUILD/host/mclient" --gdb-port "$QEMU_GDB_PORT" --kernel-elf "$BUILD/kernel.elf" \
  "$@" -- "${QEMU_CMD[@]}"
