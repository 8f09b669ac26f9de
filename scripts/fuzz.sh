#!/usr/bin/env bash
# make fuzz: longer fuzz runs than make test's, in two parts (PARTS="sys frames").
#
# sys: user/sysfuzz.c (make test runs 32 children of 300 calls from seed 1).
# One boot per configuration below, each with its own range of seeds; the
# table of what ended how goes to docs/results/sysfuzz-runs.md (OUT=), and the
# script fails if any boot had a FAIL line, a kernel panic, or did not end.
# Boots with threads (-t 4) race their calls, so they are not repeatable call
# for call (a failure there prints the command that repeats its child, which
# may or may not fail again).
#
#   CHILDREN=300 CALLS=600 bash scripts/fuzz.sh        (the defaults)
#   CONFIGS="2:emulated:1 2:native:4" bash scripts/fuzz.sh
#
# A configuration is HARTS:BACKEND:THREADS; native needs our QEMU (make qemu-n).
#
# frames: tests/net/framefuzz.py against matrixd (make test sends 4,000 frames
# from seed 1 on 2 harts), FRAMES frames a boot, one boot per configuration
# HARTS:BACKEND:MODEL in FRAME_CONFIGS, each from its own seed, through
# scripts/nettest.sh (NET_PARTS=frames), so with all of its checks; the table
# goes to docs/results/framefuzz-runs.md (FRAMES_OUT=).
#
#   PARTS=frames FRAMES=50000 FRAME_CONFIGS="1:emulated:kcuc" bash scripts/fuzz.sh
#
# SEED (100000) and FRAMES_SEED (1000) are where the two parts' seeds start, so
# that a new campaign can try seeds no earlier one did.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/qemu-lib.sh     # BUILD, QEMU, OPENSBI, coral_qemu
OUT=${OUT:-docs/results/sysfuzz-runs.md}
CHILDREN=${CHILDREN:-300}
CALLS=${CALLS:-600}
CONFIGS=${CONFIGS:-"1:emulated:1 2:emulated:1 4:emulated:1 2:native:1 1:emulated:4 2:emulated:4 4:native:4"}
PARTS=${PARTS:-sys frames}
FRAMES_OUT=${FRAMES_OUT:-docs/results/framefuzz-runs.md}
FRAMES=${FRAMES:-30000}
FRAME_CONFIGS=${FRAME_CONFIGS:-"1:emulated:kcuc 2:emulated:kcuc 2:emulated:kcut 2:emulated:ktut 2:emulated:ktuc 4:emulated:kcuc 1:native:kcuc 2:native:ktuc"}
QEMU_LIMIT=${QEMU_LIMIT:-3600}
logs=$BUILD/fuzz
mkdir -p "$logs" "$(dirname "$OUT")" "$(dirname "$FRAMES_OUT")"
bad=0

# The QEMU and -cpu of a backend, in q and cpu; 1 if it is not built.
backend_qemu() {
  q=$QEMU cpu=${QEMU_CPU:-}
  if [ "$1" = native ]; then
    q=$BUILD/qemu-n/qemu-system-riscv64 cpu=rv64,n=on
    [ -x "$q" ] || { echo "fuzz: $1: no patched QEMU ($q; make qemu-n)"; return 1; }
  fi
}

frames_part() {
  local cfg harts backend model log out secs start sent verdict idle
  local rows=() seed=${FRAMES_SEED:-1000}
  for cfg in $FRAME_CONFIGS; do
    IFS=: read -r harts backend model <<< "$cfg"
    backend_qemu "$backend" || { bad=1; continue; }
    echo "fuzz: frames $cfg: $FRAMES frames from seed $seed ..."
    log=$logs/frames-smp$harts-$backend-$model
    start=$(date +%s)
    QEMU=$q QEMU_CPU=$cpu NET_LOGS=$log NET_PARTS=frames FRAMES=$FRAMES FRAMES_SEED=$seed \
      FRAMES_SMP=$harts bash scripts/nettest.sh "$model" > "$log.txt" 2>&1
    secs=$(( $(date +%s) - start ))
    sent=$(sed -n 's/^framefuzz: seed [0-9]*: \(.*\)/\1/p' "$log/net-$model-frames.fuzz.log" 2> /dev/null)
    idle=$(tr -d '\r' < "$log/net-$model-frames.log" 2> /dev/null | grep "^matrixd: idle " | tail -1 |
           sed 's/.* served=\([0-9]*\) conns=\([0-9]*\).*/\2 connections, \1 matrices answered/')
    if grep -q "^FAIL " "$log.txt" || ! grep -q "^PASS net/$model/frames/idle" "$log.txt"; then
      bad=1
      verdict="**failed**: $(grep "^FAIL " "$log.txt" | sed 's/^FAIL net\/[a-z]*\/frames\///; s/:.*//' | paste -sd, -) (see $log.txt)"
    else
      verdict="all $(grep -c "^PASS " "$log.txt") pass"
    fi
    echo "fuzz: frames $cfg: ${sent:-no summary} -> $verdict ($secs s)"
    rows+=("| $harts | $backend | $model | $seed | ${sent:--} | ${idle:--} | $verdict | $secs |")
    seed=$((seed + 1))
  done
  {
    echo "# framefuzz: longer runs"
    echo
    echo "Produced by \`make fuzz\` (scripts/fuzz.sh, its frames part) on $(date -u +%Y-%m-%d):"
    echo "one boot per row, matrixd in the model named, its network card wired to"
    echo "tests/net/framefuzz.py, $FRAMES malformed frames from the seed given, with"
    echo "scripts/nettest.sh's checks (the guest answering before, after every batch"
    echo "of 100 and after; an old and a new connection served; initial sequence"
    echo "numbers unrelated; no panic; kernel memory back at the baseline)."
    echo "\"Sent\" counts the script's frames (the fuzz, the probes, its own TCP"
    echo "segments), \"received\" the guest's. The connections matrixd served should"
    echo "be the script's two and those it opens for the fuzz to attack (one every"
    echo "second batch): more would mean the fuzz completed handshakes blind, by"
    echo "guessing the guest's initial sequence numbers. Matrices answered: the"
    echo "script's own requests, and whatever valid requests the fuzz's data formed."
    echo
    echo "| harts | backend | model | seed | frames | matrixd afterwards | checks | seconds |"
    echo "|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
  } > "$FRAMES_OUT"
  echo "fuzz: wrote $FRAMES_OUT"
}

[[ " $PARTS " == *" frames "* ]] && frames_part
[[ " $PARTS " == *" sys "* ]] || exit $bad

rows=()
seed=${SEED:-100000}
for cfg in $CONFIGS; do
  IFS=: read -r harts backend threads <<< "$cfg"
  log=$logs/smp$harts-$backend-t$threads.log
  backend_qemu "$backend" || { bad=1; continue; }
  echo "fuzz: $cfg: $CHILDREN children x $threads threads x $CALLS calls from seed $seed ..."
  start=$(date +%s)
  QEMU=$q QEMU_CPU=$cpu coral_qemu "$harts" 256M \
    "user=sysfuzz,-n,$CHILDREN,-k,$CALLS,-t,$threads,-s,$seed" < /dev/null > "$log" 2>&1
  secs=$(( $(date +%s) - start ))
  summary=$(tr -d '\r' < "$log" | grep -a '^sysfuzz: [0-9]* children' | tail -1)
  result=$(tr -d '\r' < "$log" | grep -a '^sysfuzz: [0-9]* passed, [0-9]* failed' | tail -1)
  fails=$(tr -d '\r' < "$log" | grep -a '^sysfuzz: FAIL' | sed 's/^sysfuzz: FAIL //; s/:.*//' | paste -sd, -)
  if tr -d '\r' < "$log" | grep -a -q "panic\|PANIC" || [ -z "$result" ] || [ -n "$fails" ]; then
    bad=1
    verdict="**failed**: ${fails:-no result, see $log}"
  else
    verdict="all pass"
  fi
  # "... : A ended as planned (...), W ended by the watchdog, O otherwise"
  planned=$(sed -n 's/.*: \([0-9]*\) ended as planned.*/\1/p' <<< "$summary")
  dog=$(sed -n 's/.*, \([0-9]*\) ended by the watchdog.*/\1/p' <<< "$summary")
  other=$(sed -n 's/.*, \([0-9]*\) otherwise.*/\1/p' <<< "$summary")
  echo "fuzz: $cfg: ${summary#sysfuzz: } -> $verdict ($secs s)"
  rows+=("| $harts | $backend | $CHILDREN x $threads x $CALLS | $seed | ${planned:--} | ${dog:--} | ${other:--} | $verdict | $secs |")
  seed=$((seed + 100000))
done

{
  echo "# sysfuzz: longer runs"
  echo
  echo "Produced by \`make fuzz\` (scripts/fuzz.sh) on $(date -u +%Y-%m-%d): one boot"
  echo "per row, 256 MiB, \`user/sysfuzz.c\` with CHILDREN children of THREADS"
  echo "threads making CALLS calls each, seeds counted from the one given."
  echo "docs/results/sysfuzz.md says what a child does and what is checked."
  echo
  echo "| harts | backend | children x threads x calls | seeds from | as planned | watchdog | otherwise | checks | seconds |"
  echo "|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} > "$OUT"
echo "fuzz: wrote $OUT"
exit $bad
