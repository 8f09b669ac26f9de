#!/usr/bin/env bash
# What do idle connections cost the guest, per second and per tick of lwIP's
# TCP timers, and what do they do to the active ones' latency? Everything
# under QEMU -icount shift=0,sleep=off (one instruction is one nanosecond of
# guest time, and idle time is skipped), on one hart, over loopback, so every
# figure depends on the guest alone: the same on any host, on every run.
#
# For each N, burst (user/burst.c) starts matrixd and opens N connections
# (at most 16 setting up at once), each served one request, then held open
# and idle (-k):
#   1. twice with the insnprof plugin (scripts/host/insnprof.c), held for
#      HOLD and for 2*HOLD ms: the two address profiles are subtracted (set-up
#      and shutdown cancel), which leaves HOLD ms of N idle connections: guest
#      instructions a second (all of them: kernel, vDSO, user, OpenSBI), and
#      tcp_fasttmr's and tcp_slowtmr's calls and instructions a call (their
#      own; what they call, such as tcp_output, counts under its own name);
#   2. once more for ACTIVE_MS with 128 active connections beside the held
#      ones (-a 128), each sending a 15x15 request every 100 ms: their
#      latency in guest time (send to the end of the answer), p50/p99/max.
# Over loopback both ends are in the guest: N connections are 2N TCP control
# blocks (pcbs), and the active clients run on the same hart as the server.
#
#   scripts/profile-idle.sh [N ...]   (default 1 500 5000 10000; env HOLD=2000, ACTIVE_MS=10000, MEM=1G)
#   scripts/profile-idle.sh --compare [N ...]
#       also builds lwIP without net/patches/ (make BUILD=$BUILD/nopatch
#       LWIP_PATCHES=) and runs both; writes docs/results/conn-idle.md
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/qemu-lib.sh
HOLD=${HOLD:-2000}
ACTIVE_MS=${ACTIVE_MS:-10000}
MEM=${MEM:-1G}
compare=0
if [ "${1:-}" = --compare ]; then
  compare=1
  shift
fi
[ $# -gt 0 ] || set -- 1 500 5000 10000
plugin=$(build_insnprof)
out=$BUILD/profile-idle
mkdir -p "$out"

boot() {   # boot KERNEL LOG ARGS [PLUGIN-OUT]
  timeout 1800 qemu-system-riscv64 -machine virt -bios "$OPENSBI" -kernel "$1" -nographic -smp 1 -m "$MEM" \
    -global virtio-mmio.force-legacy=false -netdev user,id=net0 -device virtio-net-device,netdev=net0 \
    -icount shift=0,sleep=off ${4:+-plugin "$plugin,out=$4"} -append "nofile=16384 $3" < /dev/null > "$2" 2>&1 || true
}

# measure KERNEL TAG LABEL N: one table row (TAG names the files, LABEL the row)
measure() {
  local kernel=$1 tag=$2 label=$3 n=$4 k log
  for k in 1 2; do
    log=$out/run-$tag-$n-$k.log
    boot "$kernel" "$log" "user=burst,-s,-r,16,-c,$((n + 64)),-k,$((k * HOLD)),$n,8080" "$out/prof-$tag-$n-$k.txt"
    tr -d '\r' < "$log" | grep -q "^burst: N=$n served $n refused 0 failed 0" ||
      { echo "profile-idle: N=$n run $k did not serve every connection; see $log" >&2; exit 1; }
  done
  log=$out/run-$tag-$n-active.log
  boot "$kernel" "$log" "user=burst,-s,-r,16,-c,$((n + 200)),-k,$ACTIVE_MS,-a,128,$n,8080"
  local active
  active=$(tr -d '\r' < "$log" | grep "^burst: active " || true)
  grep -q "^burst: PASS active-answers-right" <(tr -d '\r' < "$log") ||
    { echo "profile-idle: N=$n: the active connections failed; see $log" >&2; exit 1; }
  python3 - "$out/prof-$tag-$n-1.txt" "$out/prof-$tag-$n-2.txt" "$kernel" "$HOLD" "$n" "$label" "$active" <<'PY'
import bisect, re, subprocess, sys
p1, p2, elf, hold, n, tag, active = sys.argv[1:8]
hold, n = int(hold), int(n)
def load(path):
    d = {}
    for line in open(path):
        a, c = line.split()
        d[int(a, 16)] = int(c)
    return d
syms = []
for line in subprocess.run(["nm", "-n", elf], capture_output=True, text=True, check=True).stdout.splitlines():
    f = line.split()
    if len(f) == 3 and f[1] in "tTwW":
        syms.append((int(f[0], 16), f[2]))
addrs = [a for a, _ in syms]
names = [s for _, s in syms]
a, b = load(p1), load(p2)
total = 0
own, calls = {}, {}
for addr in set(a) | set(b):
    d = b.get(addr, 0) - a.get(addr, 0)
    total += d
    if addr >= addrs[0]:
        i = bisect.bisect_right(addrs, addr) - 1
        own[names[i]] = own.get(names[i], 0) + d
        if addrs[i] == addr:
            calls[names[i]] = calls.get(names[i], 0) + d
def per(fn):
    c = calls.get(fn, 0)
    return f"{own.get(fn, 0) / c:,.0f} ({c} calls)" if c else "-"
lat = dict(re.findall(r"(p50_us|p99_us|max_us|max_sent_at_ms)=(\d+)", active))
print(f"| {tag} | {n:,} | {2 * n:,} | {total * 1000 / hold:,.0f} | {per('tcp_fasttmr')} | {per('tcp_slowtmr')} "
      f"| {lat.get('p50_us', '?')} | {lat.get('p99_us', '?')} | {lat.get('max_us', '?')} (at {lat.get('max_sent_at_ms', '?')} ms) |")
PY
}

header() {
  echo "| lwIP | idle connections | pcbs | guest instructions a second, idle | a tcp_fasttmr tick | a tcp_slowtmr tick | active p50 µs | active p99 µs | active max µs (sent at) |"
  echo "|---|---|---|---|---|---|---|---|---|"
}

if [ $compare = 0 ]; then
  header
  for n in "$@"; do measure "$BUILD/kernel.elf" patched "with net/patches" "$n"; done
  exit 0
fi

make -s all > "$out/build.log" 2>&1 || { echo "profile-idle: build failed ($out/build.log)" >&2; exit 1; }
make -s BUILD="$BUILD/nopatch" LWIP_PATCHES= all > "$out/build-nopatch.log" 2>&1 ||
  { echo "profile-idle: the build without net/patches failed ($out/build-nopatch.log)" >&2; exit 1; }
rows=$(header
  for n in "$@"; do
    measure "$BUILD/nopatch/kernel.elf" nopatch Debian "$n"
    measure "$BUILD/kernel.elf" patched "with net/patches" "$n"
  done)
echo "$rows"
cat > docs/results/conn-idle.md <<EOF
# What idle connections cost, in guest instructions (scripts/profile-idle.sh)

Generated by \`scripts/profile-idle.sh --compare\` on $(date -u +%Y-%m-%d), under QEMU
\`-icount shift=0,sleep=off\` on one hart: one instruction is one nanosecond of
guest time and idle time is skipped, so every figure here depends on the guest
alone, the same on any host and on every run. burst (user/burst.c) starts
matrixd (KCUC) and opens the idle connections over loopback, each served one
request and then held open: both ends are in the guest, so N connections are
2N TCP control blocks (pcbs). "Debian" is lwIP 2.1.3 as Debian ships it,
"with net/patches" is with our patch to its TCP timers
([net/patches/README.md](../../net/patches/README.md)).

- **guest instructions a second, idle**: everything the guest executes
  (kernel, vDSO, user, OpenSBI) during ${HOLD} ms of the connections held idle,
  per second: two runs held ${HOLD} and $((2 * HOLD)) ms, profiles subtracted.
- **a tcp_fasttmr / tcp_slowtmr tick**: those functions' own instructions a
  call in the same interval (every 250 and 500 ms).
- **active**: another run, with 128 more connections beside the idle ones,
  each sending a 15x15 request every 100 ms for $((ACTIVE_MS / 1000)) s (guest time), every answer
  checked; latency from the send to the end of the answer, in guest
  microseconds. The clients run on the server's hart. They all connect
  before the first request; the slowest request and when it was sent (from
  the first request) are in the last column: at 0 ms it is one of the
  first, sent while matrixd was still taking the new connections in.

$rows

Through a tap device, from the host (make bench-conn NET=tap), the same
server beside 10,000 idle connections: docs/results/conn-tap.md.
EOF
echo "profile-idle: wrote docs/results/conn-idle.md" >&2
