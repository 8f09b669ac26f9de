#!/usr/bin/env python3
"""Instructions per served matrixd request, split by category (make bench-cost).

  cost-report.py symbols OUT.tsv KERNEL.elf VDSO.elf USER.elf
      The function symbols of the three images with the source file each one is
      defined in (addr2line on its first address): "image addr name file" per line,
      file relative to the repository. The report needs only this table, so a test
      can hand it a fixed one (tests/cost/).

  cost-report.py report --symbols TSV [--doc MD] [--png PNG] [--meta TEXT]
                        MODEL:PROF1:PROF2:REQUESTS ...
      PROF1 and PROF2 are insnprof profiles (scripts/host/insnprof.c) of two runs
      of MODEL that differ only in how many requests were served: PROF2 served
      REQUESTS more. PROF2 - PROF1 (boot, connection set-up and teardown cancel)
      divided by REQUESTS is the cost of one request, charged to functions and
      through the rules below to categories. Prints BENCH lines; writes the
      table to MD and a stacked bar chart to PNG (gnuplot) if asked.

The rule (RULES, first match wins) looks at where a function is defined: the
image (OpenSBI, kernel, vDSO, user program) and the source file, and for a few
functions the symbol itself (the copy routines, wherever they live). The three
categories of issue 14:
  matrix  the work a request cannot avoid: user/matrix_proto.c, matrixd's
          protocol code (parsing the numbers, the multiply, formatting).
  tcpip   the TCP/IP stack: lwIP itself, our port of it (net/netif.c, net/net.c,
          net/port.c) and the virtio-net driver.
  other   everything else, in sub-categories: system calls and sockets,
          scheduling and locks, traps and interrupts (OpenSBI included), copies and
          memory, matrixd's own glue around the matrix work, and whatever no
          rule names ("unclassified": listed by function so a rule can be added).
"""
import argparse
import bisect
import fnmatch
import importlib.util
import os
import subprocess
import sys
import tempfile

# (category, sub-category, image, files, symbols): files and symbols are
# fnmatch patterns (any one matches; None: any). image "*" is any image. The
# first matching row wins. The files are repository paths, so that the table
# in cost.md names real files (scripts/check-repo.sh checks them); lwIP's
# sources sit in the build folder, hence "*/lwip-*".
RULES = [
    ("other", "copies & memory", "*", None,
     ("memcpy", "mem_copy", "memmove", "memset", "memcmp", "strlen", "strcmp", "strncmp")),
    ("matrix", "matrix work", "user", ("user/matrix_proto.c",), None),
    ("tcpip", "TCP/IP", "kernel", ("*/lwip-*", "net/netif.c", "net/net.c", "net/port.c",
                                   "kernel/virtio_net.c"), None),
    ("other", "syscalls & sockets", "kernel",
     ("kernel/syscall.c", "kernel/sys_net.c", "kernel/syswork.c", "kernel/sysargs.c", "kernel/ring.c",
      "kernel/file.c", "net/socket.c"), None),
    ("other", "syscalls & sockets", "user", ("user/usys.S", "user/cops.c"), None),
    ("other", "scheduling & locks", "kernel",
     ("kernel/sched.c", "kernel/waitq.c", "kernel/kces.c", "kernel/proc.c", "kernel/switcher.c",
      "kernel/prio.c", "kernel/spinlock.c", "kernel/trace.c", "kernel/hart.h", "kernel/exec_arch.h",
      "vdso/*"), None),
    ("other", "scheduling & locks", "vdso", None, None),
    ("other", "scheduling & locks", "user", ("user/uthread.c", "user/cops_ces.c", "user/cops_switch.S"), None),
    ("other", "traps & interrupts", "opensbi", None, None),
    ("other", "traps & interrupts", "kernel",
     ("kernel/trap.c", "kernel/plic.c", "kernel/timer.c", "kernel/sbi.c", "kernel/uintr*.c",
      "kernel/uintc.c", "kernel/nmodel.c", "kernel/kernelvec.S", "kernel/uservec.S"), None),
    ("other", "traps & interrupts", "user", ("user/uintr_entry.S",), None),
    ("other", "copies & memory", "kernel",
     ("kernel/klib.c", "kernel/uvm.c", "kernel/vm.c", "kernel/kmalloc.c", "kernel/palloc.c"), None),
    ("other", "copies & memory", "user", ("user/ulib.c", "user/umalloc.c"), None),
    ("other", "matrixd glue", "user", ("user/matrixd*.c",), None),
]
UNCLASSIFIED = ("other", "unclassified")
# The profile reader of scripts/profile.sh's report (a file name with a dash:
# loaded by path).
_spec = importlib.util.spec_from_file_location(
    "profile_report", os.path.join(os.path.dirname(os.path.abspath(__file__)), "profile-report.py"))
_profile_report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_profile_report)
load = _profile_report.load
# Bar order (bottom to top) and the table's rows.
PARTS = [("matrix", "matrix work"), ("tcpip", "TCP/IP"), ("other", "syscalls & sockets"),
         ("other", "scheduling & locks"), ("other", "traps & interrupts"), ("other", "copies & memory"),
         ("other", "matrixd glue"), UNCLASSIFIED]
# Where OpenSBI's code ends: RISC-V virt loads it at 0x80000000, the kernel after it.
FIRMWARE_BASE = 0x80000000


def classify(image, path, name):
    for cat, sub, img, files, syms in RULES:
        if img != "*" and img != image:
            continue
        if files is not None and not any(fnmatch.fnmatchcase(path or "", f) for f in files):
            continue
        if syms is not None and not any(fnmatch.fnmatchcase(name, f) for f in syms):
            continue
        return cat, sub
    return UNCLASSIFIED


def symbols(out, elfs):
    root = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
    rows = []
    for image, elf in elfs:
        nm = subprocess.run(["nm", "-n", elf], capture_output=True, text=True, check=True).stdout
        syms = []
        for line in nm.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "tTwW" and not parts[2].startswith("$"):
                syms.append((int(parts[0], 16), parts[2]))
        a2l = subprocess.run(["riscv64-unknown-elf-addr2line", "-e", elf],
                             input="".join(f"{a:x}\n" for a, _ in syms),
                             capture_output=True, text=True, check=True).stdout.splitlines()
        for (addr, name), loc in zip(syms, a2l):
            path = loc.rsplit(":", 1)[0]
            if path.startswith("/"):
                path = os.path.relpath(os.path.realpath(path), root)
            rows.append(f"{image}\t{addr:x}\t{name}\t{path}\n")
    with open(out, "w") as f:
        f.writelines(rows)


class Images:
    """The symbol table: address -> (image, function, file)."""

    def __init__(self, path):
        per = {}
        with open(path) as f:
            for line in f:
                image, addr, name, file = line.rstrip("\n").split("\t")
                per.setdefault(image, []).append((int(addr, 16), name, file))
        self.tables = {}
        for image, syms in per.items():
            syms.sort()
            # An image spans its symbols plus a margin for the last function.
            self.tables[image] = ([a for a, _, _ in syms], syms, syms[0][0], syms[-1][0] + 0x10000)

    def lookup(self, addr):
        k = self.tables.get("kernel")
        v = self.tables.get("vdso")
        if k and addr >= k[2]:
            image = "kernel"
        elif addr >= FIRMWARE_BASE:
            return "opensbi", "(M-mode firmware)", ""
        elif v and v[2] <= addr < v[3]:
            image = "vdso"
        else:
            image = "user"
        if image not in self.tables:
            return image, "?", ""
        addrs, syms, _, _ = self.tables[image]
        i = bisect.bisect_right(addrs, addr) - 1
        if i < 0:
            return image, "?", ""
        return image, syms[i][1], syms[i][2]


def per_request(images, prof1, prof2, requests):
    """{(image, function, file): instructions per request} from two profiles."""
    return weighted(images, [(prof1, -1), (prof2, 1)], requests)


def weighted(images, terms, divisor):
    """{(image, function, file): sum of coefficient x count, / divisor} over
    TERMS, (profile path, coefficient) pairs: a difference of profiles, or a
    difference of differences (make bench-flat: several snapshots of one boot)."""
    profs = [(load(p), c) for p, c in terms]
    funcs = {}
    for addr in set().union(*(p for p, _ in profs)):
        d = sum(c * p.get(addr, 0) for p, c in profs)
        if d:
            key = images.lookup(addr)
            funcs[key] = funcs.get(key, 0) + d
    return {k: v / divisor for k, v in funcs.items()}


def patterns(pats):
    """A rule's patterns for a table cell: any."""
    return "any" if pats is None else ", ".join(f"`{p}`" for p in pats)


def fmt(x):
    return f"{x:,.0f}"


def report(args):
    images = Images(args.symbols)
    models = []
    for run in args.runs:
        model, prof1, prof2, requests = run.split(":")
        funcs = per_request(images, prof1, prof2, int(requests))
        parts = {p: 0.0 for p in PARTS}
        by_part = {p: [] for p in PARTS}
        for (image, name, path), n in funcs.items():
            p = classify(image, path, name)
            parts[p] += n
            by_part[p].append((n, image, name, path))
        models.append((model, int(requests), funcs, parts, by_part))

    for model, _, funcs, parts, _ in models:
        total = sum(parts.values())
        matrix = parts[("matrix", "matrix work")]
        tcpip = parts[("tcpip", "TCP/IP")]
        other = total - matrix - tcpip
        m = model.lower()
        print(f"BENCH name=cost_{m}_total value={total:.0f} unit=insn/request")
        print(f"BENCH name=cost_{m}_matrix value={matrix:.0f} unit=insn/request")
        print(f"BENCH name=cost_{m}_tcpip value={tcpip:.0f} unit=insn/request")
        print(f"BENCH name=cost_{m}_other value={other:.0f} unit=insn/request")
        ratio = other / matrix if matrix else float("inf")
        print(f"BENCH name=cost_{m}_other_over_matrix value={ratio:.2f} unit=ratio")

    if args.doc:
        write_doc(args, models)
    if args.png:
        plot(args, models)


def write_doc(args, models):
    names = [m[0].upper() for m in models]
    out = ["# Distance from the limit: instructions per matrixd request", ""]
    if args.meta:
        out += [args.meta, ""]
    out += ["Guest instructions per served request, all of the hart's work (OpenSBI, kernel,",
            "vDSO, matrixd) counted by the insnprof plugin, two runs subtracted; categories",
            "by the rule in scripts/cost-report.py (where each function is defined).",
            "Issue 14's target: *other* (everything beyond the matrix work and the TCP/IP",
            "stack) below the matrix work.", ""]
    out.append("| part | " + " | ".join(names) + " |")
    out.append("|---" * (len(names) + 1) + "|")
    for p in PARTS:
        label = p[1] if p[0] != "other" else f"other: {p[1]}"
        out.append(f"| {label} | " + " | ".join(fmt(m[3][p]) for m in models) + " |")
    totals = [sum(m[3].values()) for m in models]
    matrix = [m[3][PARTS[0]] for m in models]
    tcpip = [m[3][PARTS[1]] for m in models]
    other = [t - a - b for t, a, b in zip(totals, matrix, tcpip)]
    out.append("| **other, all** | " + " | ".join(f"**{fmt(o)}**" for o in other) + " |")
    out.append("| **total** | " + " | ".join(f"**{fmt(t)}**" for t in totals) + " |")
    out.append("| other / matrix work | " + " | ".join(
        f"{o / a:.2f}" if a else "-" for o, a in zip(other, matrix)) + " |")
    out.append("| requests measured | " + " | ".join(str(m[1]) for m in models) + " |")
    out.append("")
    verdicts = []
    for n, o, a in zip(names, other, matrix):
        met = a and o < a
        verdicts.append(f"{n} {'met' if met else 'missed'} ({fmt(o)} against {fmt(a)})")
    out.append("Target (other < matrix work): " + "; ".join(verdicts) + ".")
    out.append("")
    biggest = []
    for model, _, _, _, by_part in models:
        rest = [f for p in PARTS[2:] for f in by_part[p]]
        if rest:
            n, image, name, _ = max(rest)
            biggest.append(f"{model.upper()} `{name}` ({image}) {fmt(n)}")
    if biggest:
        out += ["The largest single function in *other*: " + "; ".join(biggest) + ".", ""]
    if args.png:
        out += [f"![instructions per request]({os.path.basename(args.png)})", ""]
    out += ["## The rule", "",
            "Each function is charged by where it is defined (addr2line on its first",
            "address), first matching row wins; the matrix work is the whole of",
            "user/matrix_proto.c, so it includes `mp_feed`, which buffers the received",
            "bytes for the parser.", "",
            "| category | image | files | symbols |", "|---|---|---|---|"]
    for cat, sub, img, files, syms in RULES:
        label = sub if cat != "other" else f"other: {sub}"
        out.append(f"| {label} | {img} | {patterns(files)} | {patterns(syms)} |")
    out += [f"| other: {UNCLASSIFIED[1]} | anything else | | |", ""]
    out += ["## Where the instructions go", "",
            "The largest functions per request in each part (under 0.5% of the model's total left out,",
            "except in *unclassified*, which lists every function no rule names).", ""]
    for model, _, funcs, parts, by_part in models:
        total = sum(parts.values())
        out += [f"### {model.upper()}", "", "| part | function | where | file | insn/request |",
                "|---|---|---|---|---|"]
        for p in PARTS:
            for n, image, name, path in sorted(by_part[p], reverse=True):
                # Unclassified functions all: each one wants a rule.
                if n >= total / 200 or (p == UNCLASSIFIED and n >= 0.5):
                    out.append(f"| {p[1]} | `{name}` | {image} | {path or '-'} | {fmt(n)} |")
        out.append("")
    with open(args.doc, "w") as f:
        f.write("\n".join(out))


def plot(args, models, title="matrixd, 15x15, 128 connections, closed loop: guest instructions per request",
         xlabel=""):
    # The chart's data: a scratch file, gone with the chart drawn.
    fd, data = tempfile.mkstemp(suffix=".dat")
    with os.fdopen(fd, "w") as f:
        f.write("model " + " ".join(f'"{p[1] if p[0] != "other" else "other: " + p[1]}"' for p in PARTS) + "\n")
        for model, _, _, parts, _ in models:
            f.write(model.upper() + " " + " ".join(f"{parts[p]:.1f}" for p in PARTS) + "\n")
    script = f"""set terminal pngcairo size 900,560 font ",11"
set output "{args.png}"
set termoption noenhanced
set title "{title}"
set xlabel "{xlabel}"
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
set key outside right top invert
set ylabel "instructions per request"
set format y "%.0s%c"
set yrange [0:*]
set grid ytics
plot for [i=2:{len(PARTS) + 1}] "{data}" using i:xtic(1) title columnheader(i)
"""
    r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    os.unlink(data)
    if r.returncode != 0:
        sys.stderr.write(r.stderr)
        sys.exit(f"cost-report: gnuplot failed ({r.returncode})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("symbols")
    s.add_argument("out")
    s.add_argument("kernel")
    s.add_argument("vdso")
    s.add_argument("user")
    r = sub.add_parser("report")
    r.add_argument("--symbols", required=True)
    r.add_argument("--doc")
    r.add_argument("--png")
    r.add_argument("--meta")
    r.add_argument("runs", nargs="+", metavar="MODEL:PROF1:PROF2:REQUESTS")
    args = ap.parse_args()
    if args.cmd == "symbols":
        symbols(args.out, [("kernel", args.kernel), ("vdso", args.vdso), ("user", args.user)])
    else:
        report(args)


if __name__ == "__main__":
    main()
