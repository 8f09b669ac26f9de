#!/usr/bin/env python3
"""Symbolize and subtract two insnprof profiles (see scripts/profile.sh).

usage: profile-report.py PROF1 PROF2 PER KERNEL.elf VDSO.elf USER.elf

PROF2 ran the scenario twice as often as PROF1; PROF2 - PROF1 is the cost of
the extra repetitions, printed per repetition (divided by PER) by function,
grouped by where the code runs, with calls per repetition (how often the
function's first instruction ran); then the fences and atomics (AMOs, SCs)
among them, by function. Addresses below the kernel's image and above
0x80000000 are OpenSBI's (M-mode firmware, no symbols here).
"""
import bisect
import re
import subprocess
import sys


def load(path):
    counts = {}
    with open(path) as f:
        for line in f:
            a, n = line.split()
            counts[int(a, 16)] = int(n)
    return counts


class Image:
    def __init__(self, name, elf):
        self.name = name
        syms = []
        out = subprocess.run(["nm", "-n", elf], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "tTwW" and not parts[2].startswith("$"):
                syms.append((int(parts[0], 16), parts[2]))
        self.addrs = [a for a, _ in syms]
        self.names = [n for _, n in syms]
        self.lo = self.addrs[0] if syms else 0
        self.hi = self.addrs[-1] + 0x10000 if syms else 0
        self.elf = elf
        self.mn = None

    def mnemonics(self, elf):
        """Address -> mnemonic, from the image's disassembly (read once, on demand)."""
        if self.mn is None:
            self.mn = {}
            out = subprocess.run(["riscv64-unknown-elf-objdump", "-d", elf],
                                 capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                m = re.match(r"\s*([0-9a-f]+):\s+[0-9a-f]+\s+(\S+)", line)
                if m:
                    self.mn[int(m.group(1), 16)] = m.group(2)
        return self.mn

    def lookup(self, addr):
        i = bisect.bisect_right(self.addrs, addr) - 1
        return self.names[i] if i >= 0 else "?"

    def is_entry(self, addr):
        i = bisect.bisect_left(self.addrs, addr)
        return i < len(self.addrs) and self.addrs[i] == addr


def main():
    p1, p2, per = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
    kernel = Image("kernel", sys.argv[4])
    vdso = Image("vdso", sys.argv[5])
    user = Image("user", sys.argv[6])
    funcs, groups, calls = {}, {}, {}
    fences, atomics = {}, {}      # by function: executions of fence / amo* and sc.*
    for addr in set(p1) | set(p2):
        d = p2.get(addr, 0) - p1.get(addr, 0)
        if d == 0:
            continue
        if addr >= kernel.lo:
            key = ("kernel", kernel.lookup(addr))
        elif addr >= 0x80000000:
            key = ("opensbi", "(M-mode firmware)")
        elif vdso.lo <= addr < vdso.hi:
            key = ("vdso", vdso.lookup(addr))
        else:
            key = ("user", user.lookup(addr))
        funcs[key] = funcs.get(key, 0) + d
        image = {"kernel": kernel, "vdso": vdso, "user": user}.get(key[0])
        if image and image.is_entry(addr):     # executions of the first instruction: calls
            calls[key] = calls.get(key, 0) + d
        groups[key[0]] = groups.get(key[0], 0) + d
        mn = image.mnemonics(image.elf).get(addr, "") if image else ""
        if mn.startswith("fence") and mn != "fence.i":
            fences[key] = fences.get(key, 0) + d
        elif mn.startswith("amo") or mn.startswith("sc."):
            atomics[key] = atomics.get(key, 0) + d
    total = sum(groups.values())
    print(f"instructions per repetition: {total / per:.1f}")
    for g, n in sorted(groups.items(), key=lambda kv: -kv[1]):
        print(f"  {g:8s} {n / per:9.1f}")
    print()
    print(f"{'per rep':>9s} {'calls':>6s}  where    function")
    for key, n in sorted(funcs.items(), key=lambda kv: -kv[1]):
        if abs(n / per) >= 0.5:
            c = calls.get(key, 0) / per
            print(f"{n / per:9.1f} {c:6.1f}  {key[0]:8s} {key[1]}")
    # Fences and atomics: with more than one vCPU QEMU makes each a host
    # barrier or a helper call, far dearer than a plain instruction
    # (user/fencecost.c, docs/results/light-stalls.md).
    print()
    print(f"fences per repetition: {sum(fences.values()) / per:.1f}; "
          f"atomics (AMOs and SCs): {sum(atomics.values()) / per:.1f}")
    print(f"{'fences':>9s} {'atomics':>8s}  where    function")
    for key in sorted(set(fences) | set(atomics), key=lambda k: -(fences.get(k, 0) + atomics.get(k, 0))):
        f, a = fences.get(key, 0) / per, atomics.get(key, 0) / per
        if f + a >= 2:
            print(f"{f:9.1f} {a:8.1f}  {key[0]:8s} {key[1]}")


if __name__ == "__main__":
    main()
