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
# beside it. Each run also records where the host's cores went
# (scripts/host/cpu-snap.sh), printed as a last table: a closed loop on two
# harts is bounded by the host's cores, one on one hart is not; and the
# busiest vCPU thread alone (at light load the working hart's: two harts'
# extra host time is there, docs/results/light-stalls.md).
#
#   scripts/bench-light.sh   (env: BUILD, CONFIGS, MODEL, N, ROUNDS, MAX_ROUNDS,
#                             STEAL_PCT, DURATION_S, OUT)
#   CONFIGS: "name:harts:bootargs[:net[:matrixd[:os[:image]]]]" words, bootargs with
#     commas for spaces, net user or tap (NET's value if left out), matrixd:
#     more arguments for matrixd in this configuration only, after MODEL's
#     (commas for spaces), os coral (the default) or linux: the Linux
#     baseline instead of Coral (scripts/linux/build.sh: one mserver a hart,
#     the same protocol and client; bootargs, matrixd and MODEL do not apply),
#     image: the Coral kernel to boot in this configuration (a copied
#     kernel.elf; KERNEL_IMAGE, else this tree's build, by default), so that
#     two versions of the kernel are compared in the same rounds.
#     The first configuration of each network and OS is the one the others
#     of that network and OS are divided by (its base). Default "1h:1: 2h:2:"; e.g.
#     "1h:1: 2h:2: 2h-eager:2:kick_us=0" or "1h:1:: 2h:2:: 1h-tap:1::tap 2h-tap:2::tap"
#     or "1h:1::tap 2h:2::tap 2h-t1:2::tap:-t,1" or "1h:1: 2h:2: 1h-linux:1::::linux 2h-linux:2::::linux"
#     or "old:2:::::/tmp/old.elf new:2:::::/tmp/new.elf".
#   MODEL: matrixd's -m, with its other arguments after commas ("kcuc,-t,1").
#   STEAL_PCT: 1 by default; a large value (100) counts every round.
#   PNG: also draw the calm rounds' pooled latencies against their percentile
#     into this file (gnuplot; scripts/deps.sh --eval installs it).
#   RPS_PNG (LOAD=closed): also draw each configuration's requests a second
#     over its base's, calm round by calm round, into this file, with a dashed
#     line at RPS_LINE if set (bench-smp: issue 13's 1.7), titled
#     RPS_LINE_TITLE (RPS_LINE's value by default).
#   LOAD: light (the default) or closed: 128 connections in a closed loop
#     instead (each sends its next matrix when the answer to the last has
#     come), for requests per second; the table then also gives each
#     configuration's requests per second over the first one's, per round.
#   MAIN_NICE_CONFIGS: names of configurations in which QEMU's main thread
#     runs at nice MAIN_NICE (-10) once the guest is up (an experiment of
#     docs/results/light-stalls.md; needs root).
#   NET: the network of configurations that name none: user (the default:
#     QEMU's user network, slirp, behind a host port) or tap (a tap device
#     and the host's own TCP stack; needs root).
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
NET=${NET:-user}
# parse_config WORD: set name, harts, args, net, margs (matrixd's own
# arguments), os, image and group (what its base is the first of: the network, and
# the OS when it is not Coral) from one CONFIGS word.
parse_config() {
  local f
  IFS=: read -r -a f <<< "$1"
  name=${f[0]} harts=${f[1]:-} args=${f[2]:-} net=${f[3]:-} margs=${f[4]:-} os=${f[5]:-coral}
  image=${f[6]:-${KERNEL_IMAGE:-}}
  if [ -n "$image" ] && [ ! -f "$image" ]; then
    echo "bench-light: $1: no kernel image $image" >&2
    exit 2
  fi
  net=${net:-$NET}
  case $net in
    user | tap) ;;
    *) echo "bench-light: $1: the network must be user or tap" >&2; exit 2 ;;
  esac
  case $os in
    coral) group=$net ;;
    linux) group=$net-linux ;;
    *) echo "bench-light: $1: the OS must be coral or linux" >&2; exit 2 ;;
  esac
}
MCLIENT=$BUILD/host/mclient
export QEMU_EXTRA="${QEMU_EXTRA:-} -mem-prealloc"   # (as bench-ab.sh)
DIR=$BUILD/bench-light
mkdir -p "$DIR" "$(dirname "$OUT")"
build_kernel_and_client bench-light "$DIR" || exit 1
read -r -a configs <<< "$CONFIGS"
k=${#configs[@]}
# Each configuration's base: the first configuration of its group (network,
# and OS); the tap device, if any configuration runs on one (the guest keeps
# 10.0.2.15); and the Linux baseline's image, if any configuration boots it.
declare -A base_of=() net_base=()
nets=()                        # the groups, in order of first appearance
TAP= LINUX_IMAGE=
for c in "${configs[@]}"; do
  parse_config "$c"
  [ -n "${net_base[$group]:-}" ] || { net_base[$group]=$name; nets+=("$group"); }
  base_of[$name]=${net_base[$group]}
  if [ "$os" = linux ] && [ -z "$LINUX_IMAGE" ]; then
    LINUX_IMAGE=$(bash scripts/linux/build.sh "$BUILD") || { echo "bench-light: the Linux baseline did not build" >&2; exit 1; }
  fi
  if [ "$net" = tap ] && [ -z "$TAP" ]; then
    TAP=ltap$$
    trap 'ip link del "$TAP" 2> /dev/null' EXIT
    tap_up "$TAP" || { echo "bench-light: cannot set up tap $TAP (a tap needs root; is 10.0.2.15 routed elsewhere?)" >&2; exit 1; }
    TAP_NETDEV=$QEMU_NETDEV      # (set per boot below)
  fi
done
base=${configs[0]%%:*}
# "1h's", or "its network's first configuration's" when there are several.
base_word="$base's"
[ ${#nets[@]} -gt 1 ] && base_word="its base's (the first configuration of its OS on its network)"
declare -A p50=() p99=() rps=() late=() steal=() cpu=() slow=()
calm=() all=()                 # round numbers
# Where the host's cores went during each run (scripts/host/cpu-snap.sh):
# QEMU is named so that its threads can be found, and named per thread.
QNAME=coral-bl$$
export QEMU_EXTRA="${QEMU_EXTRA:-} -name $QNAME,debug-threads=on"
SNAP="scripts/host/cpu-snap.sh $QNAME"
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
    parse_config "$c"
    if [ "$net" = tap ]; then
      CLIENT_HOST="-H $GUEST_HOST -p 80"
      export QEMU_NETDEV=$TAP_NETDEV
    else
      CLIENT_HOST='-p $PORT'   # PORT: set for this boot by drive_matrixd_stats
      unset QEMU_NETDEV
    fi
    log=$DIR/r${round}_$name.log
    # MAIN_NICE_CONFIGS: QEMU's main thread (tid = pid; it moves every packet
    # between the network and virtio-net) runs at nice MAIN_NICE in these.
    # ("[c]": the pattern must not match the shell that runs this line,
    # whose own command line holds it.)
    pre=""
    [[ " ${MAIN_NICE_CONFIGS:-} " == *" $name "* ]] &&
      pre="renice -n ${MAIN_NICE:--10} -p \$(pgrep -n -f -- '-name [c]${QNAME#c},debug-threads=on') > /dev/null; "
    echo "bench-light: round $round (${#calm[@]} of $ROUNDS calm so far), ${MODEL%%,*}, $name ($((SECONDS - start)) s so far)" >&2
    run="sleep 1; $pre$SNAP > $log.cpu; $MCLIENT $CLIENT_HOST $CLIENT_LOAD -d $DURATION_S -n $N --csv $log.csv > $log.light 2>&1; $SNAP >> $log.cpu"
    if [ "$os" = linux ]; then
      drive_linux_stats "$log" "$harts" "$LINUX_IMAGE" "$run"
    else
      KERNEL_IMAGE=$image drive_matrixd_stats "$log" "$harts" "$MODEL${margs:+,$margs}" "${args:+ ${args//,/ }}" "$run"
    fi
    if [ $? != 0 ]; then
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
    # Stalls: requests that took over 5 ms (at light load they come in
    # bursts, when the host stops the guest's traffic for tens of ms:
    # docs/results/light-stalls.md).
    slow[$round/$name]=$(awk -F, 'NR > 1 && $5 - $3 > 5000 { n++ } END { print n + 0 }' "$log.csv")
    steal[$round/$name]=$(awk 'NR == 1 { a = $7 } NR == 2 { printf "%d", ($7 - a) * 1000 / '"$HZ"' }' "$log.cpu")
    # In cores (CPU seconds a second): the vCPU threads running, and waiting
    # for a host core; QEMU's other threads; the rest of the host (the
    # client, the host's TCP stack for a tap, anything else); the host idle.
    # And the busiest vCPU thread alone (cpu-snap.sh's per-thread times: at
    # light load the working hart's, whose extra time is two harts' cost).
    cpu[$round/$name]=$(awk -v hz="$HZ" 'NR == 1 { split($0, a); for (i = 8; i <= NF; i++) { split($i, kv, "="); t0[kv[1]] = kv[2] } }
      NR == 2 { d = $1 - a[1]; m = "-"
      for (i = 8; i <= NF; i++) { split($i, kv, "="); v = (kv[2] - t0[kv[1]]) / 1e9 / d; if (m == "-" || v > m) m = v }
      printf "%.2f %.2f %.2f %.2f %.2f %s", ($2 - a[2]) / hz / d, ($3 - a[3]) / 1e9 / d, ($4 - a[4]) / hz / d,
        ($5 - a[5] - ($2 - a[2]) - ($4 - a[4])) / hz / d, ($6 - a[6]) / hz / d, m == "-" ? m : sprintf("%.3f", m) }' "$log.cpu")
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
    rs+=("$(awk -v a="${p99[$r/${base_of[$name]}]}" -v b="${p99[$r/$name]}" 'BEGIN { printf "%.2f", b / a }')")
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
  if [ "$name" = "${base_of[$name]}" ]; then
    echo "| $name | $med | - | - |"
    return
  fi
  for r in "$@"; do
    rs+=("$(awk -v a="${rps[$r/${base_of[$name]}]}" -v b="${rps[$r/$name]}" 'BEGIN { printf "%.2f", b / a }')")
    awk -v x="${rs[-1]}" 'BEGIN { exit !(x > 1) }' && more=$((more + 1))
  done
  local m
  m=$(median <<< "${rs[*]}")
  echo "| $name | $med | $m ($(printf '%s\n' "${rs[@]}" | sort -g | sed -n '1p;$p' | paste -sd- -)) | $more of ${#rs[@]} |"
}

# per_vcpu ROUND/NAME: that boot's requests a second per core of vCPU time
# (the first field of its cpu entry), or nothing without one.
per_vcpu() { awk -v q="${rps[$1]:-0}" -v c="${cpu[$1]%% *}" 'BEGIN { if (c > 0) printf "%.0f", q / c }'; }

# rps_chart ROUNDS...: RPS_PNG's chart (LOAD=closed): for each configuration
# that has a base, its requests a second over its base's in each of ROUNDS,
# one line a configuration.
rps_chart() {
  local dat=$DIR/rps-chart.dat plots="" i=0 c r
  : > "$dat"
  for c in "${configs[@]}"; do
    parse_config "$c"
    [ "$name" = "${base_of[$name]}" ] && continue
    echo "\"$name over ${base_of[$name]}\"" >> "$dat"
    for r in "$@"; do
      awk -v a="${rps[$r/${base_of[$name]}]:-0}" -v b="${rps[$r/$name]:-0}" -v r="$r" \
        'BEGIN { if (a > 0 && b > 0) printf "%s %.3f\n", r, b / a }' >> "$dat"
    done
    printf '\n\n' >> "$dat"
    plots+="${plots:+, }\"$dat\" index $i using 1:2 with linespoints lw 2 pt 7 title columnheader(1)"
    i=$((i + 1))
  done
  [ $i -gt 0 ] || return 0
  [ -n "${RPS_LINE:-}" ] && plots+=", $RPS_LINE with lines dt 2 lc rgb \"black\" title \"${RPS_LINE_TITLE:-$RPS_LINE}\""
  gnuplot <<GP || echo "bench-light: gnuplot failed on $RPS_PNG" >&2
set terminal pngcairo size 800,560 font ",11"
set output "$RPS_PNG"
set termoption noenhanced
set title "matrixd ${MODEL%%,*}, closed loop: requests a second over the base's, $# calm rounds"
set xlabel "round"
set ylabel "requests a second over the base's"
set yrange [0:*]
set xtics 1
set grid ytics
set key below
plot $plots
GP
}

# unbound_rps ROUND/NAME: that boot's requests a second scaled by its vCPU
# threads' running plus waiting time over their running time (the first two
# fields of its cpu entry), or nothing without one.
unbound_rps() {
  local f
  read -r -a f <<< "${cpu[$1]:-}"
  awk -v q="${rps[$1]:-0}" -v run="${f[0]:-0}" -v w="${f[1]:-0}" \
    'BEGIN { if (run > 0 && q > 0) printf "%.0f", q * (run + w) / run }'
}

# rate_cells FN BENCH NAME: two cells of the host table for NAME (LOAD=closed):
# the median over calm rounds of FN ROUND/NAME (a per-boot rate), and that
# rate over its base's in the same round, median (range), also printed as
# BENCH line BENCH; "-" for a base.
rate_cells() {
  local fn=$1 bench=$2 name=$3 r e b m mr vals=() ratios=()
  for r in "${calm[@]}"; do
    e=$($fn "$r/$name")
    b=$($fn "$r/${base_of[$name]}")
    vals+=("$e")
    [ -n "$e" ] && [ -n "$b" ] && ratios+=("$(awk -v a="$b" -v x="$e" 'BEGIN { printf "%.2f", x / a }')")
  done
  m=$(median <<< "${vals[*]}")
  if [ "$name" = "${base_of[$name]}" ] || [ ${#ratios[@]} -eq 0 ]; then
    echo " ${m:--} | - |"
    return
  fi
  mr=$(median <<< "${ratios[*]}")
  echo " ${m:--} | $mr ($(printf '%s\n' "${ratios[@]}" | sort -g | sed -n '1p;$p' | paste -sd- -)) |"
  echo "BENCH name=closed_${MODEL%%,*}_${name}_${bench} value=$mr unit=ratio" >&3
}

# png_of GROUP: the chart's file for the configurations of GROUP: PNG for the
# first group, PNG with -GROUP before .png for any other.
png_of() {
  if [ "$1" = "${nets[0]}" ]; then echo "$PNG"; else echo "${PNG%.png}-$1.png"; fi
}

# pooled_table TAG ROUNDS...: light-pool.py over those rounds, as a table
# (and the chart, for the calm rounds, if PNG is set), once per network.
pooled_table() {
  local tag=$1
  shift
  echo "| configuration | rounds | requests | p50 us | p99 us | p99.9 us | p99 over $base_word | 95% interval | resamples where worse |"
  echo "|---|---|---|---|---|---|---|---|---|"
  [ $# -gt 0 ] || return 0
  local n
  for n in "${nets[@]}"; do pooled_rows "$n" "$tag" "$@"; done
}

# pooled_rows GROUP TAG ROUNDS...: pooled_table's rows for the configurations of GROUP.
pooled_rows() {
  local grp=$1 tag=$2 r c runs=() png=()
  shift 2
  local who="matrixd ${MODEL%%,*}"
  [[ $grp == *-linux ]] && who="Linux 6.1, mserver"
  [ "$tag" = calm ] && [ -n "${PNG:-}" ] && command -v gnuplot > /dev/null &&
    png=(--png "$(png_of "$grp")" --title "$who, $LOAD load, $# calm rounds pooled, $grp")
  for r in "$@"; do
    for c in "${configs[@]}"; do
      parse_config "$c"
      [ "$group" = "$grp" ] && runs+=("$name:$r:$DIR/r${r}_$name.log.csv")
    done
  done
  python3 scripts/light-pool.py "${png[@]}" "${net_base[$grp]}" "${runs[@]}" |
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
  # (bench-smp copies this line beside the tables it takes from here.)
  echo "Measured on $(date -u +%F) by scripts/bench-light.sh: LOAD=$LOAD, MODEL=$MODEL, N=$N; rounds: ${#all[@]}, ${DURATION_S} s each."
  echo
  echo "| round | first booted | counted | $(for c in "${configs[@]}"; do [ "$LOAD" = closed ] && printf '%s req/s | ' "${c%%:*}"; printf '%s p50 us | %s p99 us | %s over 5 ms | %s late timer irqs, latest | %s host steal ms | ' "${c%%:*}" "${c%%:*}" "${c%%:*}" "${c%%:*}" "${c%%:*}"; done)"
  echo "|---|---|---|$(for c in "${configs[@]}"; do [ "$LOAD" = closed ] && printf -- '---|'; printf -- '---|---|---|---|---|'; done)"
  for r in "${all[@]}"; do
    first=${configs[$(((r - 1) % k))]}
    counted=no
    [[ " ${calm[*]} " == *" $r "* ]] && counted=yes
    printf '| %s | %s | %s | ' "$r" "${first%%:*}" "$counted"
    for c in "${configs[@]}"; do
      n=${c%%:*}
      [ "$LOAD" = closed ] && printf '%s | ' "${rps[$r/$n]:--}"
      printf '%s | %s | %s | %s | %s | ' "${p50[$r/$n]:--}" "${p99[$r/$n]:--}" "${slow[$r/$n]:--}" "${late[$r/$n]:--}" "${steal[$r/$n]:--}"
    done
    echo
  done
  echo
  if [ "$LOAD" = closed ]; then
    for tag in calm all; do
      if [ $tag = calm ]; then rounds=("${calm[@]}"); else rounds=("${all[@]}"); fi
      echo "Requests a second, $tag rounds (${#rounds[@]}):"
      echo
      echo "| configuration | median req/s | over $base_word, median of rounds (range) | higher than its base in |"
      echo "|---|---|---|---|"
      for c in "${configs[@]}"; do
        row=$(rps_row "${c%%:*}" "${rounds[@]}")
        echo "$row"
        m=$(sed -n 's/^| [^|]* | [^|]* | \([0-9.]*\) (.*/\1/p' <<< "$row")
        [ -n "$m" ] && echo "BENCH name=closed_${MODEL%%,*}_${c%%:*}_${tag}_rps_ratio value=$m unit=ratio" >&3
      done
      echo
    done
    if [ -n "${RPS_PNG:-}" ] && command -v gnuplot > /dev/null && [ ${#calm[@]} -gt 0 ]; then
      rps_chart "${calm[@]}"
      [ -f "$RPS_PNG" ] && { echo "![requests a second over the base's, per calm round]($(basename "$RPS_PNG"))"; echo; }
    fi
  fi
  echo "**Calm rounds** (${#calm[@]}: no boot lost more than $STEAL_PCT% of the host's CPU time, $steal_max_ms ms,"
  echo "to the hypervisor), every answered request pooled per configuration; the"
  echo "interval resamples whole rounds, 2,000 times, seed 1:"
  echo
  pooled_table calm "${calm[@]}"
  echo
  if [ -n "${PNG:-}" ]; then
    for n in "${nets[@]}"; do
      f=$(png_of "$n")
      [ -f "$f" ] && { echo "![calm rounds' latency by percentile, $n]($(basename "$f"))"; echo; }
    done
  fi
  echo "**Every round** (${#all[@]}), pooled the same way:"
  echo
  pooled_table all "${all[@]}"
  echo
  echo "Per round, calm rounds only:"
  echo
  echo "| configuration | harts | bootargs | network | median p50 us | median p99 us | p99 over $base_word, median of rounds (range) | worse than its base in |"
  echo "|---|---|---|---|---|---|---|---|"
  for c in "${configs[@]}"; do
    parse_config "$c"
    m50=$(for r in "${calm[@]}"; do echo "${p50[$r/$name]}"; done | median)
    m99=$(for r in "${calm[@]}"; do echo "${p99[$r/$name]}"; done | median)
    cols="- | -"
    [ "$name" = "${base_of[$name]}" ] || cols=$(ratio_stats "$name" "${calm[@]}")
    echo "| $name | $harts | ${args:-(none)}${margs:+ (matrixd ${margs//,/ })} | $net | ${m50:--} | ${m99:--} | $cols |"
  done
  echo
  echo "Where the host's $(nproc) cores went during the runs (scripts/host/cpu-snap.sh), in cores"
  echo "(CPU seconds a second), medians of the calm rounds. A vCPU thread neither running nor"
  echo "waiting for a core sleeps: its hart halted in \`wfi\`, or the thread blocked in QEMU"
  echo "(on the lock its main loop holds while it moves packets). \"Rest of the host\" is the"
  echo "client, the host's TCP stack, and anything else running there."
  echo
  per=""
  [ "$LOAD" = closed ] && per=" req/s per vCPU core | over $base_word, median of rounds (range) | req/s with a core for every runnable vCPU (estimate) | over $base_word (estimate) |"
  echo "| configuration | vCPU threads running | vCPU threads waiting for a core | QEMU's other threads | rest of the host | host idle | busiest vCPU thread running |$per"
  echo "|---|---|---|---|---|---|---|$([ -n "$per" ] && echo '---|---|---|---|')"
  for c in "${configs[@]}"; do
    parse_config "$c"
    row="| $name |"
    for i in 1 2 3 4 5 6; do
      row+=" $(for r in "${calm[@]}"; do awk -v i=$i '{ print $i }' <<< "${cpu[$r/$name]:-}"; done | median) |"
    done
    if [ -n "$per" ]; then
      # requests a second per core of vCPU time: the guest's own work per
      # request, whatever the host gave it (a host that gives two vCPUs less
      # than two cores bounds two harts' rate, not this).
      row+=$(rate_cells per_vcpu rps_per_vcpu_ratio "$name")
      # The rate the boot would have had if the host had run its vCPU threads
      # whenever they were runnable (running + waiting for a core), at the
      # rate per vCPU core it had: an estimate of the guest's own bound,
      # without the host's. (It assumes QEMU's main thread and the client
      # would have kept up.)
      row+=$(rate_cells unbound_rps rps_unbound_ratio "$name")
    fi
    echo "$row"
  done
  echo
  echo "matrixd \`-m ${MODEL//,/ }\`, ${#all[@]} rounds of ${DURATION_S} s (${#calm[@]} calm), produced by"
  echo "\`scripts/bench-light.sh\` on $(date -u +%F); QEMU $("$QEMU" --version | head -1 | sed 's/QEMU emulator version //'),"
  echo "TCG, no \`-icount\`; network user: QEMU's user network (slirp), tap: a tap device and the host's TCP stack; host: $(nproc) cores, shared."
  if [ -n "$LINUX_IMAGE" ]; then
    echo "Configurations of OS linux boot Linux $(dpkg-query -W -f='${Version}' linux-source-6.1) (Debian's source,"
    echo "scripts/linux/build.sh: tinyconfig and scripts/linux/linux.config) with one"
    echo "mserver (scripts/host/mserver.c: one epoll loop, the same protocol engine) per"
    echo "hart on one port (SO_REUSEPORT), instead of Coral and matrixd."
  fi
} 3>&1 > "$OUT"
echo "bench-light: wrote $OUT" >&2
exit $status
