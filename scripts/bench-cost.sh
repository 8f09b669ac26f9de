#!/usr/bin/env bash
# Distance from the limit (issue 14 section 3): guest instructions per served
# matrixd request at saturation, split into the matrix work, the TCP/IP stack
# and everything else. For each model: matrixd on one hart under
# -icount shift=0 with the insnprof plugin (scripts/host/insnprof.c), 128
# connections in a closed loop (mclient -i 0) sending 15x15 matrices. Each
# model boots twice, serving K1 and then K2 requests per connection (mclient
# --requests); subtracting the two profiles cancels boot, connection set-up and
# teardown, leaving the cost of 128 * (K2 - K1) requests. scripts/cost-report.py
# charges each function to a category and prints BENCH lines, writes
# docs/results/cost.md and its stacked bar chart.
#
#   scripts/bench-cost.sh        (make bench-cost; env: BUILD, MODELS, K1, K2, OUT)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/qemu-lib.sh     # BUILD, QEMU, boot_matrixd, halt_qemu, build_insnprof, hold_requests
trap halt_qemu EXIT            # however this script ends, its QEMU ends with it
QEMU_LIMIT=900
OUT=${OUT:-docs/results/cost.md}
PNG=${OUT%.md}.png
MODELS=${MODELS:-kcuc kcut ktut ktuc}
CONNS=128
SIZE=15
K1=${K1:-4}
K2=${K2:-20}
MCLIENT=$BUILD/host/mclient
DIR=$BUILD/bench-cost
mkdir -p "$DIR" "$(dirname "$OUT")"

build_for_profile bench-cost "$DIR" || exit 1
plugin=$PLUGIN
command -v gnuplot > /dev/null || bash scripts/deps.sh --eval > "$DIR/deps.log" 2>&1 ||
  echo "bench-cost: gnuplot could not be installed (see $DIR/deps.log); no chart" >&2

clean() { tr -d '\r' < "$1"; }

# profile_run MODEL K: boot matrixd MODEL under the plugin, have each of the
# CONNS connections send K requests back to back, close them, wait until
# matrixd is idle again (its counters back at their baseline), stop QEMU, which
# writes the profile. Fails unless every request got its correct answer.
profile_run() {
  local model=$1 k=$2 base=$DIR/$1-$2
  rm -f "$base.prof"
  QEMU_EXTRA="-icount shift=0 -plugin $plugin,out=$base.prof"
  if ! boot_matrixd "$base.log" 1 "user=matrixd,-m,$model,-q"; then
    echo "bench-cost: matrixd ($model) did not start; see $base.log" >&2
    return 1
  fi
  local idle_before
  idle_before=$(clean "$base.log" | grep -c "^matrixd: idle ")
  if ! HOLD_K=$k hold_requests "$base" -p "$PORT"; then
    echo "bench-cost: $model x $k: not every request answered right: $HOLD_LAST (see $base.out, $base.err)" >&2
    return 1
  fi
  for _ in $(seq 1 600); do
    [ "$(clean "$base.log" | grep -c "^matrixd: idle ")" -gt "$idle_before" ] && break
    sleep 0.1
  done
  [ "$(clean "$base.log" | grep -c "^matrixd: idle ")" -gt "$idle_before" ] ||
    echo "bench-cost: $model x $k: matrixd did not report idle after the run (teardown may not cancel)" >&2
  halt_qemu
  [ -s "$base.prof" ] || { echo "bench-cost: no profile from $model x $k (see $base.log)" >&2; return 1; }
}

python3 scripts/cost-report.py symbols "$DIR/symbols.tsv" "$BUILD/kernel.elf" "$BUILD/vdso.elf" \
  "$BUILD/user/bin/matrixd" || exit 1
runs=()
status=0
for model in $MODELS; do
  echo "bench-cost: $model, $CONNS connections x $K1 and x $K2 requests ..." >&2
  if profile_run "$model" "$K1" && profile_run "$model" "$K2"; then
    runs+=("$model:$DIR/$model-$K1.prof:$DIR/$model-$K2.prof:$((CONNS * (K2 - K1)))")
  else
    halt_qemu
    status=1
  fi
done
[ ${#runs[@]} -gt 0 ] || exit 1

png=()
command -v gnuplot > /dev/null && png=(--png "$PNG")
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
meta="Produced by \`make bench-cost\` (scripts/bench-cost.sh) on $(date -u +%F): QEMU $("$QEMU" --version |
  head -1 | sed 's/QEMU emulator version //'), machine virt, \`-smp 1\`, 256 MiB,
\`-icount shift=0\`, matrixd in each model with $CONNS connections in a closed loop (\`mclient -i 0\`),
${SIZE}x${SIZE} matrices, every answer checked; runs of $K1 and $K2 requests per connection
subtracted ($((CONNS * (K2 - K1))) requests). Host CPU: ${cpu:-unknown}. The counts do not depend on the host's speed, but its packet
timing changes how many segments and acknowledgements a request takes: two runs differ by a
few per cent, the TCP/IP row most."
python3 scripts/cost-report.py report --symbols "$DIR/symbols.tsv" --doc "$OUT" "${png[@]}" \
  --meta "$meta" "${runs[@]}" || status=1
echo "bench-cost: wrote $OUT" >&2
no_leftovers bench-cost || status=1
exit $status
