#!/usr/bin/env bash
# Tests of scripts/trace2json.py, the host side of the scheduler timeline, on
# fixed traces (no QEMU): tests/trace/prodcons.trace, a hand-made trace of
# prodcons on 2 harts, and broken copies of it; tests/trace/hello-dump.log, a
# real dump of the kernel's rings (one of which overflowed), and broken copies
# of it: records the ring overwrote must be reported as lost, a dump line the
# console dropped or damaged must fail --check, a dump cut off must be refused.
# (tests/trace/test-ktrace.sh traces the kernel itself, under QEMU.) The output must be valid JSON
# whose begin/end events nest and whose timestamps never go back, per hart
# (checked here, independently of the converter's own --check); prodcons's
# consumer and producer must alternate; records a wrapped buffer lost, and a
# clock that goes back, must be repaired and counted; a malformed line must be
# refused; and, with gnuplot installed, the PNG must render.
#
#   tests/trace/test-trace.sh     (BUILD=build; output in $BUILD/test-trace/)
#
# Prints "PASS trace/<name>" or "FAIL trace/<name>: why".
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
OUT=$BUILD/test-trace
rm -rf "$OUT"
mkdir -p "$OUT"
CONV=scripts/trace2json.py
FIX=tests/trace/prodcons.trace

pass() { echo "PASS trace/$1"; }
fail() { echo "FAIL trace/$1: $2"; }
result() { if [ -z "$2" ]; then pass "$1"; else fail "$1" "$2"; fi; }

# verify JSON [--alternation]: problems with a converted trace, one line each
# (tests/trace/verify.py, shared with tests/trace/test-ktrace.sh).
verify() { python3 tests/trace/verify.py "$@"; }

# ---- the prodcons trace ----
python3 "$CONV" "$FIX" -o "$OUT/prodcons.json" 2> "$OUT/prodcons.err"
rc=$?
why=
[ $rc -eq 0 ] || why="exit status $rc: $(cat "$OUT/prodcons.err")"
grep -q "repaired" "$OUT/prodcons.err" && why="a clean trace needed repairs: $(cat "$OUT/prodcons.err")"
result convert "$why"
result nests-and-ordered "$(verify "$OUT/prodcons.json" | head -3 | tr '\n' ';')"
result prodcons-alternates "$(verify "$OUT/prodcons.json" --alternation | grep alternation)"
why=$(python3 - "$OUT/prodcons.json" << 'PYEOF'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
kinds = {e["ph"] for e in ev}
if names != {"hart 0", "hart 1"}:
    print("thread names %s" % names)
if not {"B", "E", "i", "b", "e"} <= kinds:
    print("event kinds %s" % kinds)
PYEOF
)
result event-kinds "$why"

# ---- a wrapped buffer: the first records are lost, and a clock goes back ----
awk '/^T / { n++; if (n <= 3) next } { print }' "$FIX" > "$OUT/wrapped.trace"
echo "T 1 1200 irq kind=dev irq=8" >> "$OUT/wrapped.trace"   # before hart 1's last time
python3 "$CONV" "$OUT/wrapped.trace" -o "$OUT/wrapped.json" --check 2> "$OUT/wrapped.err"
rc=$?
why=
if [ $rc -ne 0 ]; then
  why="exit status $rc: $(cat "$OUT/wrapped.err")"
elif ! grep -q "end_without_run" "$OUT/wrapped.err" || ! grep -q "time_went_back" "$OUT/wrapped.err"; then
  why="repairs not reported: $(cat "$OUT/wrapped.err")"
else
  why=$(verify "$OUT/wrapped.json" | head -3 | tr '\n' ';')
fi
result wrapped-repaired "$why"

# ---- a malformed event is refused, with its line number ----
printf 'TRACE timebase=10000000\nT 0 100 run cid=1 prio=0 who=kernel\nT 0 200 fly cid=1\n' > "$OUT/bad.trace"
python3 "$CONV" "$OUT/bad.trace" -o "$OUT/bad.json" 2> "$OUT/bad.err"
rc=$?
why=
[ $rc -eq 2 ] && grep -q "line 3" "$OUT/bad.err" || why="exit status $rc: $(cat "$OUT/bad.err")"
result refuses-bad-line "$why"

# ---- the kernel's dump: lost records reported, the rest intact ----
DUMP=tests/trace/hello-dump.log
python3 "$CONV" "$DUMP" -o "$OUT/dump.json" --check 2> "$OUT/dump.err"
rc=$?
why=
if [ $rc -ne 0 ]; then
  why="exit status $rc: $(cat "$OUT/dump.err")"
elif ! grep -q "hart 1: 60 records written, 16 kept, 44 lost (ring overflow), 0 missing" "$OUT/dump.err"; then
  why="the overflow is not reported: $(cat "$OUT/dump.err")"
else
  why=$(verify "$OUT/dump.json" | head -3 | tr '\n' ';')
  [ -n "$why" ] || why=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["otherData"]["dump"]["harts"]
if d["1"]["lost"] != 44 or d["1"]["missing"] or d["0"]["lost"]:
    print("otherData.dump: %s" % d)' "$OUT/dump.json")
fi
result dump-overflow-reported "$why"

# broken NAME STATUS TEXT [--check]: converting $OUT/NAME.log must end with
# STATUS and say TEXT (a broken dump is never taken as a good one).
broken() {
  local name=$1 want=$2 text=$3
  shift 3
  python3 "$CONV" "$OUT/$name.log" -o "$OUT/$name.json" "$@" 2> "$OUT/$name.err"
  local rc=$?
  [ $rc -eq "$want" ] && grep -q "$text" "$OUT/$name.err" || echo "exit status $rc: $(cat "$OUT/$name.err")"
}
# a line the console dropped: its 3 records are missing, and --check fails
awk '/^TD 1 / && !done { done = 1; next } { print }' "$DUMP" > "$OUT/dropped.log"
result dump-dropped-line-fails-check "$(broken dropped 1 "hart 1: 3 records missing from the dump" --check)"
# a damaged line (cut short) is unreadable, and --check fails
awk '/^TD 1 / && !done { done = 1; print substr($0, 1, 40); next } { print }' "$DUMP" > "$OUT/damaged.log"
result dump-damaged-line-fails-check "$(broken damaged 1 "1 dump lines unreadable" --check)"
# a dump without its end is refused
grep -v "^TRACE-END" "$DUMP" > "$OUT/cut.log"
result dump-cut-off-refused "$(broken cut 2 "cut off")"

# ---- the timeline ----
if command -v gnuplot > /dev/null; then
  python3 "$CONV" "$FIX" -o "$OUT/png.json" --png "$OUT/prodcons.png" 2> "$OUT/png.err"
  rc=$?
  why=
  if [ $rc -ne 0 ] || [ ! -s "$OUT/prodcons.png" ] ||
     [ "$(head -c 4 "$OUT/prodcons.png" | tail -c 3)" != PNG ]; then
    why="exit status $rc, no PNG: $(cat "$OUT/png.err")"
  fi
  result png "$why"
fi
exit 0
