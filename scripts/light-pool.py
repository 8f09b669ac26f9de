#!/usr/bin/env python3
"""Pooled latency percentiles of bench-light's rounds, with a bootstrap
interval for each configuration's p99 over the first configuration's.

A round's own p99 rests on its 51 slowest requests of 5,120, and one host
stall of a few milliseconds moves it by a factor of several (smp-light-kcuc.md),
so the median of per-round ratios wanders from run to run. Pooling every
request of every round of a configuration measures the same quantity (the
latency that 1% of requests exceed at this load) from sixteen times the
samples. The interval resamples whole rounds, because rounds are what the host
disturbs (a stall hits every connection of one boot at once), not requests.

  light-pool.py [--seed S] [--resamples R] [--png FILE --title T] BASE NAME:ROUND:CSV...

Each CSV is mclient's --csv (conn,prio,send_us,first_byte_us,complete_us,ok);
latency is send to first byte of the answer, as mclient's own p50/p99. Prints
one line per configuration:
  name rounds requests p50 p99 p999 ratio lo hi worse_of
with ratio = pooled p99 over BASE's (lo, hi: the 2.5% and 97.5% points of the
bootstrap; '-' for BASE itself) and worse_of = the share of resamples in which
it is above BASE's. With --png, also draws each configuration's pooled
latency against its percentile, from p50 to p99.99 (gnuplot), so the tails
can be compared by eye.
"""
import argparse
import csv
import math
import os
import random
import subprocess
import sys
import tempfile


def latencies(path):
    out = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if int(row["complete_us"]) < 0:     # unanswered: as mclient, left out
                continue
            out.append(int(row["first_byte_us"]) - int(row["send_us"]))
    return out


def pct(sorted_v, p):                          # nearest rank, as mclient's pct()
    if not sorted_v:
        return 0
    r = math.ceil(p / 100.0 * len(sorted_v))
    return sorted_v[r - 1 if r else 0]


def pooled(rounds, p):
    v = sorted(x for r in rounds for x in r)
    return pct(v, p)


def pooled_tail(tails, n, p):
    """pooled() of rounds of n requests in all, from each round's largest
    values only (sorted, largest first): the nearest-rank p-th percentile is
    the (n - rank + 1)-th largest, which lies among them if each round keeps
    at least that many. A resample then sorts a few hundred values a round
    instead of every request."""
    m = n - math.ceil(p / 100.0 * n) + 1
    top = sorted((x for t in tails for x in t), reverse=True)
    return top[m - 1]


def plot(png, title, pooled_by_name):
    """Latency (ms, log scale) against percentile, the x axis stretched
    towards the tail: x = -log10(1 - p/100), so p90, p99, p99.9 are evenly
    spaced."""
    fd, data = tempfile.mkstemp(suffix=".dat")
    names = list(pooled_by_name)
    with os.fdopen(fd, "w") as f:
        for name in names:
            v = pooled_by_name[name]
            f.write(f'"{name}"\n')
            for i in range(0, 401):
                x = i / 100.0                      # 0 .. 4: p0 .. p99.99
                p = 100.0 * (1 - 10 ** -x)
                if p < 50:
                    continue
                f.write(f"{x:.3f} {pct(v, p) / 1000.0:.3f}\n")
            f.write("\n\n")
    script = f"""set terminal pngcairo size 800,500 font ",11"
set output "{png}"
set termoption noenhanced
set title "{title}"
set xlabel "percentile"
set ylabel "latency, send to first byte (ms)"
set logscale y
set xrange [0.301:4]
set xtics ("p50" 0.301, "p90" 1, "p99" 2, "p99.9" 3, "p99.99" 4)
set grid xtics ytics
set key left top
plot for [i=0:{len(names) - 1}] "{data}" index i using 1:2 with lines lw 2 title columnheader(1)
"""
    r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    os.unlink(data)
    if r.returncode != 0:
        sys.stderr.write(r.stderr)
        sys.exit(f"light-pool: gnuplot failed ({r.returncode})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--png")
    ap.add_argument("--title", default="")
    ap.add_argument("base")
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    by = {}                                    # name -> {round: latencies}
    order = []
    for spec in a.runs:
        name, rnd, path = spec.split(":", 2)
        if name not in by:
            by[name] = {}
            order.append(name)
        by[name][int(rnd)] = latencies(path)
    if a.base not in by:
        sys.exit(f"light-pool: no runs of the base configuration {a.base}")
    if a.png:
        plot(a.png, a.title, {name: sorted(x for r in by[name].values() for x in r)
                              for name in order})
    rng = random.Random(a.seed)
    base_p99 = pooled(by[a.base].values(), 99)
    for name in order:
        rounds = by[name]
        allv = sorted(x for r in rounds.values() for x in r)
        p50, p99, p999 = pct(allv, 50), pct(allv, 99), pct(allv, 99.9)
        if name == a.base:
            print(name, len(rounds), len(allv), p50, p99, p999, "-", "-", "-", "-")
            continue
        # Rounds both configurations completed, resampled in pairs: a round's
        # two boots shared the host's weather of that moment.
        common = sorted(set(rounds) & set(by[a.base]))
        ratio = p99 / base_p99 if base_p99 else float("nan")
        boots = []
        if not common:
            print(name, len(rounds), len(allv), p50, p99, p999, f"{ratio:.3f}", "-", "-", "-")
            continue
        # Enough of each round's tail for any resample (at most every pick
        # the largest round).
        keep = {}
        for conf in (a.base, name):
            most = max(len(by[conf][r]) for r in common)
            t = math.ceil(0.01 * most * len(common)) + 2
            keep[conf] = {r: (len(by[conf][r]), sorted(by[conf][r], reverse=True)[:t])
                          for r in common}
        for _ in range(a.resamples):
            pick = [rng.choice(common) for _ in common]
            q = []
            for conf in (a.base, name):
                n = sum(keep[conf][r][0] for r in pick)
                q.append(pooled_tail([keep[conf][r][1] for r in pick], n, 99))
            boots.append(q[1] / q[0] if q[0] else float("nan"))
        boots.sort()
        lo = boots[int(0.025 * len(boots))]
        hi = boots[min(len(boots) - 1, int(0.975 * len(boots)))]
        worse = sum(1 for x in boots if x > 1) / len(boots)
        print(name, len(rounds), len(allv), p50, p99, p999,
              f"{ratio:.3f}", f"{lo:.3f}", f"{hi:.3f}", f"{worse:.2f}")


if __name__ == "__main__":
    main()
