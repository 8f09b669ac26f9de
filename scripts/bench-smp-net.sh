#!/usr/bin/env bash
# matrixd at -smp 1 and -smp 2, measured in one run (issue 13): for each model
# and matrix size, a closed loop of 128 connections (requests/s) and a light
# load of 64 connections each sending every 100 ms (p99 latency), first on one
# hart and then on two, one boot per point. While the closed loop runs, the
# host CPU time of QEMU's threads is read from /proc: its main loop (virtio-net
# and the user network, on the host) and its vCPU threads (the guest). Prints
# BENCH lines and writes docs/results/smp-matrixd.md. A model written
# MODEL/tN runs matrixd with -t N (UC models: N executor threads; by default
# matrixd runs one per hart).
#
#   scripts/bench-smp-net.sh    (env: BUILD, MODELS, SIZES, DURATION_S, OUT)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/qemu-lib.sh     # BUILD, QEMU, boot_matrixd, halt_qemu
trap halt_qemu EXIT
QEMU_LIMIT=900
OUT=${OUT:-docs/results/smp-matrixd.md}
MODELS=${MODELS:-kcuc kcuc/t1 kcut ktut ktuc ktuc/t1}
SIZES=${SIZES:-15 32}
DURATION_S=${DURATION_S:-5}
# Boots per point: each figure in the table is the median of ROUNDS boots,
# the one-hart and two-hart boots of a row alternating (one boot's light-load
# p99 on this host can be ten times the next one's).
ROUNDS=${ROUNDS:-3}
MCLIENT=$BUILD/host/mclient
# Named threads ("CPU 0/TCG", ...), so that qemu_ticks can tell them apart.
# -mem-prealloc: QEMU backs guest RAM with host memory as it is first
# touched, and on this host (transparent huge pages on madvise, which QEMU
# asks for) each first touch of a region is a host page fault that zeroes,
# and may compact, 2 MiB: milliseconds of wall time in which the guest runs
# nothing. A boot that touches new memory while it is measured (KTUT spawns a
# stackful call with a fresh stack per waiting call) measured those faults:
# KTUT's light-load p99 on one fresh hart was 5.1 ms without and 0.63 ms
# with, and on two harts 6.2 ms and 0.89 ms.
export QEMU_EXTRA="${QEMU_EXTRA:-} -name coral,debug-threads=on -mem-prealloc"
DIR=$BUILD/bench-smp-net
mkdir -p "$DIR" "$(dirname "$OUT")"

build_kernel_and_client bench-smp-net "$DIR" || exit 1

# The median of a list of numbers ("" if none; of an even count, the lower middle).
median() { tr ' ' '\n' <<< "$1" | grep . | sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }

# Ticks of the whole host so far: "busy total" (every core, from /proc/stat).
host_ticks() {
  local _ u n s i w q sq st
  read -r _ u n s i w q sq st _ < /proc/stat
  echo "$((u + n + s + q + sq + st)) $((u + n + s + i + w + q + sq + st))"
}

# Host CPU ticks (user + system) used so far by QEMU's main thread and by all
# its vCPU threads together: "main vcpus".
qemu_ticks() {
  local pid=$1 main=0 vcpu=0 t comm ticks
  for t in /proc/"$pid"/task/*; do
    comm=$(cat "$t/comm" 2> /dev/null) || continue
    # Fields 14 and 15 of stat (after the command name in parentheses).
    ticks=$(sed 's/.*) //' "$t/stat" 2> /dev/null | awk '{ print $12 + $13 }') || continue
    if [ "${t##*/}" = "$pid" ]; then
      main=$((main + ticks))
    elif [[ $comm == CPU* ]]; then
      vcpu=$((vcpu + ticks))
    fi
  done
  echo "$main $vcpu"
}

rows=()
status=0
total=$(( $(wc -w <<< "$MODELS") * $(wc -w <<< "$SIZES") * 2 * ROUNDS ))
done_points=0
start=$SECONDS
hz=$(getconf CLK_TCK)
for spec in $MODELS; do
  model=${spec%%/*}
  targs= tname=
  if [ "$spec" != "$model" ]; then
    targs=",-t,${spec#*/t}"
    tname=" -t ${spec#*/t}"
  fi
  for n in $SIZES; do
    declare -A rps=() p99=() mainpct=() vcpupct=() hostpct=()
    for round in $(seq 1 "$ROUNDS"); do
      for smp in 1 2; do
        done_points=$((done_points + 1))
        echo "bench-smp-net: [$done_points/$total] ${model^^}$tname n=$n on $smp hart(s) ($((SECONDS - start)) s so far)" >&2
        log=$DIR/${spec//\//_}_n${n}_smp${smp}_$round.log
        if ! boot_matrixd "$log" "$smp" "user=matrixd,-m,$model,-q$targs"; then
          echo "bench-smp-net: matrixd ($model) did not start; see $log" >&2
          halt_qemu
          status=1
          continue
        fi
        qpid=$(pgrep -P "$QPID" | head -1)
        # Closed loop, with the host CPU of QEMU's threads over the run.
        before=$(qemu_ticks "$qpid")
        hbefore=$(host_ticks)
        t0=$(date +%s.%N)
        out=$(timeout 300 "$MCLIENT" -p "$PORT" -c 128 -i 0 -d "$DURATION_S" -n "$n" 2>&1 | grep "^mclient: " | tail -1)
        t1=$(date +%s.%N)
        after=$(qemu_ticks "$qpid")
        hafter=$(host_ticks)
        rps[$smp]+="$(field rps "$out") "
        read -r hb0 ht0 <<< "$hbefore"
        read -r hb1 ht1 <<< "$hafter"
        hostpct[$smp]+="$(awk -v b=$((hb1 - hb0)) -v t=$((ht1 - ht0)) 'BEGIN { if (t > 0) printf "%.0f", 100 * b / t }') "
        read -r m0 v0 <<< "$before"
        read -r m1 v1 <<< "$after"
        # Percent of one host core over the client's whole run (set-up included).
        mainpct[$smp]+="$(awk -v d=$((m1 - m0)) -v hz="$hz" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", 100 * d / hz / (b - a) }') "
        vcpupct[$smp]+="$(awk -v d=$((v1 - v0)) -v hz="$hz" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", 100 * d / hz / (b - a) }') "
        # Let the closed loop's connections drain before the light load.
        sleep 2
        out=$(timeout 300 "$MCLIENT" -p "$PORT" -c 64 -i 100 -d "$DURATION_S" -n "$n" 2>&1 | grep "^mclient: " | tail -1)
        p99[$smp]+="$(field p99_us "$out") "
        halt_qemu
      done
    done
    # Each figure: the median of the row's boots (ROUNDS of them).
    for smp in 1 2; do
      for v in rps p99 mainpct vcpupct hostpct; do
        declare -n list=$v
        list[$smp]=$(median "${list[$smp]:-}")
        unset -n list
      done
      echo "BENCH name=smp_${spec//\//_}_n${n}_smp${smp}_rps value=${rps[$smp]:-0} unit=req/s"
      echo "BENCH name=smp_${spec//\//_}_n${n}_smp${smp}_light_p99_us value=${p99[$smp]:-0} unit=us"
    done
    ratio=$(awk -v a="${rps[2]:-0}" -v b="${rps[1]:-0}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
    pratio=$(awk -v a="${p99[2]:-0}" -v b="${p99[1]:-0}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
    # The most two harts could serve over one if each request cost the host
    # what it did on one hart: the whole host over the share it was busy then.
    ceiling=$(awk -v h="${hostpct[1]:-0}" 'BEGIN { if (h > 0) printf "%.2f", 100 / h; else print "n/a" }')
    echo "BENCH name=smp_${spec//\//_}_n${n}_rps_ratio value=$ratio unit=x"
    echo "BENCH name=smp_${spec//\//_}_n${n}_host_ceiling value=$ceiling unit=x"
    rows+=("| ${model^^}$tname | $n | ${rps[1]:-} | ${rps[2]:-} | **$ratio** | $ceiling | ${p99[1]:-} | ${p99[2]:-} | $pratio | ${mainpct[1]:-}% / ${vcpupct[1]:-}% / ${hostpct[1]:-}% | ${mainpct[2]:-}% / ${vcpupct[2]:-}% / ${hostpct[2]:-}% |")
    unset rps p99 mainpct vcpupct hostpct
  done
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
{
  echo "# matrixd on one hart and on two"
  echo
  echo "Produced by \`scripts/bench-smp-net.sh\` (part of \`make bench-smp\`) on $(date -u +%F):"
  echo "QEMU $("$QEMU" --version | head -1 | sed 's/QEMU emulator version //'), machine virt, 256 MiB, TCG with"
  echo "one host thread per vCPU (no \`-icount\`: wall-clock time), guest RAM preallocated"
  echo "(\`-mem-prealloc\`), virtio-net on QEMU's user network; host: $(nproc) cores, ${cpu:-unknown}. Each figure is the median of $ROUNDS"
  echo "boots, the \`-smp 1\` and \`-smp 2\` boots of a row alternating. Closed loop: 128 connections, each"
  echo "sending its next n x n matrix as soon as the answer to the last arrives, for"
  echo "${DURATION_S} s. Light load: 64 connections, one matrix every 100 ms each."
  echo
  echo "| model | n | req/s, 1 hart | req/s, 2 harts | 2 / 1 | host ceiling | light p99 us, 1 hart | light p99 us, 2 harts | p99 2 / 1 | host CPU, 1 hart: QEMU main / vCPUs / host busy | host CPU, 2 harts |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  for r in "${rows[@]}"; do echo "$r"; done
  echo
  echo "Host CPU is the percentage of one host core that QEMU's main thread (its event"
  echo "loop: virtio-net's queues, the user network's TCP, the port forward) and its vCPU"
  echo "threads (the guest) used during the closed loop. The host client runs on the same"
  echo "cores. Where the main thread is near 100%, the host side of the network, not the"
  echo "guest, sets the ceiling, and a second guest hart cannot raise it. *Host busy* is"
  echo "the share of all $(nproc) host cores that was busy (QEMU, the client and anything"
  echo "else running): near 100%, the host has nothing left to give a second hart."
  echo "*Host ceiling* is 100% over the host busy at one hart: how many times as much two"
  echo "harts could serve if each request cost the host (QEMU's threads, the client)"
  echo "what it did on one hart. For the coroutine models (KCUC, KTUC), whose one-hart"
  echo "runs switch no thread per request, one hart's cost per request is the least the"
  echo "host pays, and the ceiling is the most two harts can show here. The thread"
  echo "models' one-hart runs cost the host more per request than their two-hart runs,"
  echo "for reasons not measured here, and their ratio can pass the ceiling."
  echo
  echo "Reading it (written with the code, checked against the table when it was committed):"
  echo
  echo "- The coroutine models (KCUC, KTUC) run one executor thread per hart"
  echo "  (matrixd -t, by default one per hart), so their coroutines, and with them"
  echo "  the parse, the multiply and the formatting, run on both harts; the \`-t 1\`"
  echo "  rows keep one executor thread on two harts, as matrixd did before, where"
  echo "  only the kernel's share of a request could move to the second hart."
  echo "  Compare each \`-t 1\` row with the row above it (same run, same host)."
  echo "- The ceiling here is the host: look at the host ceiling and the last two"
  echo "  columns. On one hart QEMU already uses more than one host core (main loop"
  echo "  and vCPU), and the whole host is 64-68% busy. The ceiling column assumes"
  echo "  a request costs the host on two harts what it did on one; it is not a"
  echo "  bound. QEMU's main loop (the user network) spends less per request when it"
  echo "  is busier (32-36% of a core for 1.7 times the requests, against 44-47%),"
  echo "  and on 2026-11-29 (this table, a faster host than the day before's) KCUC"
  echo "  passed it: 1.70 at n = 15 and 1.66 at n = 32, KCUT 2.13 and 2.21, KTUT"
  echo "  1.93 and 1.92, KTUC 1.57 and 1.38. But the host moves: an hour later,"
  echo "  KCUC alone with nine boots a point read 1.33 and 1.52 (3,714 and 1,000"
  echo "  requests a second on one hart, against 5,145 and 1,310 here). Issue 13's"
  echo "  1.7 is met in this table at n = 15 and not shown to hold from run to run"
  echo "  (bench-light.sh with LOAD=closed counts only rounds the hypervisor left"
  echo "  alone: docs/results/smp-light-kcuc.md). On the slow host of the day"
  echo "  before, KCUC was 1.47 and 1.58; what raised it from 1.10 there was lazy"
  echo "  address spaces. A host profile (perf on the QEMU process during the"
  echo "  closed loop) showed two vCPU threads spending 61% of their time in QEMU"
  echo "  itself, outside translated guest code, against 48% for one: the cost of"
  echo "  emptying QEMU's software TLB, which every satp write does, 1.2 times a"
  echo "  request on two harts (docs/ARCHITECTURE.md, Address spaces; 1,039 loads"
  echo "  in a 6 s run instead of 29,076). The guest's own share remains: a request"
  echo "  takes more instructions on two harts, most of them the network lock's"
  echo "  first attempts spinning (handing them to a stackful coroutine instead"
  echo "  served fewer requests in KCUC and KCUT and more in KTUT, where it is"
  echo "  kept: docs/results/ab-handoff.md). The thread models' higher ratios come"
  echo "  from a slower start on one hart, not from a higher rate on two."
  echo "- Light-load p99, three boots a point: two harts' p99 is 0.88 (KTUT) to"
  echo "  1.65 (KTUC) times one hart's at n = 15, KCUC 1.48, and 1.04-2.75 at"
  echo "  n = 32. Three boots cannot tell these apart on this host, where one"
  echo "  boot's p99 can be ten times the next one's: the boots that lose a second"
  echo "  or more of the host's CPU to its hypervisor decide the tail. Measured"
  echo "  over 16 rounds the hypervisor left alone (docs/results/smp-light-kcuc.md,"
  echo "  bench-light.sh), KCUC at n = 15 reads 1.05 (95% interval 0.96-1.17),"
  echo "  half of it QEMU's multi-vCPU mode. What brought"
  echo "  it down before: kco_wake's wake-affine rule (a hart with nothing else"
  echo "  ready runs what it wakes, so a request does not cross harts at each"
  echo "  step), idle harts that sleep without a tick and do not poll (each tick of"
  echo "  a halted vCPU woke its host thread, which took QEMU's big lock from the"
  echo "  busy hart: KCUC n = 15, 824 us on two harts against 3,639 us before),"
  echo "  guest RAM preallocated (a first touch of guest memory is a host page"
  echo "  fault of milliseconds), the kick delay for idle executor threads"
  echo "  (docs/results/smp-light-kcuc.md) and now lazy address spaces (a sleeping"
  echo "  hart keeps its table: 3 satp loads in an 8 s light run instead of"
  echo "  8,379). Rules tried and dropped are in docs/ARCHITECTURE.md (\"Not built"
  echo "  yet\"); what the kernel trace shows in the slowest requests is the host:"
  echo "  both harts record nothing for milliseconds at once, and timer interrupts"
  echo "  reach an idle hart late (QEMU raises them from its main loop thread,"
  echo "  which also runs the user network)."
  echo "- Closed loop: the rules apply only when a lane is empty or a hart idle, so"
  echo "  under load work still spreads; both harts' rates vary by 15% or more from"
  echo "  one run to the next here: compare rows measured in one run."
} > "$OUT"
echo "bench-smp-net: wrote $OUT" >&2
exit $status
