#!/usr/bin/env bash
# One kernel, two (or more) bootarg variants, measured against each other in
# one run: matrixd under the host client's closed loop (128 connections, N x N
# matrices, DURATION_S seconds: requests/s) and then a light load (64
# connections, one matrix every 100 ms each: p99 latency), both in the same
# boot, and then the console monitor's `stats` (the network lock's counters,
# the spinlocks found held). The variants
# alternate within each of ROUNDS rounds (in turned order every other round), so a host whose load changes over the
# run moves them alike. Prints BENCH lines and writes OUT.
#
#   scripts/bench-ab.sh   (env: BUILD, VARIANTS, MODELS, SMP, N, ROUNDS, DURATION_S, OUT, TITLE)
#   VARIANTS: "name:bootargs" words, bootargs with commas for spaces, e.g.
#     "deferred: now:ipi=now" or "ces: spin:netlock=spin"
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/qemu-lib.sh     # BUILD, QEMU, drive_matrixd_stats, median
VARIANTS=${VARIANTS:-"deferred: now:ipi=now"}
MODELS=${MODELS:-kcuc}
SMP=${SMP:-2}
N=${N:-15}
ROUNDS=${ROUNDS:-3}
DURATION_S=${DURATION_S:-5}
OUT=${OUT:-$BUILD/bench-ab/ab.md}
TITLE=${TITLE:-bootarg variants}
MCLIENT=$BUILD/host/mclient
# Guest RAM backed at start, as in bench-smp-net.sh (which says why).
export QEMU_EXTRA="${QEMU_EXTRA:-} -mem-prealloc"
DIR=$BUILD/bench-ab
mkdir -p "$DIR" "$(dirname "$OUT")"
build_kernel_and_client bench-ab "$DIR" || exit 1

status=0
declare -A rps=() p99=() held=() spins=()
total=$(( $(wc -w <<< "$MODELS") * $(wc -w <<< "$VARIANTS") * ROUNDS ))
point=0
start=$SECONDS
# The order of the variants turns round by round (A B, then B A): with one
# order throughout, whichever ran first in a round had the worse light-load
# p99 in 9 of 10 rounds of two runs that differed only in that order
# (docs/results/ab-uptime.md), which no variant can be credited with.
reversed=$(tr ' ' '\n' <<< "$VARIANTS" | grep . | tac | tr '\n' ' ')
for round in $(seq 1 "$ROUNDS"); do
  order=$VARIANTS
  [ $((round % 2)) -eq 0 ] && order=$reversed
  for model in $MODELS; do
    for v in $order; do
      name=${v%%:*}
      args=${v#*:}
      extra=${args:+ ${args//,/ }}
      key=$model/$name/$round
      log=$DIR/${model}_${name}_r$round.log
      point=$((point + 1))
      echo "bench-ab: [$point/$total] round $round, ${model^^} on $SMP hart(s), $name ($((SECONDS - start)) s so far)" >&2
      if ! drive_matrixd_stats "$log" "$SMP" "$model" "$extra" \
           "$MCLIENT -p \$PORT -c 128 -i 0 -d $DURATION_S -n $N > $log.closed 2>&1" \
           "sleep 2; $MCLIENT -p \$PORT -c 64 -i 100 -d $DURATION_S -n $N > $log.light 2>&1"; then
        echo "bench-ab: $key failed: $(cat "$log.err") (see $log)" >&2
        status=1
        continue
      fi
      rps[$key]=$(field rps "$(grep '^mclient: ' "$log.closed" | tail -1)")
      p99[$key]=$(field p99_us "$(grep '^mclient: ' "$log.light" | tail -1)")
      clean=$(tr -d '\r' < "$log")
      held[$key]=$(sed -n 's/^ *lock (.*): sections [0-9]*, found held \([0-9]*\),.*/\1/p' <<< "$clean" | tail -1)
      # Polls spent waiting for spinlocks found held, all names together.
      spins[$key]=$(awk '/spinlocks found held/ { on = 1; next } on && /polls/ { sub(/.*polls /, ""); sub(/ .*/, ""); s += $1 } END { print s + 0 }' <<< "$clean")
      echo "BENCH name=ab_${model}_${name}_r${round}_rps value=${rps[$key]:-0} unit=req/s"
      echo "BENCH name=ab_${model}_${name}_r${round}_light_p99_us value=${p99[$key]:-0} unit=us"
    done
  done
done

{
  echo "# $TITLE"
  echo
  echo "Produced by \`scripts/bench-ab.sh\` on $(date -u +%F): one kernel, booted with each"
  echo "variant's bootargs in turn within each of $ROUNDS rounds (the order reversed every other round); QEMU $("$QEMU" --version | head -1 | sed 's/QEMU emulator version //'),"
  echo "TCG, no \`-icount\`, \`-smp $SMP\`; host: $(nproc) cores, shared. In each boot matrixd"
  echo "serves the host client's closed loop (128 connections, ${N} x ${N}, ${DURATION_S} s) and then a"
  echo "light load (64 connections, one matrix every 100 ms each, ${DURATION_S} s); then the"
  echo "console's \`stats\` gives the counters since boot."
  echo
  echo "| model | variant | bootargs | req/s per round | median | light p99 us per round | median | lock found held | spinlock polls |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for model in $MODELS; do
    for v in $VARIANTS; do
      name=${v%%:*}
      args=${v#*:}
      r_all= p_all=
      for round in $(seq 1 "$ROUNDS"); do
        r_all+="${rps[$model/$name/$round]:-} "
        p_all+="${p99[$model/$name/$round]:-} "
      done
      rmed=$(median <<< "$r_all")
      pmed=$(median <<< "$p_all")
      last=$model/$name/$ROUNDS
      echo "| ${model^^} | $name | ${args:-(none)} | ${r_all% } | $rmed | ${p_all% } | $pmed | ${held[$last]:--} | ${spins[$last]:--} |"
      echo "BENCH name=ab_${model}_${name}_rps_median value=${rmed:-0} unit=req/s" >&3
      echo "BENCH name=ab_${model}_${name}_light_p99_us_median value=${pmed:-0} unit=us" >&3
    done
  done
  echo
  echo "The counters are those of each variant's last boot, closed loop and light"
  echo "load together. The host is shared: compare variants within a round, and"
  echo "read a difference smaller than the spread of one variant's rounds as none."
} 3>&1 > "$OUT"
echo "bench-ab: wrote $OUT" >&2
exit $status
