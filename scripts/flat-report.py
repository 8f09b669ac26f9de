#!/usr/bin/env python3
"""Is the cost of a matrixd request flat in the number of idle connections?
(make bench-flat; scripts/bench-flat.sh makes the profiles.)

  flat-report.py --symbols TSV [--doc MD] [--png PNG] [--meta TEXT] [--limit PCT]
                 N:IDLE0:IDLE1:SECONDS:W:A1:A2:CONNS:K1:K2 ...

One argument per N (idle connections held open), all insnprof snapshots of one
boot (scripts/host/insnprof.c, snap=):
  IDLE0, IDLE1  taken SECONDS apart while nothing happened but the N idle
                connections (and the guest's own timers): IDLE1 - IDLE0 over
                SECONDS is the background cost, instructions per second;
  W, A1, A2     after three active runs on CONNS new connections each: K1
                requests per connection (a warm-up), K1 again, and K2. A
                request costs (A2 - A1) - (A1 - W) over CONNS * (K2 - K1):
                connection set-up and teardown cancel. A connection's set-up
                and teardown cost (A1 - W) / CONNS less K1 requests (warm), and
                in the first run after the idle connections, (W - IDLE1) /
                CONNS less K1 requests (cold).
All are charged to scripts/cost-report.py's categories (its rule, its symbol
table). Prints BENCH lines (flat_<N>: instructions per request); writes the
table and the verdict to MD (keeping what follows NOTES_MARK in it: notes
written by hand) and a stacked bar chart to PNG if asked. "Flat"
means every N from 100 up within --limit per cent (15) of the N=100 cost.
"""
import argparse
import importlib.util
import os
import sys


def _load_script(name, file):
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(os.path.dirname(os.path.abspath(__file__)), file))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


cost = _load_script("cost_report", "cost-report.py")
PARTS = cost.PARTS
# Everything after this line of the document is kept from run to run.
NOTES_MARK = "<!-- Notes below this line are written by hand; make bench-flat keeps them. -->"
fmt = cost.fmt


def label(p):
    return p[1] if p[0] != "other" else f"other: {p[1]}"


class Run:
    """One N: per-request, set-up and idle costs, by function and by part.

    With a tick (TICK: the address of an instruction the kernel runs once per
    timer tick, HZ ticks a second of guest time) the profiles carry their own
    clock: the idle window is measured in guest seconds, and each figure has
    the background (the idle rate times the guest time its runs took, which
    differ: the K2 run is longer than the K1 run) taken out, *net*; without,
    the host's seconds and no correction."""

    def __init__(self, images, arg, tick=None, hz=100):
        n, i0, i1, secs, w, a1, a2, conns, k1, k2 = arg.split(":")
        self.n, self.host_secs = int(n), float(secs)
        conns, k1, k2 = int(conns), int(k1), int(k2)
        self.requests = conns * (k2 - k1)
        clock = {}
        if tick is not None:
            clock = {p: cost.load(p).get(tick, 0) / hz for p in (i0, i1, w, a1, a2)}
        self.secs = clock[i1] - clock[i0] if clock else self.host_secs
        self.idle_funcs = cost.weighted(images, [(i0, -1), (i1, 1)], self.secs)

        def net(terms, divisor):
            """(raw, net of background, background) per function."""
            raw = cost.weighted(images, terms, divisor)
            t = sum(c * clock[p] for p, c in terms) if clock else 0.0
            bg = {k: v * t / divisor for k, v in self.idle_funcs.items()}
            return raw, {k: raw.get(k, 0) - bg.get(k, 0) for k in set(raw) | set(bg)}, bg

        # A request: the K2 run less the second K1 run. A connection's set-up
        # and teardown: one run of K1 requests a connection, less K1 requests
        # (K1 / (K2 - K1) of the difference).
        f = k1 / (k2 - k1)
        self.raw_funcs, self.funcs, bg = net([(w, 1), (a1, -2), (a2, 1)], self.requests)
        _, self.warm_funcs, _ = net([(w, -1 - f), (a1, 1 + 2 * f), (a2, -f)], conns)
        _, self.cold_funcs, _ = net([(i1, -1), (w, 1 - f), (a1, 2 * f), (a2, -f)], conns)
        self.parts = self._by_part(self.funcs)
        self.idle_parts = self._by_part(self.idle_funcs)
        self.total = sum(self.parts.values())
        self.raw = sum(self.raw_funcs.values())
        self.background = sum(bg.values())
        self.idle = sum(self.idle_parts.values())
        self.warm = sum(self.warm_funcs.values())
        self.cold = sum(self.cold_funcs.values())

    @staticmethod
    def _by_part(funcs):
        parts = {p: 0.0 for p in PARTS}
        for (image, name, path), v in funcs.items():
            parts[cost.classify(image, path, name)] += v
        return parts


def grown(runs, attr, top=8):
    """The functions whose cost grew most from the smallest N to the largest:
    [(growth, image, name, path)]."""
    lo, hi = getattr(runs[0], attr), getattr(runs[-1], attr)
    d = [(hi.get(k, 0) - lo.get(k, 0), *k) for k in set(lo) | set(hi)]
    return sorted(d, reverse=True)[:top]


def verdict(runs, limit):
    """(flat?, sentence) over the runs with N >= 100, against the first of them."""
    big = [r for r in runs if r.n >= 100]
    if len(big) < 2:
        return None, "Fewer than two runs with N >= 100: no verdict."
    ref = big[0]
    worst = max(big, key=lambda r: abs(r.total / ref.total - 1))
    dev = 100 * (worst.total / ref.total - 1)
    flat = abs(dev) <= limit
    s = (f"From N={ref.n} to N={big[-1].n} the cost per request moves by at most {dev:+.1f}% "
         f"of its N={ref.n} value (at N={worst.n}): **{'flat' if flat else 'not flat'}** by the "
         f"{limit:g}% criterion.")
    if not flat:
        growth = {p: worst.parts[p] - ref.parts[p] for p in PARTS}
        p = max(growth, key=growth.get)
        s += (f" The part that grows most is *{label(p)}* (+{fmt(growth[p])} instructions per "
              f"request from N={ref.n} to N={worst.n}): an O(n) path there.")
    return flat, s


def setup_sentence(runs, limit):
    """How a connection's set-up and teardown (warm) changes from N=100 up."""
    big = [r for r in runs if r.n >= 100]
    if len(big) < 2:
        return ""
    ref, last = big[0], big[-1]
    ratio = last.warm / ref.warm
    s = (f"A connection's set-up and teardown costs {fmt(ref.warm)} instructions at N={ref.n} and "
         f"{fmt(last.warm)} at N={last.n} (x{ratio:.2f}; cold {fmt(ref.cold)} and {fmt(last.cold)}): ")
    if abs(ratio - 1) * 100 <= limit:
        return s + "flat."
    d = sorted(((last.warm_funcs.get(k, 0) - ref.warm_funcs.get(k, 0), k[1], k[2])
                for k in set(ref.warm_funcs) | set(last.warm_funcs)), reverse=True)[:2]
    return s + "**not flat**; it grows most in " + " and ".join(
        f"`{name}` ({path or '?'}, +{fmt(g)})" for g, name, path in d) + "."


def write_doc(args, runs, flat_sentence):
    base = runs[0]
    out = ["# Cost per request against open connections (make bench-flat)", ""]
    if args.meta:
        out += [args.meta, ""]
    out += ["Guest instructions per served request, all of the hart's work (OpenSBI, kernel,",
            "vDSO, matrixd) counted by the insnprof plugin, with N idle connections held open",
            "beside the active ones; categories by make bench-cost's rule",
            "(scripts/cost-report.py). Issue 14: the cost per event should be flat from",
            "100 to 10,000 connections."]
    if args.tick is not None:
        out += ["The figures are *net*: the guest's background work (timers: what the idle",
                "window below costs per second) times the guest time the runs took is taken",
                "out, the time read off the kernel's tick count in the same profiles. The",
                "K2 run lasts longer than the K1 run, so without this a request would carry",
                "a share of the idle connections' timers; the *raw* row keeps it."]
    out += ["", flat_sentence, ""]
    names = [f"N={r.n}" for r in runs]
    out.append("| per request | " + " | ".join(names) + " |")
    out.append("|---" * (len(runs) + 1) + "|")
    for p in PARTS:
        out.append(f"| {label(p)} | " + " | ".join(fmt(r.parts[p]) for r in runs) + " |")
    out.append("| **total** | " + " | ".join(f"**{fmt(r.total)}**" for r in runs) + " |")
    out.append(f"| ratio to N={base.n} | " + " | ".join(f"{r.total / base.total:.3f}" for r in runs) + " |")
    if args.tick is not None:
        out.append("| background taken out | " + " | ".join(fmt(r.background) for r in runs) + " |")
        out.append("| raw (background in) | " + " | ".join(fmt(r.raw) for r in runs) + " |")
        out.append(f"| raw, ratio to N={base.n} | " + " | ".join(f"{r.raw / base.raw:.3f}" for r in runs) + " |")
    out.append("| requests measured | " + " | ".join(str(r.requests) for r in runs) + " |")
    out.append("")
    if args.png:
        out += [f"![instructions per request]({os.path.basename(args.png)})", ""]
    out += ["## A connection's set-up and teardown", "",
            "Instructions per active connection for its set-up and teardown (the run of",
            "K1 requests a connection less those requests): *cold*, the first 128",
            "connections after the N idle ones were set up; *warm*, the next 128",
            f"({'net of the background, as above' if args.tick is not None else 'background included'}).", ""]
    out.append("| per connection | " + " | ".join(names) + " |")
    out.append("|---" * (len(runs) + 1) + "|")
    out.append("| cold | " + " | ".join(fmt(r.cold) for r in runs) + " |")
    out.append("| warm | " + " | ".join(fmt(r.warm) for r in runs) + " |")
    out += ["", setup_sentence(runs, args.limit), ""]
    out += ["## The idle connections by themselves", "",
            "Instructions per second of the guest while nothing happened but the N idle",
            "connections being open, per second of guest time (" +
            ("the kernel's ticks" if args.tick is not None else "host seconds: under `-icount` with sleep on, "
             "an idle guest's clock follows the host's") +
            f"), and per idle connection: (rate at N - rate at N={base.n}) / N.", ""]
    out.append("| idle | " + " | ".join(names) + " |")
    out.append("|---" * (len(runs) + 1) + "|")
    for p in PARTS:
        if any(r.idle_parts[p] for r in runs):
            out.append(f"| {label(p)} | " + " | ".join(fmt(r.idle_parts[p]) for r in runs) + " |")
    out.append("| **instructions per second** | " + " | ".join(f"**{fmt(r.idle)}**" for r in runs) + " |")
    out.append("| per idle connection per second | " + " | ".join(
        f"{(r.idle - base.idle) / r.n:,.1f}" if r.n > base.n else "-" for r in runs) + " |")
    # The same from the previous N: what one more connection adds, free of the
    # fixed part that any open connection brings along.
    out.append("| per idle connection per second, from the previous N | " + " | ".join(
        f"{(r.idle - p.idle) / (r.n - p.n):,.1f}" if p and r.n > p.n else "-"
        for p, r in zip([None] + runs[:-1], runs)) + " |")
    out.append("| window, guest s | " + " | ".join(f"{r.secs:.2f}" for r in runs) + " |")
    out.append("| window, host s | " + " | ".join(f"{r.host_secs:.2f}" for r in runs) + " |")
    out.append("")
    for attr, what, unit in (("funcs", "per request", "insn/request"),
                             ("warm_funcs", "warm set-up", "insn/connection"),
                             ("cold_funcs", "cold set-up", "insn/connection"),
                             ("idle_funcs", "idle", "insn/s")):
        rows = [g for g in grown(runs, attr) if g[0] > 0]
        if not rows:
            continue
        out += [f"The functions whose {what} cost grew most from N={runs[0].n} to N={runs[-1].n}:", "",
                f"| function | where | file | growth ({unit}) |", "|---|---|---|---|"]
        out += [f"| `{name}` | {image} | {path or '-'} | {fmt(d)} |" for d, image, name, path in rows]
        out.append("")
    # Notes written by hand below the marker survive a new run.
    kept = ""
    if os.path.exists(args.doc):
        with open(args.doc) as f:
            old = f.read()
        if NOTES_MARK in old:
            kept = old[old.index(NOTES_MARK) + len(NOTES_MARK):]
    out += [NOTES_MARK]
    with open(args.doc, "w") as f:
        f.write("\n".join(out) + (kept or "\n"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--symbols", required=True)
    ap.add_argument("--doc")
    ap.add_argument("--png")
    ap.add_argument("--meta")
    ap.add_argument("--limit", type=float, default=15.0)
    ap.add_argument("--tick", type=lambda x: int(x, 16),
                    help="hex address of an instruction run once per timer tick: the guest's clock")
    ap.add_argument("--hz", type=float, default=100.0, help="timer ticks per second of guest time")
    ap.add_argument("runs", nargs="+", metavar="N:IDLE0:IDLE1:SECONDS:A0:A1:A2:REQUESTS")
    args = ap.parse_args()
    images = cost.Images(args.symbols)
    runs = sorted((Run(images, a, args.tick, args.hz) for a in args.runs), key=lambda r: r.n)
    base = runs[0]
    for r in runs:
        print(f"BENCH name=flat_{r.n} value={r.total:.0f} unit=instructions")
    for r in runs:
        print(f"BENCH name=flat_raw_{r.n} value={r.raw:.0f} unit=instructions")
    for r in runs:
        print(f"BENCH name=flat_ratio_{r.n} value={r.total / base.total:.3f} unit=ratio")
    for r in runs:
        print(f"BENCH name=flat_setup_cold_{r.n} value={r.cold:.0f} unit=instructions/connection")
        print(f"BENCH name=flat_setup_warm_{r.n} value={r.warm:.0f} unit=instructions/connection")
    for r in runs:
        print(f"BENCH name=flat_idle_{r.n} value={r.idle:.0f} unit=instructions/s")
        if r.n > base.n:
            print(f"BENCH name=flat_idle_per_conn_{r.n} value={(r.idle - base.idle) / r.n:.1f} "
                  f"unit=instructions/s")
    flat, sentence = verdict(runs, args.limit)
    if flat is not None:
        print(f"BENCH name=flat_verdict value={int(flat)} unit=flat")
    print(sentence.replace("**", ""), file=sys.stderr)
    if args.doc:
        write_doc(args, runs, sentence)
    if args.png:
        models = [(f"N={r.n}", r.requests, r.funcs, r.parts, None) for r in runs]
        cost.plot(args, models, title="instructions per request beside N idle connections (KCUC, 15x15)", xlabel="idle connections held open")


if __name__ == "__main__":
    main()
