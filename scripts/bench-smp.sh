#!/usr/bin/env bash
# make bench-smp: SMP benchmarks; writes docs/results/smp.md.
#   1. The CES paper's mutex microbenchmark (tests/kernel/bench_smp.c, bootargs
#      "benchsmp"): a spinlock, a FIFO hand-off mutex and the CES mutex at
#      -smp 1, 2 and 4, WITHOUT -icount (under -icount QEMU runs all harts
#      round robin on one host thread, so no parallel speed could show). Each
#      point boots BOOTS times and each boot runs every lock 3 times,
#      interleaved; the table gives the median in operations per second and
#      the ratio to the spinlock of the same hart count.
#   2. matrixd at -smp 1 and 2, in all four models (scripts/bench-smp-net.sh,
#      which writes docs/results/smp-matrixd.md; its table is copied here).
#   3. Issue 13's closed loop (KCUC, 128 connections) at -smp 1 and 2 on QEMU's
#      user network and, as root, on a tap device too, the four boots of a
#      round interleaved (scripts/bench-light.sh LOAD=closed, which writes
#      docs/results/smp-closed.md; its requests-a-second table is copied here).
#   4. Issue 13's light load (KCUC, 64 connections at 100 ms) the same way
#      (bench-light.sh, docs/results/smp-light.md; its pooled p99 table is
#      copied here), with one more configuration: two vCPUs, one hart in use
#      (2v1h). Both copy bench-light's table of where the host's cores
#      went. Steps 3 and 4 boot Linux 6.1 too, in the same rounds
#      (scripts/linux/build.sh; LINUX=0 leaves it out): the general-purpose
#      kernel's two harts over one hart on the same host, beside Coral's.
#      Charts (gnuplot, installed by scripts/deps.sh --eval): the closed
#      loop's two harts over one hart per round (smp-closed.png) and the light
#      load's latency by percentile, a chart per network and OS
#      (smp-light*.png).
# Prints the BENCH lines as it goes. `scripts/bench-smp.sh --report` only
# rewrites smp.md from the last run's build/bench-smp.log.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/qemu-lib.sh     # BUILD, QEMU, OPENSBI, QEMU_LIMIT, coral_qemu
OUT=${OUT:-docs/results/smp.md}
BOOTS=${BOOTS:-5}
log=$BUILD/bench-smp.log
mkdir -p "$BUILD" "$(dirname "$OUT")"
report_only=0
[ "${1:-}" = "--report" ] && report_only=1
# The host's load before the first boot: the other jobs sharing its cores.
[ $report_only = 1 ] || echo "LOAD $(cut -d' ' -f1 /proc/loadavg)" > "$log"

for smp in 1 2 4; do
  [ $report_only = 1 ] && break
  for b in $(seq "$BOOTS"); do
    one=$BUILD/bench-smp-$smp-$b.log
    # CPU time over wall time of the whole boot: how many host cores QEMU got.
    TIMEFORMAT="%R %U %S"
    t=$( { time coral_qemu "$smp" 256M "benchsmp" < /dev/null > "$one" 2>&1 || true; } 2>&1 )
    echo "CORES smp$smp $(echo "$t" | awk '{ printf "%.2f", ($2 + $3) / $1 }')" >> "$log"
    if ! grep -q '^BENCH DONE' "$one"; then
      echo "bench-smp: the run at -smp $smp (boot $b) did not finish; see $one" >&2
      exit 1
    fi
    tr -d '\r' < "$one" | grep '^BENCH name=' | tee -a "$log"
  done
done

# ---- matrixd at -smp 1 and 2 (KCUC, KCUT, KTUT, KTUC) --------------------
# scripts/bench-smp-net.sh measures it and writes docs/results/smp-matrixd.md;
# its table is copied into smp.md below. (NET=0 skips the measurement and
# reuses the last smp-matrixd.md; so does --report.)
NET_OUT=docs/results/smp-matrixd.md
if [ $report_only = 0 ] && [ "${NET:-1}" = 1 ]; then
  OUT=$NET_OUT bash scripts/bench-smp-net.sh | tee -a "$log"
fi
# ---- 3. KCUC's closed loop, user network and tap, interleaved ------------
# (CLOSED=0 skips it and reuses the last smp-closed.md; so does --report.)
CLOSED_OUT=docs/results/smp-closed.md
LIGHT_OUT=docs/results/smp-light.md
configs="1h:1::user 2h:2::user"
# The Linux baseline (LINUX=0 leaves it out): the same loads served by Linux
# 6.1 with one mserver a hart (scripts/linux/build.sh), in the same rounds, so
# that its two harts over one hart can be set beside Coral's on the same host.
linux_configs=""
[ "${LINUX:-1}" = 1 ] && linux_configs=" 1h-linux:1::user::linux 2h-linux:2::user::linux"
if [ "$(id -u)" = 0 ]; then
  configs+=" 1h-tap:1::tap 2h-tap:2::tap"
  [ "${LINUX:-1}" = 1 ] && linux_configs+=" 1h-linux-tap:1::tap::linux 2h-linux-tap:2::tap::linux"
elif [ $report_only = 0 ]; then
  echo "bench-smp: not root, so issue 13's loads run on the user network only (a tap needs root)" >&2
fi
configs+=$linux_configs
# The light load also boots two vCPUs of which Coral uses one (bootargs
# harts=1, the other hart halted for good): the same kernel work as one
# hart, with QEMU in its several-vCPU mode. Its p99 over one hart's is the
# part of two harts' that the emulator takes whatever the kernel does.
light_configs=${configs/"2h:2::user"/"2h:2::user 2v1h:2:harts=1:user"}
if [ $report_only = 0 ] && ! command -v gnuplot > /dev/null; then
  bash scripts/deps.sh --eval > "$BUILD/bench-smp-deps.log" 2>&1 ||
    echo "bench-smp: gnuplot not installable, so no charts (see $BUILD/bench-smp-deps.log)" >&2
fi
# (NET here is bench-smp's switch for step 2; bench-light reads it as its default network.)
if [ $report_only = 0 ] && [ "${CLOSED:-1}" = 1 ]; then
  NET=user LOAD=closed ROUNDS=${CLOSED_ROUNDS:-8} MODEL=kcuc CONFIGS=$configs OUT=$CLOSED_OUT \
    RPS_PNG=${CLOSED_OUT%.md}.png RPS_LINE=1.7 RPS_LINE_TITLE="issue 13: 1.7" \
    bash scripts/bench-light.sh | tee -a "$log" ||
    echo "bench-smp: the closed loop did not get all its calm rounds; see $CLOSED_OUT" >&2
fi
# ---- 4. KCUC's light load, the same way (LIGHT=0 skips it) ----------------
if [ $report_only = 0 ] && [ "${LIGHT:-1}" = 1 ]; then
  NET=user LOAD=light ROUNDS=${LIGHT_ROUNDS:-8} MODEL=kcuc CONFIGS=$light_configs OUT=$LIGHT_OUT \
    PNG=${LIGHT_OUT%.md}.png bash scripts/bench-light.sh | tee -a "$log" ||
    echo "bench-smp: the light load did not get all its calm rounds; see $LIGHT_OUT" >&2
fi
# section FILE START: from the line that starts with START to the end of the
# first table after it (a heading, a blank line, the table and its blank line).
section() { awk -v s="$2" 'index($0, s) == 1 { on = 1 } on { print; if (/^\|/) t = 1; if (t && /^$/) exit }' "$1"; }
# issue13_rows FILE START NAME: START's section and the host's cores from
# FILE (a bench-light report), or say it was not measured.
issue13_rows() {
  if [ -f "$1" ]; then
    section "$1" "$2"
    grep '^!\[' "$1" | sed 's/$/\n/' || true   # its charts, beside smp.md
    section "$1" "Where the host's"
    local when
    when=$(sed -n 's/^Measured on \([0-9-]*\) .*/\1/p' "$1" | head -1)
    echo "From [$3]($3)${when:+, measured on $when}: its rounds, the host's steal in each, and more figures."
    echo "A configuration named -tap ran on a tap device (the host's own TCP stack),"
    echo "the others on QEMU's user network (slirp, in QEMU's main thread); each is"
    echo "divided by the one-hart configuration of its network (and of Linux, for Linux's)."
  else
    echo "(not measured: run scripts/bench-smp.sh)"
  fi
}

matrixd_rows() {
  if [ -f "$NET_OUT" ]; then
    sed -n '/^| model /,/^$/p' "$NET_OUT"
    echo "From [smp-matrixd.md](smp-matrixd.md), which says how it was measured and"
    echo "what the last two columns (host CPU of QEMU's threads) mean."
  else
    echo "(not measured: run scripts/bench-smp-net.sh)"
  fi
}

host_cpus=$(nproc)
qemu_version=$("$QEMU" --version | head -1 | sed 's/QEMU emulator version //')
load=$(sed -n 's/^LOAD //p' "$log")
python3 - "$log" "$OUT" "$BOOTS" "$host_cpus" "$qemu_version" "$load" "$(date -u +%Y-%m-%d)" \
  "$(matrixd_rows)" "$(issue13_rows "$CLOSED_OUT" "Requests a second, calm rounds" smp-closed.md)" \
  "$(issue13_rows "$LIGHT_OUT" "**Calm rounds**" smp-light.md)" <<'PY'
import re, statistics, sys, textwrap
log, out, boots, cpus, qver, load, day, mrows, crows, lrows = sys.argv[1:11]
vals = {}
cores = {}
for line in open(log):
    c = re.match(r"CORES smp(\d+) ([0-9.]+)", line)
    if c:
        cores.setdefault(int(c[1]), []).append(float(c[2]))
    m = re.match(r"BENCH name=(\w+)_smp(\d+) value=([0-9.]+) unit=(\S+)", line)
    if m:
        vals.setdefault((m[1], int(m[2])), []).append(float(m[3]))
med = {k: statistics.median(v) for k, v in vals.items()}
runs = {k: len(v) for k, v in vals.items()}
harts = [1, 2, 4]
locks = [("spin", "spinlock (kernel/spinlock.c)"),
         ("handoff", "FIFO hand-off mutex (ces_lock/ces_unlock)"),
         ("ces", "CES mutex (ces_run)")]
def ops(l, h):
    v = med.get((l, h))
    return f"{v / 1e6:.2f} M" if v else "n/a"
def ratio(l, h):
    v, s = med.get((l, h)), med.get(("spin", h))
    return f"{v / s:.2f}" if v and s else "n/a"
L = []
L.append("# SMP benchmarks")
L.append("")
L.append(textwrap.fill(
    f"Produced by `make bench-smp` (scripts/bench-smp.sh) on {day}: QEMU {qver}, "
    "machine virt, 256 MiB, **without** `-icount` (QEMU runs each hart on its own host "
    "thread; under `-icount` it would run them round robin on one, and no parallel "
    "speed could show). Time is guest time from the `time` CSR, which then follows the "
    f"host's clock. The host has **{cpus} cores**, shared with other jobs while this ran "
    f"(1-minute load average {load or '?'} just before it): `-smp 4` oversubscribes it, "
    "so its column is a correctness point, not a speed point, and every figure is noisy. "
    "Compare the ratios within one column, which were measured in the same boots, "
    "interleaved; do not compare absolute figures across runs or machines.", 84))
L.append("")
L.append("## Mutex microbenchmark (the CES paper's shape)")
L.append("")
L.append("tests/kernel/bench_smp.c: 16 stackful kernel coroutines each loop 32,000 times:")
L.append("a short critical section on shared data (a counter and three table slots, about")
L.append("30 instructions), then independent work (a 48-step xorshift chain, about 400")
L.append("instructions). Throughput is loop iterations per second of guest time. Each")
L.append(f"figure is the median of {runs.get(('ces', 1), 0)} runs ({boots} boots x 3 runs, the")
L.append("three locks interleaved within a boot).")
L.append("")
L.append("| lock | 1 hart ops/s | 2 harts ops/s | 4 harts ops/s | ratio to spinlock, 1 / 2 / 4 harts |")
L.append("|---|---:|---:|---:|---:|")
for l, name in locks:
    L.append(f"| {name} | {ops(l, 1)} | {ops(l, 2)} | {ops(l, 4)} | "
             f"{ratio(l, 1)} / {ratio(l, 2)} / {ratio(l, 4)} |")
def over(a, b):
    return " / ".join(f"{med[(a, h)] / med[(b, h)]:.2f}" if med.get((a, h)) and med.get((b, h))
                      else "n/a" for h in harts)
L.append("")
L.append(f"CES over the FIFO hand-off mutex (the paper's comparison), 1 / 2 / 4 harts:")
L.append(f"{over('ces', 'handoff')}. Each lock at 2 harts over itself at 1 hart: spinlock")
L.append(f"{med.get(('spin', 2), 0) / med.get(('spin', 1), 1):.2f}, hand-off "
         f"{med.get(('handoff', 2), 0) / med.get(('handoff', 1), 1):.2f}, CES "
         f"{med.get(('ces', 2), 0) / med.get(('ces', 1), 1):.2f}.")
def pct(key):
    return " / ".join(f"{med[(key, h)]:.1f} %" if (key, h) in med else "n/a" for h in harts)
L.append("")
got = " / ".join(f"{statistics.median(cores[h]):.2f}" if h in cores else "n/a" for h in harts)
L.append("Host cores QEMU actually got (its CPU time over the wall time of each boot,")
L.append(f"median; 1 / 2 / 4 harts): {got}. Below the hart count, harts took turns on")
L.append("fewer cores, and the 2- and 4-hart columns show less parallel speed than the")
L.append("code has.")
L.append("")
L.append("How often a request found the lock held and queued (median, 1 / 2 / 4 harts):")
L.append(f"hand-off mutex {pct('handoff_waited')}; CES mutex {pct('ces_waited')}, of which")
L.append(f"a combiner ran {pct('ces_combined')} of all requests for their coroutine.")
L.append("")
L.append("Reading the table:")
L.append("")
L.append("- At 1 hart no lock is ever contended (a coroutine never switches inside a")
L.append("  section), so the column compares uncontended paths: the spinlock masks and")
L.append("  unmasks interrupts, the CES mutex does one swap and one compare-and-swap.")
L.append("- The FIFO hand-off mutex is the CES paper's *dispatch scheduling*: each unlock")
L.append("  passes the lock to a waiter that must first be dispatched from the ready")
L.append("  queue, and the lock stays held meanwhile, so everyone who arrives in that time")
L.append("  blocks behind it (a convoy). This queuing delay is what CES removes; the paper")
L.append("  reports CES up to 8.1x over dispatch scheduling on 256 threads.")
L.append("- The CES mutex keeps contended sections on the holder's hart and sends only")
L.append("  the waiters' continuations through the ready queues: `ces_wake_elsewhere` is")
L.append("  `kco_wake_elsewhere`, which queues the requester in another hart's lane (an")
L.append("  idle one if there is one) and makes that its home.")
L.append("- When QEMU gets fewer host cores than harts (see above), harts mostly take")
L.append("  turns, and a CES request seldom finds the lock held, while the hand-off mutex,")
L.append("  once a convoy has formed, keeps it. When harts really run at once, a queued")
L.append("  CES request pays a block, a wake and a dispatch, which costs more than a")
L.append("  spinlock's spin over a 30-instruction section: expect CES to stay well ahead")
L.append("  of the hand-off mutex but not of the spinlock then.")
L.append("- The spinlock is a strong baseline here: the sections are short and a kernel")
L.append("  holder is never preempted inside one (interrupts are masked). With more harts")
L.append("  than host cores, though, QEMU's host threads are: a hart descheduled by the")
L.append("  host while it holds the spinlock leaves the others spinning.")
L.append("")
L.append("Raw BENCH lines: build/bench-smp.log.")
L.append("")
L.append("## matrixd at -smp 1 and 2")
L.append("")
L.append(mrows)
L.append("")
L.append("## Issue 13's closed loop: KCUC, 128 connections, -smp 2 over -smp 1")
L.append("")
L.append("Configurations named -linux (when present) boot Linux 6.1 instead of Coral, in the")
L.append("same rounds: Debian's source built by scripts/linux/build.sh (tinyconfig and")
L.append("scripts/linux/linux.config), serving the same client with one mserver a hart")
L.append("(scripts/host/mserver.c: one epoll loop on the same protocol engine as matrixd,")
L.append("all on one port with SO_REUSEPORT). They are the issue's general-purpose")
L.append("kernel on the same emulator and host, divided by Linux's own one-hart rate.")
L.append("")
L.append(crows)
L.append("")
L.append("## Issue 13's light load: KCUC, 64 connections at 100 ms, p99 at -smp 2 over -smp 1")
L.append("")
if "| 2v1h |" in lrows:
    L.append("`2v1h` boots two vCPUs of which Coral uses one (bootargs `harts=1`; the other")
    L.append("hart stays halted): one hart's kernel work with QEMU in its several-vCPU mode,")
    L.append("so its ratio is the share of two harts' that the emulator takes, whatever the")
    L.append("kernel does.")
    L.append("")
L.append(lrows)
L.append("")
open(out, "w").write("\n".join(L) + "\n")
PY
echo "bench-smp: wrote $OUT"
