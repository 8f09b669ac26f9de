#!/usr/bin/env bash
# Tests of scripts/eval-report.py, the data side of `make eval`, on a small
# fixed fixture (tests/eval/fixture/: a QUICK run's results cut down, plus a
# point QEMU did not run): no QEMU, no timing. Checks that the report has every
# section, that a point not held says why (refused with matrixd's limit, late,
# not run) and no Figure 5 cell is blank, the p99 ratio of Figure 6, the
# per-connection memory of Table 3, and, if gnuplot is installed, that the
# three figures render.
#
#   tests/eval/test-eval-report.sh     (BUILD=build; output in $BUILD/test-eval/)
#
# Prints "PASS eval/<name>" or "FAIL eval/<name>: why".
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
OUT=$BUILD/test-eval
FIX=tests/eval/fixture
rm -rf "$OUT"
mkdir -p "$OUT"
cp "$FIX"/* "$OUT/"
DOC=$OUT/doc/eval.md
mkdir -p "$(dirname "$DOC")"

pass() { echo "PASS eval/$1"; }
fail() { echo "FAIL eval/$1: $2"; }
# has NAME TEXT: the report contains TEXT (a fixed string).
has() {
  if grep -qF -- "$2" "$DOC"; then pass "$1"; else fail "$1" "no '$2' in $DOC"; fi
}

plots=--no-plots
command -v gnuplot > /dev/null && plots=
if ! python3 scripts/eval-report.py report --dir "$OUT" --doc "$DOC" --quick 1 $plots \
     > "$OUT/report.log" 2>&1; then
  fail report "exit status $? (see $OUT/report.log)"
  exit 0
fi
pass report

missing=
for h in "## Figure 5" "## Saturation" "## Figure 6" "## Figure 7" "## Table 3"; do
  grep -q "^$h" "$DOC" || missing="$missing '$h'"
done
if [ -z "$missing" ]; then pass sections; else fail sections "missing$missing"; fi

has machine "QEMU 7.2.22 (fixture)"
has refused-says-why "refused 86"
has late-says-why "late: 19% of offered"
has not-run-says-why "not run: QEMU was not running"
has errors-says-why "1200 (errors 3 (e.g. no answer within 10 s), late: 47% of offered)"
# Figure 5's rows: no empty cell ("| |") anywhere.
blank=$(sed -n '/^## Figure 5/,/^## Saturation/p' "$DOC" | grep '^| [0-9]' | grep -c '| *|')
if [ "$blank" = 0 ]; then pass no-blank-cells; else fail no-blank-cells "$blank rows with an empty cell"; fi
has prio-ratio "p99(prio 0) / p99(prio 7): closed loop on 1 hart: 0.0497"
has summary "| Figure 6 | under limited resources higher priorities get higher throughput"
has table3-memory "| KCUC | 653 | memory: 0 pages left in the pool | 17, 636 closed by the server | 606 | 58.7 KiB |"
has table3-ktut-limit "| KTUT | 170 | matrixd's limit: 170 connections of 3 threads each |"
has claims "*Paper: with few connections KTUC (the polling kernel thread) has the lowest latency.* **Not measured in this run.**"

if [ -z "$plots" ]; then
  bad=
  for f in eval-fig5 eval-fig6 eval-fig7; do
    png=$(dirname "$DOC")/$f.png
    [ -s "$png" ] && [ "$(head -c 4 "$png" | tail -c 3)" = PNG ] || bad="$bad $f"
  done
  if [ -z "$bad" ]; then pass plots; else fail plots "no PNG for$bad (see $OUT/report.log)"; fi
fi
exit 0
