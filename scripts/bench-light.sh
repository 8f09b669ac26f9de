#!/usr/bin/env bash
# Light load, configuration against configuration, boot by boot: matrixd
# under the host client's light load (64 connections, one N x N matrix every
# 100 ms each, DURATION_S seconds), one boot per configuration in each of
# ROUNDS rounds, the order rotating every round (whichever boots first in a
# round tends to have the worse tail on a shared host: ab-uptime.md). Prints
# each round's p99 and each configuration's p99 over the first one's, then
# BENCH lines with the medians, and writes a table to OUT. The default is
# issue 13's light-load criterion: two harts' p99 no worse than one hart's.
#
#   scripts/bench-light.sh   (env: BUILD, CONFIGS, MODEL, N, ROUNDS, DURATION_S, OUT)
#   CONFIGS: "name:harts:bootargs" words, bootargs with commas for spaces;
#     the first is the one the others are divided by. Default "1h:1: 2h:2:";
#     e.g. "1h:1: 2h:2: 2h-eager:2:kick_us=0".
#   MODEL: matrixd's -m, with its other arguments after commas ("kcuc,-t,1").
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/qemu-lib.sh     # BUILD, QEMU, drive_matrixd_stats, median
CONFIGS=${CONFIGS:-"1h:1: 2h:2:"}
MODEL=${MODEL:-kcuc}
N=${N:-15}
ROUNDS=${ROUNDS:-8}
DURATION_S=${DURATION_S:-8}
OUT=${OUT:-$BUILD/bench-light/light.md}
MCLIENT=$BUILD/host/mclient
export QEMU_EXTRA="${QEMU_EXTRA:-} -mem-prealloc"   # (as bench-ab.sh)
DIR=$BUILD/bench-light
mkdir -p "$DIR" "$(dirname "$OUT")"
build_kernel_and_client bench-light "$DIR" || exit 1
read -r -a configs <<< "$CONFIGS"
k=${#configs[@]}
base=${configs[0]%%:*}
declare -A p50=() p99=() ratios=() worse=()
status=0
start=$SECONDS
for round in $(seq 1 "$ROUNDS"); do
  order=()
  for i in $(seq 0 $((k - 1))); do order+=("${configs[$(((i + round - 1) % k))]}"); done
  for c in "${order[@]}"; do
    name=${c%%:*} rest=${c#*:}
    harts=${rest%%:*} args=${rest#*:}
    log=$DIR/r${round}_$name.log
    echo "bench-light: round $round/$ROUNDS, ${MODEL%%,*}, $name ($((SECONDS - start)) s so far)" >&2
    if ! drive_matrixd_stats "$log" "$harts" "$MODEL" "${args:+ ${args//,/ }}" \
         "sleep 1; $MCLIENT -p \$PORT -c 64 -i 100 -d $DURATION_S -n $N > $log.light 2>&1"; then
      echo "bench-light: round $round, $name failed: $(cat "$log.err") (see $log)" >&2
      status=1
      continue
    fi
    line=$(grep '^mclient: ' "$log.light" | tail -1)
    p50[$round/$name]=$(field p50_us "$line")
    p99[$round/$name]=$(field p99_us "$line")
  done
  summary="round $round:"
  for c in "${configs[@]}"; do
    name=${c%%:*}
    summary+=" $name ${p99[$round/$name]:-?} us"
    a=${p99[$round/$base]:-} b=${p99[$round/$name]:-}
    [ "$name" != "$base" ] && [ -n "$a" ] && [ -n "$b" ] || continue
    r=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }')
    ratios[$name]+="$r "
    awk -v r="$r" 'BEGIN { exit !(r > 1) }' && worse[$name]=$((${worse[$name]:-0} + 1))
  done
  echo "bench-light: $summary" >&2
done
{
  echo "| round | first booted | $(for c in "${configs[@]}"; do printf '%s p50 us | %s p99 us | ' "${c%%:*}" "${c%%:*}"; done)"
  echo "|---|---|$(for c in "${configs[@]}"; do printf -- '---|---|'; done)"
  for round in $(seq 1 "$ROUNDS"); do
    first=${configs[$(((round - 1) % k))]}
    printf '| %s | %s | ' "$round" "${first%%:*}"
    for c in "${configs[@]}"; do
      printf '%s | %s | ' "${p50[$round/${c%%:*}]:--}" "${p99[$round/${c%%:*}]:--}"
    done
    echo
  done
  echo
  echo "| configuration | harts | bootargs | median p50 us | median p99 us | p99 over $base's, median of rounds (range) | worse than $base in |"
  echo "|---|---|---|---|---|---|---|"
  for c in "${configs[@]}"; do
    name=${c%%:*} rest=${c#*:}
    harts=${rest%%:*} args=${rest#*:}
    m50=$(for r in $(seq 1 "$ROUNDS"); do echo "${p50[$r/$name]:-}"; done | median)
    m99=$(for r in $(seq 1 "$ROUNDS"); do echo "${p99[$r/$name]:-}"; done | median)
    if [ "$name" = "$base" ]; then
      rcol=- wcol=-
    else
      rmed=$(median <<< "${ratios[$name]:-}")
      range=$(tr ' ' '\n' <<< "${ratios[$name]:-}" | grep . | sort -g | sed -n '1p;$p' | paste -sd- -)
      rcol="${rmed:-?} ($range)" wcol="${worse[$name]:-0} of $(wc -w <<< "${ratios[$name]:-}")"
      echo "BENCH name=light_${MODEL%%,*}_${name}_p99_ratio value=${rmed:-0} unit=ratio" >&3
    fi
    echo "BENCH name=light_${MODEL%%,*}_${name}_p99_us value=${m99:-0} unit=us" >&3
    echo "| $name | $harts | ${args:-(none)} | ${m50:--} | ${m99:--} | $rcol | $wcol |"
  done
  echo
  echo "matrixd \`-m ${MODEL//,/ }\`, $ROUNDS rounds of ${DURATION_S} s, produced by"
  echo "\`scripts/bench-light.sh\` on $(date -u +%F); QEMU $("$QEMU" --version | head -1 | sed 's/QEMU emulator version //'),"
  echo "TCG, no \`-icount\`; host: $(nproc) cores, shared."
} 3>&1 > "$OUT"
echo "bench-light: wrote $OUT" >&2
exit $status
