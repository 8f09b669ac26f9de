#!/usr/bin/env bash
# The network lock as a CES mutex against the spinlock it replaced
# (bootargs netlock=spin), on the same kernel: matrixd under the host client's
# closed loop (128 connections, n x n matrices, DURATION_S seconds), and then,
# from the console monitor beside it, the lock's counters (the `stats` line
# "lock (...): sections, found held, combined, handed over"), so each figure
# says whether the lock was contended. The two locks alternate within each
# round, ROUNDS rounds. Prints BENCH lines and writes docs/results/netlock.md.
#
#   scripts/bench-netlock.sh    (env: BUILD, MODELS, SMPS, LOCKS, N, ROUNDS, DURATION_S, OUT)
#   LOCKS: the order within a round ("ces spin" by default; "spin ces" checks
#   that the order does not decide the result)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/qemu-lib.sh     # BUILD, QEMU, drive_matrixd_stats, median
OUT=${OUT:-docs/results/netlock.md}
MODELS=${MODELS:-kcuc ktut}
SMPS=${SMPS:-2 1}
LOCKS=${LOCKS:-ces spin}
N=${N:-15}
ROUNDS=${ROUNDS:-3}
DURATION_S=${DURATION_S:-5}
MCLIENT=$BUILD/host/mclient
DIR=$BUILD/bench-netlock
mkdir -p "$DIR" "$(dirname "$OUT")"
build_kernel_and_client bench-netlock "$DIR" || exit 1

status=0
declare -A rps=() lockline=()
for round in $(seq 1 "$ROUNDS"); do
  for model in $MODELS; do
    for smp in $SMPS; do
      for lock in $LOCKS; do
        key=$model/$smp/$lock/$round
        extra=
        [ $lock = spin ] && extra=" netlock=spin"
        log=$DIR/${model}_smp${smp}_${lock}_r$round.log
        echo "bench-netlock: round $round, ${model^^} on $smp hart(s), $lock" >&2
        if ! drive_matrixd_stats "$log" "$smp" "$model" "$extra" \
             "$MCLIENT -p \$PORT -c 128 -i 0 -d $DURATION_S -n $N > $log.client 2>&1"; then
          echo "bench-netlock: $key failed: $(cat "$log.err") (see $log)" >&2
          status=1
          continue
        fi
        rps[$key]=$(field rps "$(grep '^mclient: ' "$log.client" | tail -1)")
        lockline[$key]=$(tr -d '\r' < "$log" | sed -n 's/^ *lock (\(.*\)): sections \([0-9]*\), found held \([0-9]*\), combined \([0-9]*\), handed over \([0-9]*\).*/\2 \3 \4 \5/p' | tail -1)
        echo "BENCH name=netlock_${model}_smp${smp}_${lock}_r${round}_rps value=${rps[$key]:-0} unit=req/s"
      done
    done
  done
done

{
  echo "# The network lock: CES mutex against spinlock"
  echo
  echo "Produced by \`scripts/bench-netlock.sh\` on $(date -u +%F): one kernel, booted with"
  echo "the CES network lock (default) or \`netlock=spin\` (the spinlock it replaced),"
  echo "alternating ($LOCKS) within each of $ROUNDS rounds. QEMU $("$QEMU" --version | head -1 | sed 's/QEMU emulator version //'),"
  echo "TCG, no \`-icount\`; host: $(nproc) cores, shared with other jobs. matrixd under"
  echo "the host client's closed loop: 128 connections, ${N} x ${N} matrices, ${DURATION_S} s. After"
  echo "the load, the monitor's \`stats\` gives the lock's counters since boot."
  echo
  echo "| model | harts | lock | req/s per round | median | sections | found held | combined | handed over |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for model in $MODELS; do
    for smp in $SMPS; do
      for lock in $LOCKS; do
        all=
        for round in $(seq 1 "$ROUNDS"); do all+="${rps[$model/$smp/$lock/$round]:-} "; done
        med=$(median <<< "$all")
        read -r sec held comb hand <<< "${lockline[$model/$smp/$lock/$ROUNDS]:-- - - -}"
        pct=$(awk -v h="$held" -v s="$sec" 'BEGIN { if (s + 0 > 0) printf " (%.1f%%)", 100 * h / s }')
        echo "| ${model^^} | $smp | $lock | ${all% } | $med | $sec | $held$pct | $comb | $hand |"
        echo "BENCH name=netlock_${model}_smp${smp}_${lock}_rps_median value=${med:-0} unit=req/s" >&3
      done
    done
  done
  echo
  echo "The counters are those of the last round's boot (sections since boot,"
  echo "set-up included). *Found held*: requests that found the lock held and"
  echo "queued (with the spinlock: callers that found it locked before spinning);"
  echo "*combined*: sections a holder ran for another caller; *handed over*: times"
  echo "the lock itself passed to a waiter. On one hart the lock is never"
  echo "contended (sections never block), so the 1-hart rows compare the"
  echo "uncontended paths only. The host is shared: compare the two locks within"
  echo "a round, and read a difference smaller than the spread of one lock's"
  echo "rounds as none."
} 3>&1 > "$OUT"
echo "bench-netlock: wrote $OUT" >&2
exit $status
