#!/usr/bin/env bash
# make bench-flat: is the cost of a request flat in the number of open
# connections (issue 14 §2)? For each N in NS (0 100 1000 10000): one boot of
# matrixd in KCUC on one hart, 512 MiB, bootargs nofile=16384, under
# -icount shift=0 with the insnprof plugin (scripts/host/insnprof.c), on a tap
# device (QEMU's slirp cannot carry 10,000 connections: see bench-conn.sh).
#   1. N idle connections set up, each answers one request and is held open
#      (as make bench-conn does);
#   2. nothing happens for IDLE_S seconds: the profile over that window is
#      what the N connections cost the guest by themselves (timers and the like);
#   3. CONNS (128) active connections in a closed loop, K1 (4) requests each
#      of 15x15, every answer checked, then closed: once to warm up, then
#      again, then with K2 (20).
# The plugin snapshots its counters between the steps (snap=, taken while the
# guest is idle), so one boot serves every step: setting up 10,000
# connections takes minutes under the plugin. The K2 run minus the second K1
# run cancels the connections' set-up and teardown and leaves CONNS * (K2 - K1)
# requests, as make bench-cost does with two boots; the K1 runs less their
# requests are what a connection's set-up and teardown cost, the first of them
# (cold) and the second (warm). scripts/flat-report.py charges the
# instructions to bench-cost's categories, prints BENCH lines and writes
# docs/results/flat.md and its chart.
#
# Everything runs in a network namespace of its own (unshare -n, as root):
# the tap and its route to 10.0.2.15 are then invisible to other runs (make
# bench-conn NET=tap routes the same address), and nothing is left behind.
#
#   scripts/bench-flat.sh        (make bench-flat; env: BUILD, NS, CONNS, K1, K2, IDLE_S,
#                                 SPREAD_MS, OUT)
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${FLAT_NETNS:-}" != 1 ]; then
  [ "$(id -u)" = 0 ] || { echo "bench-flat: needs root (a tap device in a network namespace)" >&2; exit 1; }
  FLAT_NETNS=1 exec unshare -n bash "$0" "$@"
fi
ip link set lo up
QEMU_LIMIT=${QEMU_LIMIT:-7200}
source scripts/qemu-lib.sh     # boot_matrixd, halt_qemu, build_insnprof, tap_up, raise_nofile, hold_requests
IDLEPID=
cleanup() {
  halt_qemu
  [ -n "$IDLEPID" ] && kill "$IDLEPID" 2> /dev/null
}
trap cleanup EXIT

NS=${NS:-0 100 1000 10000}
CONNS=${CONNS:-128}
SIZE=15
K1=${K1:-4}
K2=${K2:-20}
IDLE_S=${IDLE_S:-10}
# The idle connections' one request each, spread over this long (ms) so the
# set-up is not a burst.
SPREAD_MS=${SPREAD_MS:-20000}
OUT=${OUT:-docs/results/flat.md}
PNG=${OUT%.md}.png
MCLIENT=$BUILD/host/mclient
DIR=$BUILD/bench-flat
mkdir -p "$DIR" "$(dirname "$OUT")"

max_n=0
for n in $NS; do [ "$n" -gt "$max_n" ] && max_n=$n; done
raise_nofile $((max_n + CONNS + 256)) bench-flat || exit 1
build_for_profile bench-flat "$DIR" || exit 1
plugin=$PLUGIN
command -v gnuplot > /dev/null || bash scripts/deps.sh --eval > "$DIR/deps.log" 2>&1 ||
  echo "bench-flat: gnuplot could not be installed (see $DIR/deps.log); no chart" >&2
tap_up flat0 || { echo "bench-flat: cannot set up the tap device" >&2; exit 1; }

# settle: let the guest finish what the last client left it (the FIN and ACK
# exchanges of closed connections, delayed ACKs) before a snapshot.
settle() { sleep 2; }

# flat_run N: the three steps above for N idle connections. Appends the
# report's argument for this N to RUNS.
flat_run() {
  local n=$1 base=$DIR/n$1
  local req=$base.snapreq
  rm -f "$base".*.prof "$req" "$req.new"
  QEMU_EXTRA="-icount shift=0 -plugin $plugin,out=$base.exit.prof,snap=$req"
  # idle_tick=1: the report's guest clock is the kernel's tick count, and a
  # hart with nothing to do no longer ticks unless told to (kernel/timer.c).
  if ! boot_matrixd "$base.log" 1 "idle_tick=1 nofile=16384 user=matrixd,-m,kcuc,-c,$((n + CONNS + 64))" 512M; then
    echo "bench-flat: matrixd did not start; see $base.log" >&2
    return 1
  fi
  if [ "$n" -gt 0 ]; then
    echo "bench-flat: N=$n: setting up the idle connections ..." >&2
    : > "$base.idle.err"
    timeout 7200 "$MCLIENT" -H "$GUEST_HOST" -p 80 -c "$n" -i "$SPREAD_MS" -d 100000 -n $SIZE --requests 1 \
      --ramp 16 > "$base.idle.out" 2> "$base.idle.err" &
    IDLEPID=$!
    local t0=$SECONDS
    until grep -q "^mclient: holding" "$base.idle.err"; do
      if ! kill -0 "$IDLEPID" 2> /dev/null || [ $((SECONDS - t0)) -gt 3600 ]; then
        echo "bench-flat: N=$n: the idle client ended or took over an hour: $(tail -2 "$base.idle.err")" >&2
        return 1
      fi
      sleep 1
    done
    local held
    held=$(sed -n 's/^mclient: holding \([0-9]*\) .*/\1/p' "$base.idle.err")
    [ "$held" = "$n" ] || { echo "bench-flat: N=$n: only $held idle connections held" >&2; return 1; }
    echo "bench-flat: N=$n: held after $((SECONDS - t0)) s" >&2
  fi
  settle
  insnprof_snap "$req" "$base.0.prof" || return 1
  local t1 t2
  t1=$(date +%s.%N)
  sleep "$IDLE_S"
  insnprof_snap "$req" "$base.1.prof" || return 1
  t2=$(date +%s.%N)
  # Three runs: a warm-up of K1 requests, then K1 and K2. The warm-up is
  # there because the first connections after the idle ones cost more to set
  # up than later ones (matrixd's allocator finds its free blocks again only
  # once some connection has freed them): without it the set-up of the K1 run
  # would not match the K2 run's and would not cancel.
  local run k
  for run in "w:$K1" "k$K1:$K1" "k$K2:$K2"; do
    k=${run#*:}
    echo "bench-flat: N=$n: $CONNS active connections x $k requests (${run%%:*}) ..." >&2
    if ! HOLD_K=$k hold_requests "$base.${run%%:*}" -H "$GUEST_HOST" -p 80; then
      echo "bench-flat: N=$n x $k: not every request answered right: $HOLD_LAST" >&2
      return 1
    fi
    settle
    insnprof_snap "$req" "$base.${run%%:*}.prof" || return 1
  done
  # The idle connections were all still there at the end: none gave up.
  kill -0 "$IDLEPID" 2> /dev/null || [ "$n" = 0 ] || { echo "bench-flat: N=$n: the idle client ended" >&2; return 1; }
  if [ -n "$IDLEPID" ]; then
    kill -INT "$IDLEPID"
    wait "$IDLEPID"
    IDLEPID=
    local last
    last=$(grep "^mclient: conns=" "$base.idle.out" | tail -1)
    grep -q " answered=$n wrong=0 errors=0 " <<< "$last" ||
      { echo "bench-flat: N=$n: the idle connections' answers: $last" >&2; return 1; }
  fi
  halt_qemu
  local secs
  secs=$(python3 -c "print(f'{$t2 - $t1:.3f}')")
  RUNS+=("$n:$base.0.prof:$base.1.prof:$secs:$base.w.prof:$base.k$K1.prof:$base.k$K2.prof:$CONNS:$K1:$K2")
}

python3 scripts/cost-report.py symbols "$DIR/symbols.tsv" "$BUILD/kernel.elf" "$BUILD/vdso.elf" \
  "$BUILD/user/bin/matrixd" || exit 1
# The guest's clock inside the profiles: the first instruction of the
# kernel's timer_tick (kernel/timer.c, out of line for this) runs once per
# tick, TICK_HZ times a second of guest time; its count is read off each
# snapshot.
tick=$(nm "$BUILD/kernel.elf" | awk '$3 == "timer_tick" { print $1; exit }' | sed 's/^0*//')
hz=$(sed -n 's/^#define TICK_HZ \([0-9]*\).*/\1/p' kernel/param.h)
[ -n "$tick" ] && [ -n "$hz" ] || { echo "bench-flat: cannot find the kernel's tick in $BUILD/kernel.elf" >&2; exit 1; }
RUNS=()
status=0
# A failed count is tried once more: the host is shared, and once the idle
# client ended early with no error of its own (a signal from outside, we
# think: its connections closed cleanly) after 36 s of a run that takes 40.
for n in $NS; do
  for try in 1 2; do
    flat_run "$n" && break
    cleanup
    IDLEPID=
    [ $try = 2 ] && status=1
    [ $try = 1 ] && echo "bench-flat: N=$n failed; once more" >&2
  done
done
[ ${#RUNS[@]} -gt 0 ] || exit 1

png=()
command -v gnuplot > /dev/null && png=(--png "$PNG")
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
meta="Produced by \`make bench-flat\` (scripts/bench-flat.sh) on $(date -u +%F): QEMU $("$QEMU" --version |
  head -1 | sed 's/QEMU emulator version //'), machine virt, \`-smp 1\`, 512 MiB, bootargs \`nofile=16384\`,
\`-icount shift=0\` (sleep on: an idle guest's clock follows the host's), a tap device (host kernel
$(uname -r)). matrixd in KCUC; $CONNS active connections in a closed loop (\`mclient -i 0\`), ${SIZE}x${SIZE}
matrices, every answer checked; runs of $K1 and $K2 requests per connection subtracted
($((CONNS * (K2 - K1))) requests); the idle window is ${IDLE_S} s of host time (its guest time,
from the kernel's ticks, is in the table). Host CPU: ${cpu:-unknown}."
python3 scripts/flat-report.py --symbols "$DIR/symbols.tsv" --doc "$OUT" "${png[@]}" --meta "$meta" \
  --tick "$tick" --hz "$hz" \
  "${RUNS[@]}" || status=1
echo "bench-flat: wrote $OUT" >&2
no_leftovers bench-flat || status=1
exit $status
