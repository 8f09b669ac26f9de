#!/usr/bin/env bash
# What do idle connections cost the guest per second, and per tick of lwIP's
# TCP timers? For each N, boots burst (user/burst.c) with matrixd over
# loopback: N connections, each served one request, then held open and idle
# (-k) for HOLD and for 2*HOLD ms of guest time, under QEMU -icount
# shift=0,sleep=off with the insnprof plugin (scripts/host/insnprof.c). The
# two address profiles are subtracted (set-up, the burst and the shutdown
# cancel): what is left is HOLD ms of N idle connections. Over loopback both
# ends are in the guest, so N connections are 2N TCP control blocks (pcbs).
#
#   scripts/profile-idle.sh [N ...]        (default: 1 500 5000; env HOLD=2000, MEM=1G)
#   KERNEL=build-before/kernel.elf ...     another kernel (e.g. one built without net/patches)
#
# Prints, per N: guest instructions per second of idle time (all of them:
# kernel, vDSO, user, OpenSBI), and for tcp_fasttmr and tcp_slowtmr their
# calls and instructions per call (their own instructions; what they call,
# such as tcp_output, is counted under its own name).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/qemu-lib.sh
HOLD=${HOLD:-2000}
MEM=${MEM:-1G}
KERNEL=${KERNEL:-$BUILD/kernel.elf}
plugin=$(build_insnprof)
out=$BUILD/profile-idle
mkdir -p "$out"
[ $# -gt 0 ] || set -- 1 500 5000
printf '%8s %8s %16s %22s %22s\n' "idle" "pcbs" "insns/s idle" "tcp_fasttmr /call" "tcp_slowtmr /call"
for n in "$@"; do
  for k in 1 2; do
    hold=$((k * HOLD))
    timeout 1800 qemu-system-riscv64 -machine virt -bios "$OPENSBI" -kernel "$KERNEL" -nographic -smp 1 -m "$MEM" \
      -global virtio-mmio.force-legacy=false -netdev user,id=net0 -device virtio-net-device,netdev=net0 \
      -icount shift=0,sleep=off -plugin "$plugin,out=$out/prof-$n-$k.txt" \
      -append "nofile=16384 user=burst,-s,-r,16,-c,$((n + 64)),-k,$hold,$n,8080" < /dev/null > "$out/run-$n-$k.log" 2>&1 || true
    tr -d '\r' < "$out/run-$n-$k.log" | grep -q "^burst: N=$n served $n refused 0 failed 0" ||
      { echo "profile-idle: N=$n run $k did not serve every connection; see $out/run-$n-$k.log" >&2; exit 1; }
  done
  python3 - "$out/prof-$n-1.txt" "$out/prof-$n-2.txt" "$KERNEL" "$HOLD" "$n" <<'PY'
import bisect, subprocess, sys
p1, p2, elf, hold, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
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
    return f"{c:3d} x {own.get(fn, 0) / c:12,.0f}" if c else "  0 x            -"
print(f"{n:8d} {2 * n:8d} {total * 1000 / hold:16,.0f} {per('tcp_fasttmr'):>22s} {per('tcp_slowtmr'):>22s}")
PY
done
