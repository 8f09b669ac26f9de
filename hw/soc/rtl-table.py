#!/usr/bin/env python3
# The cycle table of docs/results/rtl.md: BENCH lines measured in cycles on
# the simulated Rocket (make sim ARGS=bench=cycles, and ubench -c typed into
# its shell) next to the same rows in instructions under QEMU -icount
# (make bench-micro's log, or the table it writes, docs/results/micro.md).
#   rtl-table.py ROCKET_LOG... --qemu build/bench-micro.log|docs/results/micro.md
import argparse
import re

LINE = re.compile(r"^BENCH name=(\S+) value=([0-9.]+) unit=(\S+)")
ROW = re.compile(r"^\| (\w+) \| ([0-9.]+) \| (\w+) \|")   # micro.md's table


def read(paths):
    rows = {}
    for path in paths:
        with open(path, errors="replace") as f:
            for line in f:
                m = LINE.match(line.strip()) or ROW.match(line.strip())
                if m:
                    rows[m.group(1)] = (float(m.group(2)), m.group(3))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rocket", nargs="+")
    ap.add_argument("--qemu", required=True)
    a = ap.parse_args()
    rocket, qemu = read(a.rocket), read([a.qemu])
    print("| benchmark | Rocket (cycles) | QEMU (instructions) | Rocket cycles / QEMU instructions |")
    print("|---|---|---|---|")
    for name, (q, unit) in qemu.items():
        if unit != "instructions":
            continue
        # bench-micro.sh names ubench's uintr_delivery_local "..._emulated"
        r = rocket.get(name, rocket.get(name.removesuffix("_emulated")))
        if r is None and name.endswith("_native"):
            print(f"| {name} | — (this Rocket has no N extension) | {q:.1f} | |")
        elif r is None:
            print(f"| {name} | not measured | {q:.1f} | |")
        elif r[1] != "cycles":
            print(f"| {name} | {r[0]:.1f} {r[1]} (not cycles) | {q:.1f} | |")
        else:
            print(f"| {name} | {r[0]:.1f} | {q:.1f} | {r[0] / q:.2f} |")


if __name__ == "__main__":
    main()
