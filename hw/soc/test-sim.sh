#!/usr/bin/env bash
# make test-sim: Coral's user-space test programs on the simulated Rocket
# (LiteX SoC under Verilator, hw/soc). A boot costs tens of millions of
# simulated cycles (minutes of host time), so the SoC boots once to Coral's
# shell and the programs are typed into it one after another; sim.py marks
# each one's output in the log ("==== sim: <program>"). For each program:
# the PASS/FAIL lines it prints, the line that shows it ran to its end (demo
# programs), and its exit status (the shell prints only a non-zero one, and
# a program that never returns leaves no prompt). Then "N passed, N failed".
#
# Simulated time is the safety net (CORAL_SIM_MAX_CYCLES, core cycles), so a
# hang is caught the same way on any host.
# Called from hw/soc/soc.mk with SOC_SIM = the sim.py command line.
# SIM_PROGS overrides the program list; "prog,arg" runs "prog arg".
# SIM_KTESTS: kernel tests (test= pieces, comma-separated) run afterwards in
# a second boot (default below); SIM_KTESTS= (empty) skips them.
set -u
BUILD=${BUILD:-build}
LOGS=$BUILD/soc/test-logs
mkdir -p "$LOGS"
: "${SOC_SIM:?run through make test-sim}"
export CORAL_SIM_MAX_CYCLES=${CORAL_SIM_MAX_CYCLES:-1500000000}
export CORAL_SIM_PROGRESS_SECONDS=${CORAL_SIM_PROGRESS_SECONDS:-60}
# The whole of usertests alone (SIM_PROGS=usertests) takes about 345 M cycles,
# 100 minutes here: the default runs a subset of its sections.
PROGS=${SIM_PROGS:-"prodcons asyncread coptest asynctest usertests,basics,nosys,uintr,sleep,brk,pipe,malloc"}

passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
# The program's own "<prog>: PASS name" / "<prog>: FAIL name: why" lines,
# renamed "PASS sim/<prog>/name" and counted.
results() {   # results PROG LOG
  local out
  out=$(tr -d '\r' < "$2" | sed -n "s#^$1: \(PASS\|FAIL\) #\1 sim/$1/#p")
  [ -n "$out" ] || return 0
  echo "$out"
  passed=$((passed + $(grep -c '^PASS' <<< "$out")))
  failed=$((failed + $(grep -c '^FAIL' <<< "$out")))
}

# What each demo prints when it ran to the end (as in scripts/test.sh).
declare -A want=(
  [prodcons]="prodcons: produced 12, consumed 12"
  [asyncread]="(fast path, interrupts:"
)

log=$LOGS/session.log
start=$SECONDS
cmds=$(echo $PROGS | sed 's/ /; /g; s/,/ /g')
# shellcheck disable=SC2086 # SOC_SIM is a command line
$SOC_SIM --commands "$cmds" --log "$log" > "$LOGS/sim.log" 2>&1
status=$?

# One file per program: its part of the session log.
tr -d '\r' < "$log" | awk -v dir="$LOGS" '
  /^==== sim: / { out = dir "/" $3 ".log"; printf "" > out; next }
  out != "" { print >> out }'
for entry in $PROGS; do
  prog=${entry%%,*}
  plog=$LOGS/$prog.log
  if ! grep -q "^==== sim: ${entry//,/ }\$" "$log"; then
    fail "sim/$prog/run" "never started (see $log)"
    continue
  fi
  results "$prog" "$plog"
  if [ -n "${want[$prog]:-}" ]; then
    grep -qF "${want[$prog]}" "$plog" && pass "sim/$prog/output" ||
      fail "sim/$prog/output" "no \"${want[$prog]}\" (see $plog)"
  fi
  if grep -q "sh: $prog: exit status" "$plog"; then
    fail "sim/$prog/exit-status-0" "$(grep -m1 "sh: $prog: exit status" "$plog")"
  elif [ "$(tail -n 1 "$plog")" != '$ ' ]; then
    why="did not return to the shell"
    grep -q "cycle limit reached" "$LOGS/sim.log" && why="hung: cycle limit $CORAL_SIM_MAX_CYCLES reached"
    grep -q "PANIC" "$plog" && why="kernel panic: $(grep -m1 PANIC "$plog")"
    fail "sim/$prog/exit-status-0" "$why (see $plog)"
  else
    pass "sim/$prog/exit-status-0"
  fi
done
[ $status -eq 0 ] && pass "sim/session-ended-at-the-prompt" ||
  fail "sim/session-ended-at-the-prompt" "see $LOGS/sim.log"
grep -h '^\[sim\] \(end\|stopped\|cycle limit\)' "$LOGS/sim.log" | tail -1

# Kernel tests, in a boot of their own (SIM_KTESTS: the test= list, name
# pieces separated by commas; empty: none). The run ends at "KTEST DONE"
# (the SoC cannot power off). KTEST COST lines give each test's cycles.
# The default: the kernel tests that finish within about 60 M cycles here
# (docs/results/rtl.md; the others cost hundreds of millions to billions).
SIM_KTESTS=${SIM_KTESTS-ces_fifo_order,kernel_page_permissions,kmalloc_live_counts,palloc_counts,stale_cid,pingpong_no_lost,wake_before_block,fifo_within_priority,priority_order,smp_migrate,smp_steal_bound}
if [ -n "$SIM_KTESTS" ]; then
  klog=$LOGS/ktest.log
  # shellcheck disable=SC2086 # SOC_SIM is a command line
  $SOC_SIM --args "test=$SIM_KTESTS" --until "KTEST DONE" --log "$klog" > "$LOGS/ktest-sim.log" 2>&1
  out=$(tr -d '\r' < "$klog" | sed -n 's#^KTEST \(PASS\|FAIL\) #\1 sim/kernel/#p')
  [ -n "$out" ] && echo "$out"
  passed=$((passed + $(grep -c '^PASS' <<< "$out")))
  failed=$((failed + $(grep -c '^FAIL' <<< "$out")))
  if tr -d '\r' < "$klog" | grep -q "^KTEST DONE"; then
    tr -d '\r' < "$klog" | grep "^KTEST COST" | sed 's/^/  /'
  else
    fail "sim/kernel/run" "no KTEST DONE line (see $klog, $LOGS/ktest-sim.log)"
  fi
  grep -h '^\[sim\] \(end\|stopped\|cycle limit\)' "$LOGS/ktest-sim.log" | tail -1
fi
echo "time: $((SECONDS - start)) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
