#!/usr/bin/env bash
# make fuzz: longer runs of user/sysfuzz.c than make test's (which runs 32
# children of 300 calls from seed 1). One boot per configuration below, each
# with its own range of seeds; the table of what ended how goes to
# docs/results/sysfuzz-runs.md (OUT=), and the script fails if any boot had a
# FAIL line, a kernel panic, or did not end. Boots with threads (-t 4) race
# their calls, so they are not repeatable call for call (a failure there
# prints the command that repeats its child, which may or may not fail again).
#
#   CHILDREN=300 CALLS=600 bash scripts/fuzz.sh        (the defaults)
#   CONFIGS="2:emulated:1 2:native:4" bash scripts/fuzz.sh
#
# A configuration is HARTS:BACKEND:THREADS; native needs our QEMU (make qemu-n).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/qemu-lib.sh     # BUILD, QEMU, OPENSBI, coral_qemu
OUT=${OUT:-docs/results/sysfuzz-runs.md}
CHILDREN=${CHILDREN:-300}
CALLS=${CALLS:-600}
CONFIGS=${CONFIGS:-"1:emulated:1 2:emulated:1 4:emulated:1 2:native:1 1:emulated:4 2:emulated:4 4:native:4"}
QEMU_LIMIT=${QEMU_LIMIT:-3600}
logs=$BUILD/fuzz
mkdir -p "$logs" "$(dirname "$OUT")"

rows=()
bad=0
seed=100000
for cfg in $CONFIGS; do
  IFS=: read -r harts backend threads <<< "$cfg"
  log=$logs/smp$harts-$backend-t$threads.log
  q=$QEMU cpu=${QEMU_CPU:-}
  if [ "$backend" = native ]; then
    q=$BUILD/qemu-n/qemu-system-riscv64 cpu=rv64,n=on
    [ -x "$q" ] || { echo "fuzz: $cfg: no patched QEMU ($q; make qemu-n)"; bad=1; continue; }
  fi
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
