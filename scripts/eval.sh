#!/usr/bin/env bash
# The COPS paper's evaluation (section 5) on Coral under QEMU, at -smp 1 and
# -smp 2 (the host has two cores: the "amount of cores" of the paper):
#
#   fig5   the four models (matrixd -m kcuc|kcut|ktut|ktuc) at 2 .. 128
#          connections as in the paper, then 256, 512 and 1024; each
#          connection sends a 15x15 matrix every 100 ms for 5 s, measured
#          after all connections are set up (mclient's ramp)
#   sat    the same boot at 128 connections in a closed loop (mclient -i 0:
#          each connection sends its next request when its answer arrives)
#   fig6   KCUC, 64 connections, priority i mod 8 (handshake "prio=P"), one
#          request every 50 ms, then the same in a closed loop
#   fig7   KCUC, 64 connections in 4 priorities, every 50 ms and closed loop;
#          every request's latency is kept (mclient --csv) for the CDF
#   table3 the paper's memory budget (8 + 26 + 2 MiB = a 36 MiB page pool:
#          QEMU's -m is found by a probe boot, see budget_mem below;
#          docs/results/eval.md explains the mapping), one hart,
#          matrixd -n 15: connections are opened until matrixd refuses
#          (mclient --until-refused), each accepted one gets one request
#          (--requests 1) and is held open while the kernel's memory counters
#          are read through QEMU's gdb stub (scripts/eval-kmem.gdb); if not
#          all got their answer, the largest count that does is bisected,
#          a fresh boot per try
#
# Raw data (mclient JSON/CSV, QEMU logs, results.csv, cdf.csv, table3.csv) go
# to build/eval/; scripts/eval-report.py turns them into docs/results/eval.md
# and the PNGs beside it (gnuplot). Progress goes to stderr.
#
#   scripts/eval.sh               the full run (about 15 minutes)
#   QUICK=1 scripts/eval.sh       fewer points, 2 s each (about 5 minutes)
#   scripts/eval.sh --report      only rebuild eval.md and the PNGs from build/eval/
#   (env: BUILD, QEMU, OUT, DOC, SMPS, MODELS)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/qemu-lib.sh     # BUILD, QEMU, qemu_cmd, boot_matrixd, halt_qemu, free_port
trap halt_qemu EXIT            # however this script ends, its QEMU ends with it
QEMU_LIMIT=1800                # one boot serves a whole model: a safety net only

QUICK=${QUICK:-0}
OUT=${OUT:-$BUILD/eval}
DOC=${DOC:-docs/results/eval.md}
SMPS=${SMPS:-1 2}
MODELS=${MODELS:-kcuc kcut ktut ktuc}
SIZE=15
if [ "$QUICK" = 1 ]; then
  CONNS=${CONNS:-2 16 128 1024}
  DURATION=2
  IDLE_WAIT=6
  BISECT_TO=16        # Table 3's bisection stops this close to the edge
else
  CONNS=${CONNS:-2 4 8 16 32 64 96 128 256 512 1024}
  DURATION=5
  IDLE_WAIT=8
  BISECT_TO=2
fi
SAT_CONNS=128
PRIO_CONNS=64
BUDGET_PAGES=9216   # a 36 MiB page pool: the paper's 8 + 26 + 2 MiB (eval.md)
TRY_CONNS=12000     # more than the budget holds in any model
BUDGET_NOFILE=16384 # descriptors (bootargs nofile=): memory, not them, must be the limit
MCLIENT=$BUILD/host/mclient
REPORT=scripts/eval-report.py

report() {
  bash scripts/deps.sh --eval || return 1
  python3 "$REPORT" report --dir "$OUT" --doc "$DOC" --quick "$QUICK"
}
if [ "${1:-}" = "--report" ]; then
  report
  exit
fi

rm -rf "$OUT"
mkdir -p "$OUT" "$(dirname "$DOC")"
build_kernel_and_client eval "$OUT" || exit 1

# QEMU's -m for Table 3: the pool is what RAM holds beyond OpenSBI and the
# kernel image, so probe once (kstats prints the free pages at 64 MiB, with
# init and itself running, as matrixd's baseline has) and add what the rest
# takes to the budget. (A fixed -m went wrong once: it was chosen when a
# static process table took 19 MiB of the image.)
budget_mem() {
  local probe=64 free
  free=$(coral_qemu 1 ${probe}M "user=kstats" < /dev/null 2>&1 | tr -d '\r' |
         sed -n 's/^kstats: free_pages=\([0-9]*\).*/\1/p')
  [ -n "$free" ] || return 1
  local taken=$((probe * 256 - free))   # pages outside the pool (4 KiB each)
  echo "$(((BUDGET_PAGES + taken + 255) / 256))M"
}
if ! BUDGET_MEM=$(budget_mem); then
  echo "eval: the probe boot for Table 3's budget failed" >&2
  exit 1
fi
bash scripts/deps.sh --eval > "$OUT/deps.log" 2>&1 ||
  echo "eval: gnuplot could not be installed (see $OUT/deps.log); plots will be missing" >&2
python3 "$REPORT" header > "$OUT/results.csv"
python3 "$REPORT" cdf-header > "$OUT/cdf.csv"
python3 "$REPORT" mem-header > "$OUT/table3.csv"
{
  echo "date=$(date -u '+%F %H:%M UTC')"
  echo "qemu=$("$QEMU" --version | head -1 | sed 's/QEMU emulator version //')"
  echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
  echo "host_cores=$(nproc)"
  echo "kernel=$(uname -sr)"
  echo "commit=$(git rev-parse --short HEAD 2> /dev/null)"
  echo "load_start=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "quick=$QUICK"
  echo "duration_s=$DURATION"
  echo "budget_mem=$BUDGET_MEM"
  echo "budget_pages=$BUDGET_PAGES"
} > "$OUT/machine.txt"

# ---- progress ----
nsmp=$(wc -w <<< "$SMPS") nmod=$(wc -w <<< "$MODELS") ncon=$(wc -w <<< "$CONNS")
TOTAL=$((nsmp * (nmod * (ncon + 1) + 4) + nmod))
STEP=0
START=$(date +%s)
step() {
  STEP=$((STEP + 1))
  local e=$(($(date +%s) - START))
  printf 'eval [%d/%d, %dm%02ds] %s\n' "$STEP" "$TOTAL" $((e / 60)) $((e % 60)) "$*" >&2
}

clean() { tr -d '\r' < "$1"; }
idle_lines() { clean "$1" | grep -c "^matrixd: idle "; }

# boot LOG SMP MODEL [MEM]: matrixd in MODEL, as many connections as it
# serves (MD_EXTRA: more of its options, comma-separated).
BOOT_LOG=
boot() {
  BOOT_LOG=$1
  boot_matrixd "$1" "$2" "${KARGS:+$KARGS }user=matrixd,-m,$3,-q,-c,${MD_CONNS:-1100}${MD_EXTRA:+,$MD_EXTRA}" \
    "${4:-256M}" && return 0
  echo "eval: matrixd ($3, smp $2) did not start; see $1" >&2
  halt_qemu
  return 1
}

# point EXP SMP MODEL CONNS INTERVAL_MS [mclient options]: one measurement on
# the running boot; appends its rows to results.csv. A boot that has ended is
# recorded as such (and booted again for the next point).
point() {
  local exp=$1 smp=$2 model=$3 conns=$4 ms=$5
  shift 5
  local name=${exp}_smp${smp}_${model}_c${conns}_i${ms}
  step "$exp: $model on $smp hart(s), $conns connections, $([ "$ms" = 0 ] && echo "closed loop" || echo "every $ms ms")"
  local note=
  if [ -z "$QPID" ] || ! kill -0 "$QPID" 2> /dev/null; then
    note="not run: QEMU was not running (see $BOOT_LOG)"
  else
    local idle_before
    idle_before=$(idle_lines "$BOOT_LOG")
    timeout $((DURATION + 120)) "$MCLIENT" -p "$PORT" -c "$conns" -i "$ms" -d "$DURATION" -n $SIZE \
      --allow-refused --json "$OUT/$name.json" "$@" > "$OUT/$name.out" 2>&1
    local rc=$?
    [ $rc -le 1 ] || note="mclient exit $rc"
    if ! kill -0 "$QPID" 2> /dev/null; then
      note="QEMU ended during the run: $(clean "$BOOT_LOG" | grep -v '^\s*$' | tail -1)"
    else
      # Let the connections drain (TIME_WAIT included): matrixd says "idle"
      # when the kernel's counters are back at its baseline.
      for _ in $(seq 1 $((IDLE_WAIT * 10))); do
        [ "$(idle_lines "$BOOT_LOG")" -gt "$idle_before" ] && break
        sleep 0.1
      done
    fi
  fi
  python3 "$REPORT" row --exp "$exp" --smp "$smp" --model "$model" --conns "$conns" \
    --interval "$ms" --json "$OUT/$name.json" --client-out "$OUT/$name.out" --note "$note" \
    >> "$OUT/results.csv"
  if [ -n "$note" ] && [ -n "$QPID" ]; then
    halt_qemu
    cp "$BOOT_LOG" "$OUT/$name.qemu.log.txt"
    boot "$BOOT_LOG" "$smp" "$model" > /dev/null 2>&1
  fi
}

# ---- Figure 5 and saturation: one boot per model and core count ----
for smp in $SMPS; do
  for model in $MODELS; do
    boot "$OUT/qemu_fig5_smp${smp}_$model.log" "$smp" "$model"
    for c in $CONNS; do
      point fig5 "$smp" "$model" "$c" 100
    done
    point sat "$smp" "$model" $SAT_CONNS 0
    halt_qemu
  done
done

# ---- Figures 6 and 7: KCUC with priorities ----
for smp in $SMPS; do
  boot "$OUT/qemu_prio_smp$smp.log" "$smp" kcuc
  point fig6 "$smp" kcuc $PRIO_CONNS 50 --prio-mod 8
  point fig6 "$smp" kcuc $PRIO_CONNS 0 --prio-mod 8
  for ms in 50 0; do
    csv=$OUT/fig7_smp${smp}_i$ms.csv
    point fig7 "$smp" kcuc $PRIO_CONNS $ms --prio-mod 4 --csv "$csv"
    [ -f "$csv" ] && python3 "$REPORT" cdf --smp "$smp" --interval $ms --csv "$csv" >> "$OUT/cdf.csv"
  done
  halt_qemu
done

# ---- Table 3: connections in the paper's memory budget ----
# kmem FILE: the kernel's memory counters now (the machine pauses meanwhile).
kmem() {
  gdb-multiarch -batch -nx -ex "target remote 127.0.0.1:$GDB_PORT" -x scripts/eval-kmem.gdb \
    -ex detach "$BUILD/kernel.elf" 2>&1 | grep "^KMEM " > "$1"
}
# table3_run MODEL CONNS NAME [mclient options]: a fresh boot in the budget;
# CONNS connections, one request each, held open while the kernel's memory
# counters are read (NAME.base.txt before, NAME.hold.txt while held; the
# client's NAME.json). Returns 0 if every connection was accepted and got a
# right answer; T3_NOTE says what went wrong with the run itself.
table3_run() {
  local model=$1 conns=$2 name=$3
  shift 3
  T3_NOTE=
  GDB_PORT=$(free_port)
  rm -f "$OUT/$name".*
  local log=$OUT/qemu_$name.log
  if ! QEMU_EXTRA="-gdb tcp:127.0.0.1:$GDB_PORT" MD_EXTRA="-n,$SIZE" KARGS="nofile=$BUDGET_NOFILE" \
       MD_CONNS=$((BUDGET_NOFILE - 16)) boot "$log" 1 "$model" "$BUDGET_MEM"; then
    T3_NOTE="matrixd did not start in $BUDGET_MEM (see $log)"
    return 1
  fi
  kmem "$OUT/$name.base.txt"
  "$MCLIENT" -p "$PORT" -c "$conns" -i 100 -d 300 -n $SIZE --requests 1 --allow-refused --ramp 1 \
    --quiet --json "$OUT/$name.json" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err" &
  local mpid=$!
  for _ in $(seq 1 6000); do   # 600 s at most: a safety net (thousands of connections, one handshake at a time)
    grep -qs "^mclient: holding" "$OUT/$name.err" && break
    kill -0 $mpid 2> /dev/null || break
    sleep 0.1
  done
  if grep -qs "^mclient: holding" "$OUT/$name.err"; then
    sleep 1                    # the last answers' buffers are freed
    kmem "$OUT/$name.hold.txt"
  else
    T3_NOTE="mclient never held its connections (see $OUT/$name.err)"
  fi
  kill -INT $mpid 2> /dev/null
  wait $mpid
  kill -0 "$QPID" 2> /dev/null || T3_NOTE="QEMU ended: $(clean "$log" | grep -v '^\s*$' | tail -1)"
  halt_qemu
  [ -z "$T3_NOTE" ] && python3 "$REPORT" all-answered --json "$OUT/$name.json" --conns "$conns"
}
for model in $MODELS; do
  step "table3: $model on 1 hart in $BUDGET_MEM: connections until refused"
  acc=table3_${model}_accept
  table3_run "$model" $TRY_CONNS "$acc" --until-refused
  note=$T3_NOTE best=$acc
  accepted=$(python3 "$REPORT" get --json "$OUT/$acc.json" --key connected)
  if [ "${accepted:-0}" -gt 0 ] &&
     ! python3 "$REPORT" all-answered --json "$OUT/$acc.json" --conns "$accepted"; then
    # Accepted more than it could serve: the largest count whose connections
    # all get their answer, by bisection (lo holds, hi does not).
    lo=0 hi=$accepted best=
    while [ $((hi - lo)) -gt "$BISECT_TO" ] && [ $((hi - lo)) -gt 2 ]; do
      mid=$(((lo + hi) / 2))
      echo "eval:   table3: $model: $accepted accepted, not all answered; trying $mid (between $lo and $hi)" >&2
      if table3_run "$model" "$mid" "table3_${model}_$mid"; then
        lo=$mid best=table3_${model}_$mid
      else
        hi=$mid
      fi
    done
  fi
  python3 "$REPORT" mem --model "$model" --accept "$OUT/$acc" ${best:+--best "$OUT/$best"} \
    --log "$OUT/qemu_$acc.log" --note "$note" >> "$OUT/table3.csv"
done

e=$(($(date +%s) - START))
echo "elapsed_s=$e" >> "$OUT/machine.txt"
echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/machine.txt"
status=0
report || status=1
left=$(leftover_processes)
if [ -n "$left" ]; then
  echo "eval: processes left running (now stopped): $left" >&2
  kill_leftovers
  status=1
fi
echo "eval: done in $((e / 60))m$((e % 60))s; wrote $DOC" >&2
exit $status
