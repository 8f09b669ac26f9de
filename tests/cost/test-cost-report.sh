#!/usr/bin/env bash
# Tests of scripts/cost-report.py, the data side of `make bench-cost`, on a
# fixed fixture (tests/cost/fixture/): a hand-made symbol table with one or two
# functions per category rule, and insnprof profiles of two models whose
# per-request counts are known (they were written as boot + K x per-request
# counts). No QEMU, no timing. Checks the BENCH figures, the table and the
# verdict, that boot-only addresses cancel, that a function no rule names is
# reported as unclassified, and, if gnuplot is installed, that the chart renders.
# Then the same checks on a planted fault (the multiply moved to another file)
# must fail: the test can tell a wrong mapping from a right one.
#
#   tests/cost/test-cost-report.sh     (BUILD=build; output in $BUILD/test-cost/)
#
# Prints "PASS cost/<name>" or "FAIL cost/<name>: why".
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
OUT=$BUILD/test-cost
FIX=tests/cost/fixture
rm -rf "$OUT"
mkdir -p "$OUT"

pass() { echo "PASS cost/$1"; }
fail() { echo "FAIL cost/$1: $2"; }

# report SYMBOLS NAME: run the report on the fixture's two models into $OUT/NAME.*
report() {
  local png=()
  command -v gnuplot > /dev/null && png=(--png "$OUT/$2.png")
  python3 scripts/cost-report.py report --symbols "$1" --doc "$OUT/$2.md" "${png[@]}" \
    "kcuc:$FIX/kcuc-4.prof:$FIX/kcuc-14.prof:10" "ktut:$FIX/ktut-4.prof:$FIX/ktut-14.prof:10" \
    > "$OUT/$2.out" 2> "$OUT/$2.err"
}

# check NAME: the figures the fixture was made from; prints the first mismatch
# and returns 1, or returns 0.
check() {
  local out=$OUT/$1.out doc=$OUT/$1.md line
  for line in "cost_kcuc_total value=6310" "cost_kcuc_matrix value=4000" "cost_kcuc_tcpip value=800" \
              "cost_kcuc_other value=1510" "cost_kcuc_other_over_matrix value=0.38" \
              "cost_ktut_other value=5510" "cost_ktut_other_over_matrix value=1.38"; do
    grep -qx "BENCH name=${line% *} ${line#* } unit=[a-z/]*" "$out" || { echo "no '$line' in $out"; return 1; }
  done
  for line in "| other: syscalls & sockets | 300 | 300 |" "| other: scheduling & locks | 200 | 200 |" \
              "| other: traps & interrupts | 350 | 350 |" "| other: copies & memory | 550 | 4,550 |" \
              "| other: matrixd glue | 70 | 70 |" "| other: unclassified | 40 | 40 |" \
              "| unclassified | \`fdt_walk\` | kernel | kernel/fdt.c | 40 |" \
              "Target (other < matrix work): KCUC met (1,510 against 4,000); KTUT missed (5,510 against 4,000)."; do
    grep -qxF -- "$line" "$doc" || { echo "no '$line' in $doc"; return 1; }
  done
  # Addresses whose counts are equal in both runs (boot) are in no row.
  if grep -q '`_entry`\|`exec_spawn`' "$doc"; then echo "boot-only functions in $doc"; return 1; fi
  return 0
}

if report "$FIX/symbols.tsv" good; then
  pass report
  if why=$(check good); then pass figures; else fail figures "$why"; fi
  if command -v gnuplot > /dev/null; then
    if [ -s "$OUT/good.png" ] && grep -q "(good.png)" "$OUT/good.md"; then pass chart; else
      fail chart "no $OUT/good.png or no link to it"; fi
  fi
else
  fail report "exit status $? (see $OUT/good.err)"
fi

# The planted fault: mp_square said to be defined in matrixd's glue. The
# matrix work shrinks by 3,000 and the checks above must notice.
sed 's#\tmp_square\tuser/matrix_proto\.c#\tmp_square\tuser/matrixd_core.c#' "$FIX/symbols.tsv" > "$OUT/planted.tsv"
if cmp -s "$FIX/symbols.tsv" "$OUT/planted.tsv"; then
  fail planted "the fault was not planted (fixture changed?)"
elif ! report "$OUT/planted.tsv" planted; then
  fail planted "the report failed on the planted fixture (see $OUT/planted.err)"
elif check planted > /dev/null; then
  fail planted "a wrong category mapping passed the checks"
else
  pass planted
fi
