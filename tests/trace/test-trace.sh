#!/usr/bin/env bash
# Tests of scripts/trace2json.py, the host side of the scheduler timeline, on
# fixed traces (no QEMU): tests/trace/prodcons.trace, a hand-made trace of
# prodcons on 2 harts, and broken copies of it. The output must be valid JSON
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

# verify JSON [alternation]: problems with a converted trace, one line each.
verify() {
  python3 - "$@" << 'PYEOF'
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except ValueError as e:
    print("not valid JSON: %s" % e)
    sys.exit(0)
stack, last, runs = {}, {}, []
for e in doc["traceEvents"]:
    if e["ph"] == "M":
        continue
    h, ts = e["tid"], e["ts"]
    if ts < last.get(h, ts):
        print("hart %s: %s at %s after %s" % (h, e["name"], ts, last[h]))
    last[h] = ts
    if e["ph"] == "B":
        stack.setdefault(h, []).append(e["name"])
        if h == 0 and e.get("cat") == "process" and not e["args"].get("resumed"):
            runs.append(e["name"])
    elif e["ph"] == "E":
        if not stack.get(h) or stack[h].pop() != e["name"]:
            print("hart %s: end of %s does not close the innermost slice" % (h, e["name"]))
for h, s in stack.items():
    if s:
        print("hart %s: %s never end" % (h, s))
if len(sys.argv) > 2:
    # prodcons: after main, the consumer (c2) and the producer (c3) take turns.
    work = [r for r in runs if r in ("pid 3 c2", "pid 3 c3")]
    if len(work) < 6 or any(a == b for a, b in zip(work, work[1:])):
        print("no alternation of consumer and producer: %s" % work)
PYEOF
}

# ---- the prodcons trace ----
python3 "$CONV" "$FIX" -o "$OUT/prodcons.json" 2> "$OUT/prodcons.err"
rc=$?
why=
[ $rc -eq 0 ] || why="exit status $rc: $(cat "$OUT/prodcons.err")"
grep -q "repaired" "$OUT/prodcons.err" && why="a clean trace needed repairs: $(cat "$OUT/prodcons.err")"
result convert "$why"
result nests-and-ordered "$(verify "$OUT/prodcons.json" | head -3 | tr '\n' ';')"
result prodcons-alternates "$(verify "$OUT/prodcons.json" alternation | grep alternation)"
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
