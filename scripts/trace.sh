#!/usr/bin/env bash
# make trace: a scheduler timeline of matrixd under load. Boots Coral on 2
# harts with matrixd (model KCUC, connections spread over priorities by their
# index: -P mod) and the console monitor beside it, turns the kernel's trace on
# from the monitor, runs the host client (8 connections, a request every 20 ms
# each, 4 priorities, 1 s), dumps the trace on the console and converts it:
#   build/trace/trace.json   Chrome trace-event JSON (Perfetto, chrome://tracing)
#   docs/results/trace.png   the busiest 1.5 ms, drawn by gnuplot
#   docs/results/trace.md    its "last run" block (the rest is written by hand)
# The time axis is the guest's time CSR, which QEMU takes from the host clock:
# slices include QEMU's device emulation and any time the host takes its
# threads away. Not -icount: QEMU then runs the harts in turn on one thread, and
# a hart spinning on a lock the other holds burns its whole turn (up to the
# next timer tick), which draws milliseconds that no hart spent
# (docs/results/trace.md). TRACE_QEMU_EXTRA adds QEMU options all the same.
# Console log, client output and the converter's report stay in build/trace/.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/qemu-lib.sh      # BUILD, QEMU, qemu_cmd, free_port
OUT=$BUILD/trace
DOC=${DOC:-docs/results/trace.md}
PNG=${PNG:-docs/results/trace.png}
RECORDS=${RECORDS:-65536}       # per hart: 2 MiB each, more than a second of this load
WINDOW=${WINDOW:-1500}          # microseconds drawn in the PNG
START=$SECONDS
say() { echo "trace: [$1/4] $2 ($((SECONDS - START)) s)" >&2; }

rm -rf "$OUT"
mkdir -p "$OUT"
say 1 "building the kernel and the client"
if ! make -s BUILD="$BUILD" all client > "$OUT/build.log" 2>&1; then
  echo "trace: the kernel or the client does not build (see $OUT/build.log)" >&2
  exit 1
fi
command -v gnuplot > /dev/null || bash scripts/deps.sh --eval > "$OUT/deps.log" 2>&1 ||
  echo "trace: gnuplot could not be installed (see $OUT/deps.log); no PNG" >&2

say 2 "booting matrixd on 2 harts, tracing it under the client for 1 s"
PORT=$(free_port)
QEMU_EXTRA=${TRACE_QEMU_EXTRA-} qemu_cmd 2 256M "user=matrixd,-P,mod monitor" "$PORT"
if ! python3 scripts/console-drive.py "$OUT/console.log" --timeout 300 --end exit \
     --expect "matrixd: baseline" --send '\r' --expect "coral> " \
     --send "trace on $RECORDS\\r" --expect "trace: on" \
     --run "$BUILD/host/mclient -p $PORT -c 8 -i 20 -d 1 --prio-mod 4 > $OUT/mclient.out 2>&1" \
     --send 'trace dump\r' --expect "TRACE-END" --expect "coral> " \
     --send 'poweroff\r' --expect "bye" -- "${QEMU_CMD[@]}" 2> "$OUT/drive.err"; then
  echo "trace: the run failed: $(cat "$OUT/drive.err") (see $OUT/console.log, $OUT/mclient.out)" >&2
  exit 1
fi
grep "^mclient: conns=" "$OUT/mclient.out" >&2

say 3 "converting the dump"
png_args=()
command -v gnuplot > /dev/null && png_args=(--png "$PNG" --window "busiest:$WINDOW")
python3 scripts/trace2json.py "$OUT/console.log" -o "$OUT/trace.json" --elf "$BUILD/kernel.elf" \
  --check "${png_args[@]}" 2> "$OUT/convert.err"
rc=$?
cat "$OUT/convert.err" >&2
[ $rc -eq 0 ] || { echo "trace: conversion failed" >&2; exit 1; }

say 4 "writing $DOC"
python3 - "$OUT/trace.json" "$OUT/mclient.out" "$DOC" "$("$QEMU" --version | head -1)" << 'PYEOF'
import collections, json, re, sys, time
doc = json.load(open(sys.argv[1]))
ev = [e for e in doc["traceEvents"] if e["ph"] != "M"]
busy, runs, stack = collections.Counter(), collections.Counter(), {}
for e in ev:
    if e["ph"] == "B":
        stack.setdefault(e["tid"], []).append(e)
    elif e["ph"] == "E" and stack.get(e["tid"]):
        b = stack[e["tid"]].pop()
        if not stack[e["tid"]]:               # outermost slices: time on the hart
            fn = b["args"].get("fn", b["name"].split()[0])
            busy[fn] += e["ts"] - b["ts"]
            runs[fn] += 1
kinds = collections.Counter(e["name"].split()[0] + (" " + e["name"].split()[1] if e["name"].startswith("irq") else "")
                            for e in ev if e["ph"] == "i" and e["name"] != "why")
span = max(e["ts"] for e in ev) - min(e["ts"] for e in ev)
dump = doc["otherData"]["dump"]["harts"]
client = [l for l in open(sys.argv[2]).read().splitlines() if l.startswith("mclient: conns=")]
lines = ["<!-- make trace: begin (scripts/trace.sh rewrites this block) -->",
         "Last run: %s, %s, 2 harts; %.0f ms traced." % (
             time.strftime("%Y-%m-%d", time.gmtime()), sys.argv[4].replace("QEMU emulator version ", "QEMU "),
             span / 1000),
         "",
         "| hart | records written | kept | lost (ring overflow) | missing |",
         "|---|---|---|---|---|"]
for h, i in sorted(dump.items(), key=lambda x: int(x[0])):
    lines.append("| %s | %d | %d | %d | %d |" % (h, i["written"], i["kept"], i["lost"], i["missing"]))
lines += ["", "Where the harts' time went (outermost slices, both harts together):", "",
          "| coroutine function | dispatches | time (ms) |", "|---|---|---|"]
for fn, t in busy.most_common(8):
    lines.append("| `%s` | %d | %.1f |" % (fn, runs[fn], t / 1000))
lines += ["", "Instant events: " + ", ".join("%s %d" % kv for kv in sorted(kinds.items())) + ".",
          "", "The client: `" + (client[-1] if client else "no summary line") + "`",
          "<!-- make trace: end -->"]
path = sys.argv[3]
try:
    text = open(path).read()
except OSError:
    text = "# The scheduler timeline\n\n<!-- make trace: begin -->\n<!-- make trace: end -->\n"
text = re.sub(r"<!-- make trace: begin.*?<!-- make trace: end -->", "\n".join(lines), text, flags=re.S)
open(path, "w").write(text)
PYEOF
echo "trace: done in $((SECONDS - START)) s: $OUT/trace.json (open it in ui.perfetto.dev or chrome://tracing), $PNG, $DOC" >&2
