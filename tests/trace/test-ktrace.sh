#!/usr/bin/env bash
# The scheduler trace in the kernel (kernel/trace.c), under QEMU, converted by
# scripts/trace2json.py. Needs the kernel built (build/kernel.elf).
#   1. prodcons (user/prodcons.c) on 2 harts, traced from boot (bootarg
#      `trace`), under -icount: the dump converts to JSON whose slices nest and
#      whose time never goes back per hart (tests/trace/verify.py); no record
#      is lost or missing (the ring is far larger than the run); and the kernel
#      saw the consumer (priority 0) and the producer (priority 1) alternate:
#      the priority it read at each of prodcons's write calls, runs collapsed,
#      is 0 1 0 1 0 1 0, and there are as many writes at each priority as the
#      console shows consumer and producer lines.
#   2. the same with 16 records a hart: the rings overflow, and the dump and
#      the converter say how many records were lost; the rest still converts.
#   3. the monitor's commands (trace on N, trace, trace off, trace dump),
#      typed through the UART by scripts/console-drive.py.
# Every run waits for events (the program's end, the monitor's answers), never
# for a time. Prints "PASS ktrace/<name>" or "FAIL ktrace/<name>: why".
#
#   tests/trace/test-ktrace.sh    (BUILD=build, QEMU=...; logs in $BUILD/test-ktrace/)
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/qemu-lib.sh
OUT=$BUILD/test-ktrace
rm -rf "$OUT"
mkdir -p "$OUT"
CONV=scripts/trace2json.py
ELF=$BUILD/kernel.elf

pass() { echo "PASS ktrace/$1"; }
fail() { echo "FAIL ktrace/$1: $2"; }
result() { if [ -z "$2" ]; then pass "$1"; else fail "$1" "$2"; fi; }
icount() { QEMU_EXTRA="-icount shift=0,sleep=off" coral_qemu "$@" < /dev/null; }

# ---- 1. prodcons, traced from boot ----
log=$OUT/prodcons.log
icount 2 256M "trace user=prodcons" > "$log" 2>&1
rc=$?
why=
[ $rc -eq 0 ] && grep -q "prodcons: produced 12, consumed 12" "$log" || why="prodcons did not finish (status $rc, see $log)"
grep -q "^TRACE-END" "$log" || why="${why:-no complete dump at poweroff (see $log)}"
result prodcons-runs-traced "$why"

python3 "$CONV" "$log" -o "$OUT/prodcons.json" --elf "$ELF" --check 2> "$OUT/prodcons.err"
rc=$?
why=
[ $rc -eq 0 ] || why="exit status $rc: $(tr '\n' ';' < "$OUT/prodcons.err")"
[ -n "$why" ] || why=$(python3 tests/trace/verify.py "$OUT/prodcons.json" | head -3 | tr '\n' ';')
result prodcons-json-nests-and-ordered "$why"

why=$(python3 - "$OUT/prodcons.json" << 'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))["otherData"]["dump"]
# (A hart may have recorded nothing: kco_wake's wake-affine rule keeps a
# light program's coroutines on the hart that wakes them, so prodcons may
# run on one hart alone. Every hart's dump must still be whole.)
for h, i in sorted(d["harts"].items()):
    if i["lost"] or i["missing"] or i["kept"] != i["written"]:
        print("hart %s: %s" % (h, i))
if not any(i["written"] for i in d["harts"].values()):
    print("no hart recorded anything: %s" % d["harts"])
if d["bad_lines"]:
    print("%d bad lines" % d["bad_lines"])
PYEOF
)
result prodcons-no-record-lost "$why"

why=$(python3 - "$OUT/prodcons.json" "$log" << 'PYEOF'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
# prodcons is the process that writes "prodcons: ..." last; its pid is the
# one whose write calls the kernel saw most often at priorities 0 and 1.
writes = [e["args"] for e in ev if e["ph"] == "i" and e["name"] == "syscall write"]
pids = {}
for a in writes:
    if a["prio"] in ("0", "1"):
        pids[a["pid"]] = pids.get(a["pid"], 0) + 1
if not pids:
    print("no write calls at priority 0 or 1 in the trace")
    sys.exit()
pid = max(pids, key=pids.get)
prios = [a["prio"] for a in writes if a["pid"] == pid and a["prio"] in ("0", "1")]
runs = [p for i, p in enumerate(prios) if i == 0 or prios[i - 1] != p]
if runs != ["0", "1", "0", "1", "0", "1", "0"]:
    print("pid %s: priorities of its writes, runs collapsed: %s (want 0 1 0 1 0 1 0)"
          % (pid, " ".join(runs)))
log = open(sys.argv[2], errors="replace").read().splitlines()
consumer = sum(1 for l in log if l.startswith("consumer:"))
producer = sum(1 for l in log if l.startswith("producer:"))
if (prios.count("0"), prios.count("1")) != (consumer, producer):
    print("writes at priority 0/1: %d/%d, console lines consumer/producer: %d/%d"
          % (prios.count("0"), prios.count("1"), consumer, producer))
PYEOF
)
result prodcons-consumer-and-producer-alternate "$why"

# ---- 2. overflow: counted, reported, and the rest intact ----
log=$OUT/overflow.log
icount 2 256M "trace=16 user=prodcons" > "$log" 2>&1
python3 "$CONV" "$log" -o "$OUT/overflow.json" --check 2> "$OUT/overflow.err"
rc=$?
why=
if [ $rc -ne 0 ]; then
  why="exit status $rc: $(tr '\n' ';' < "$OUT/overflow.err")"
elif ! grep -Eq "^TRACE-HART [0-9]+ written=[0-9]+ kept=16 lost=[1-9]" "$log"; then
  why="the dump reports no loss (see $log)"
elif ! grep -Eq "16 kept, [1-9][0-9]* lost \(ring overflow\), 0 missing" "$OUT/overflow.err"; then
  why="the converter reports no loss: $(tr '\n' ';' < "$OUT/overflow.err")"
else
  why=$(python3 tests/trace/verify.py "$OUT/overflow.json" | head -3 | tr '\n' ';')
fi
result overflow-counted-and-reported "$why"

# ---- 3. the monitor's commands ----
log=$OUT/monitor.log
qemu_cmd 2 256M monitor
if python3 scripts/console-drive.py "$log" --timeout 120 --end exit \
     --expect "coral> " --send 'trace\r' --expect "trace: off, 0 records a hart" \
     --expect "coral> " --send 'trace on 1024\r' --expect "trace: on" \
     --expect "coral> " --send 'sleep 30\r' --expect "slept 30 ms" \
     --expect "coral> " --send 'trace off\r' --expect "trace: off" \
     --expect "coral> " --send 'trace\r' --expect "hart 0: written" \
     --expect "coral> " --send 'trace bogus\r' --expect "usage: trace" \
     --expect "coral> " --send 'trace dump\r' --expect "TRACE-END" \
     --expect "coral> " --send 'poweroff\r' --expect "bye" \
     -- "${QEMU_CMD[@]}" 2> "$log.why"; then
  python3 "$CONV" "$log" -o "$OUT/monitor.json" --elf "$ELF" --check 2> "$OUT/monitor.err"
  rc=$?
  why=
  [ $rc -eq 0 ] || why="exit status $rc: $(tr '\n' ';' < "$OUT/monitor.err")"
  # the monitor slept on a timer: its coroutine ran, and timer interrupts came
  [ -n "$why" ] || why=$(python3 - "$OUT/monitor.json" << 'PYEOF'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
if not any(e["ph"] == "B" and e["name"].startswith("monitor_main") for e in ev):
    print("no monitor_main slice")
if not any(e["ph"] == "i" and e["name"] == "irq timer" for e in ev):
    print("no timer interrupt")
PYEOF
)
else
  why="$(cat "$log.why") (see $log)"
fi
result monitor-commands "$why"
exit 0
