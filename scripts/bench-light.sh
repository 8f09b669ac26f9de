#!/usr/bin/env bash
# Light load, configuration against configuration, boot by boot: matrixd
# under the host client's light load (64 connections, one N x N matrix every
# 100 ms each, DURATION_S seconds), one boot per configuration in each
# round, the order rotating every round (whichever boots first in a round
# tends to have the worse tail on a shared host: ab-uptime.md). Writes a
# table to OUT and prints BENCH lines. The default is issue 13's light-load
# criterion: two harts' p99 no worse than one hart's.
#
# The host is a virtual machine on a shared server, and its hypervisor now
# and then runs someone else on our cores ("steal" in /proc/stat): a boot
# that loses a second of its 8 s that way has a p99 several times a calm
# boot's (smp-light-kcuc.md, 2026-11-29), whatever it runs. So each boot's
# steal is measured during its run, and a round in which any boot lost more
# than STEAL_PCT percent of the host's CPU time (all cores, the run's
# length) is reported but does not count: rounds go on until ROUNDS calm
# ones are in, or MAX_ROUNDS have been run. The result is each
# configuration's p99 over every answered request of its calm rounds
# (light-pool.py: pooled, with a bootstrap interval over rounds); the
# median of per-round ratios and the figures over all rounds are printed
# beside it.
#
#   scripts/bench-light.sh   (env: BUILD, CONFIGS, MODEL, N, ROUNDS, MAX_ROUNDS,
#                             STEAL_PCT, DURATION_S, OUT)
#   CONFIGS: "name:harts:bootargs" words, bootargs with commas for spaces;
#     the first is the one the others are divided by. Default "1h:1: 2h:2:";
#     e.g. "1h:1: 2h:2: 2h-eager:2:kick_us=0".
#   MODEL: matrixd's -m, with its other arguments after commas ("kcuc,-t,1").
#   STEAL_PCT: 1 by default; a large value (100) counts every round.
#   PNG: also draw the calm rounds' pooled latencies against their percentile
#     into this file (gnuplot; scripts/deps.sh --eval installs it).
#   LOAD: light (the default) or closed: 128 connections in a closed loop
#     instead (each sends its next matrix when the answer to the last has
#     come), for requests per second; the table then also gives each
#     configuration's requests per second over the first one's, per round.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/qemu-lib.sh     # BUILD, QEMU, drive_matrixd_stats, median
CONFIGS=${CONFIGS:-"1h:1: 2h:2:"}
MODEL=${MODEL:-kcuc}
N=${N:-15}
ROUNDS=${ROUNDS:-8}
MAX_ROUNDS=${MAX_ROUNDS:-$((2 * ROUNDS))}
STEAL_PCT=${STEAL_PCT:-1}
DURATION_S=${DURATION_S:-8}
LOAD=${LOAD:-light}
case $LOAD in
  light) CLIENT_LOAD="-c 64 -i 100" ;;
  closed) CLIENT_LOAD="-c 128 -i 0" ;;
  *) echo "bench-light: LOAD must be light or closed" >&2; exit 2 ;;
esac
OUT=${OUT:-$BUILD/bench-light/light.md}
MCLIENT=$BUILD/host/mclient
export QEMU_EXTRA="${QEMU_EXTRA:-} -mem-prealloc"   # (as bench-ab.sh)
DIR=$BUILD/bench-light
mkdir -p "$DIR" "$(dirname "$OUT")"
build_kernel_and_client bench-light "$DIR" || exit 1
read -r -a configs <<< "$CONFIGS"
k=${#configs[@]}
base=${configs[0]%%:*}
declare -A p50=() p99=() rps=() late=() steal=()
calm=() all=()                 # round numbers
STEAL="awk '/^cpu /{ print \$9 }' /proc/stat"   # the host's steal time, in clock ticks
HZ=$(getconf CLK_TCK)
steal_max_ms=$(awk -v p="$STEAL_PCT" -v c="$(nproc)" -v d="$DURATION_S" 'BEGIN { printf "%d", p / 100 * c * d * 1000 }')
status=0
start=$SECONDS
round=0
while [ ${#calm[@]} -lt "$ROUNDS" ] && [ "$round" -lt "$MAX_ROUNDS" ]; do
  round=$((round + 1))
  order=()
  for i in $(seq 0 $((k - 1))); do order+=("${configs[$(((i + round - 1) % k))]}"); done
  complete=1 stolen=0
  for c in "${order[@]}"; do
    name=${c%%:*} rest=${c#*:}
    harts=${rest%%:*} args=${rest#*:}
    log=$DIR/r${round}_$name.log
    echo "bench-light: round $round (${#calm[@]} of $ROUNDS calm so far), ${MODEL%%,*}, $name ($((SECONDS - start)) s so far)" >&2
    if ! drive_matrixd_stats "$log" "$harts" "$MODEL" "${args:+ ${args//,/ }}" \
         "sleep 1; $STEAL > $log.steal; $MCLIENT -p \$PORT $CLIENT_LOAD -d $DURATION_S -n $N --csv $log.csv > $log.light 2>&1; $STEAL >> $log.steal"; then
      echo "bench-light: round $round, $name failed: $(cat "$log.err") (see $log)" >&2
      status=1 complete=0
      continue
    fi
    line=$(grep '^mclient: ' "$log.light" | tail -1)
    p50[$round/$name]=$(field p50_us "$line")
    p99[$round/$name]=$(field p99_us "$line")
    rps[$round/$name]=$(field rps "$line")
    # The host's weather during the run: timer interrupts that came late (the
    # vCPU was not running: every hart's count, and the latest of any), and
    # the time the hypervisor gave this host's cores to someone else.
    late[$round/$name]=$(grep -o 'timer irqs late [0-9]* (latest [0-9]*' "$log" |
      awk '{ n += $4; gsub(/[(]/, "", $6); if ($6 > m) m = $6 } END { printf "%d, %.1f ms", n, m / 1000 }')
    steal[$round/$name]=$(awk 'NR == 1 { a = $1 } NR == 2 { printf "%d", ($1 - a) * 1000 / '"$HZ"' }' "$log.steal")
    [ "${steal[$round/$name]}" -gt "$steal_max_ms" ] && stolen=1
  done
  [ "$complete" = 1 ] || continue
  all+=("$round")
  [ "$stolen" = 0 ] && calm+=("$round")
  summary="round $round$([ "$stolen" = 1 ] && echo " (steal over $steal_max_ms ms: not counted)"):"
  for c in "${configs[@]}"; do summary+=" ${c%%:*} ${p99[$round/${c%%:*}]} us"; done
  echo "bench-light: $summary" >&2
done
[ ${#calm[@]} -ge "$ROUNDS" ] || { echo "bench-light: only ${#calm[@]} calm rounds of $ROUNDS in $round" >&2; status=1; }

# ratio_stats NAME ROUNDS...: the median of NAME's per-round p99 over the
# base's, its range, and in how many rounds it was higher.
ratio_stats() {
  local name=$1 r rs=() worse=0
  shift
  for r in "$@"; do
    rs+=("$(awk -v a="${p99[$r/$base]}" -v b="${p99[$r/$name]}" 'BEGIN { printf "%.2f", b / a }')")
    awk -v x="${rs[-1]}" 'BEGIN { exit !(x > 1) }' && worse=$((worse + 1))
  done
  [ ${#rs[@]} -gt 0 ] || { echo "- | -"; return; }
  echo "$(median <<< "${rs[*]}") ($(printf '%s\n' "${rs[@]}" | sort -g | sed -n '1p;$p' | paste -sd- -)) | $worse of ${#rs[@]}"
}

# rps_row NAME ROUNDS...: NAME's median requests a second over those rounds,
# and the median of its per-round rate over the base's, its range, and in how
# many rounds it was higher (LOAD=closed).
rps_row() {
  local name=$1 r rs=() more=0
  shift
  [ $# -gt 0 ] || { echo "| $name | - | - | - |"; return; }
  local med
  med=$(for r in "$@"; do echo "${rps[$r/$name]}"; done | median)
  if [ "$name" = "$base" ]; then
    echo "| $name | $med | - | - |"
    return
  fi
  for r in "$@"; do
    rs+=("$(awk -v a="${rps[$r/$base]}" -v b="${rps[$r/$name]}" 'BEGIN { printf "%.2f", b / a }')")
    awk -v x="${rs[-1]}" 'BEGIN { exit !(x > 1) }' && more=$((more + 1))
  done
  local m
  m=$(median <<< "${rs[*]}")
  echo "| $name | $med | $m ($(printf '%s\n' "${rs[@]}" | sort -g | sed -n '1p;$p' | paste -sd- -)) | $more of ${#rs[@]} |"
}

# pooled_table TAG ROUNDS...: light-pool.py over those rounds, as a table
# (and the chart, for the calm rounds, if PNG is set).
pooled_table() {
  local tag=$1 r c runs=() png=()
  shift
  [ "$tag" = calm ] && [ -n "${PNG:-}" ] && command -v gnuplot > /dev/null &&
    png=(--png "$PNG" --title "matrixd ${MODEL%%,*}, $LOAD load, $# calm rounds pooled")
  for r in "$@"; do for c in "${configs[@]}"; do runs+=("${c%%:*}:$r:$DIR/r${r}_${c%%:*}.log.csv"); done; done
  echo "| configuration | rounds | requests | p50 us | p99 us | p99.9 us | p99 over $base's | 95% interval | resamples where worse |"
  echo "|---|---|---|---|---|---|---|---|---|"
  [ ${#runs[@]} -gt 0 ] || return 0
  python3 scripts/light-pool.py "${png[@]}" "$base" "${runs[@]}" |
    while read -r name nr nreq q50 q99 q999 ratio lo hi w; do
      if [ "$ratio" = - ]; then
        echo "| $name | $nr | $nreq | $q50 | $q99 | $q999 | - | - | - |"
      else
        echo "| $name | $nr | $nreq | $q50 | $q99 | $q999 | $ratio | $lo-$hi | $w |"
        echo "BENCH name=${LOAD}_${MODEL%%,*}_${name}_${tag}_p99_ratio value=$ratio unit=ratio" >&3
      fi
      echo "BENCH name=${LOAD}_${MODEL%%,*}_${name}_${tag}_p99_us value=$q99 unit=us" >&3
    done
}

{
  echo "| round | first booted | counted | $(for c in "${configs[@]}"; do [ "$LOAD" = closed ] && printf '%s req/s | ' "${c%%:*}"; printf '%s p50 us | %s p99 us | %s late timer irqs, latest | %s host steal ms | ' "${c%%:*}" "${c%%:*}" "${c%%:*}" "${c%%:*}"; done)"
  echo "|---|---|---|$(for c in "${configs[@]}"; do [ "$LOAD" = closed ] && printf -- '---|'; printf -- '---|---|---|---|'; done)"
  for r in "${all[@]}"; do
    first=${configs[$(((r - 1) % k))]}
    counted=no
    [[ " ${calm[*]} " == *" $r "* ]] && counted=yes
    printf '| %s | %s | %s | ' "$r" "${first%%:*}" "$counted"
    for c in "${configs[@]}"; do
      n=${c%%:*}
      [ "$LOAD" = closed ] && printf '%s | ' "${rps[$r/$n]:--}"
      printf '%s | %s | %s | %s | ' "${p50[$r/$n]:--}" "${p99[$r/$n]:--}" "${late[$r/$n]:--}" "${steal[$r/$n]:--}"
    done
    echo
  done
  echo
  if [ "$LOAD" = closed ]; then
    for tag in calm all; do
      if [ $tag = calm ]; then rounds=("${calm[@]}"); else rounds=("${all[@]}"); fi
      echo "Requests a second, $tag rounds (${#rounds[@]}):"
      echo
      echo "| configuration | median req/s | over $base's, median of rounds (range) | higher than $base's in |"
      echo "|---|---|---|---|"
      for c in "${configs[@]}"; do
        row=$(rps_row "${c%%:*}" "${rounds[@]}")
        echo "$row"
        m=$(sed -n 's/^| [^|]* | [^|]* | \([0-9.]*\) (.*/\1/p' <<< "$row")
        [ -n "$m" ] && echo "BENCH name=closed_${MODEL%%,*}_${c%%:*}_${tag}_rps_ratio value=$m unit=ratio" >&3
      done
      echo
    done
  fi
  echo "**Calm rounds** (${#calm[@]}: no boot lost more than $STEAL_PCT% of the host's CPU time, $steal_max_ms ms,"
  echo "to the hypervisor), every answered request pooled per configuration; the"
  echo "interval resamples whole rounds, 2,000 times, seed 1:"
  echo
  pooled_table calm "${calm[@]}"
  echo
  [ -n "${PNG:-}" ] && [ -f "$PNG" ] && { echo "![calm rounds' latency by percentile]($(basename "$PNG"))"; echo; }
  echo "**Every round** (${#all[@]}), pooled the same way:"
  echo
  pooled_table all "${all[@]}"
  echo
  echo "Per round, calm rounds only:"
  echo
  echo "| configuration | harts | bootargs | median p50 us | median p99 us | p99 over $base's, median of rounds (range) | worse than $base in |"
  echo "|---|---|---|---|---|---|---|"
  for c in "${configs[@]}"; do
    name=${c%%:*} rest=${c#*:}
    harts=${rest%%:*} args=${rest#*:}
    m50=$(for r in "${calm[@]}"; do echo "${p50[$r/$name]}"; done | median)
    m99=$(for r in "${calm[@]}"; do echo "${p99[$r/$name]}"; done | median)
    cols="- | -"
    [ "$name" = "$base" ] || cols=$(ratio_stats "$name" "${calm[@]}")
    echo "| $name | $harts | ${args:-(none)} | ${m50:--} | ${m99:--} | $cols |"
  done
  echo
  echo "matrixd \`-m ${MODEL//,/ }\`, ${#all[@]} rounds of ${DURATION_S} s (${#calm[@]} calm), produced by"
  echo "\`scripts/bench-light.sh\` on $(date -u +%F); QEMU $("$QEMU" --version | head -1 | sed 's/QEMU emulator version //'),"
  echo "TCG, no \`-icount\`; host: $(nproc) cores, shared."
} 3>&1 > "$OUT"
echo "bench-light: wrote $OUT" >&2
exit $status
