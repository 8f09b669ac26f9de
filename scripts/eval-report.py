#!/usr/bin/env python3
"""The data side of `make eval` (scripts/eval.sh): turns mclient's output into
flat CSV files as the runs go, and those files into docs/results/eval.md and
its gnuplot figures at the end. Standard library only.

  eval-report.py header | cdf-header | mem-header      CSV header lines
  eval-report.py row --exp E --smp S --model M --conns C --interval MS --json F [--note N]
        rows of results.csv: one for the whole run ("all"), one per priority
  eval-report.py cdf --smp S --interval MS --csv F     rows of cdf.csv (Figure 7)
  eval-report.py mem --model M --accept PREFIX [--best PREFIX] --log F [--note N]
        a row of table3.csv: the run until refused, and the largest run whose
        connections all got their answer (memory counters before and while held)
  eval-report.py get --json F --key K                  one value of mclient's JSON
  eval-report.py all-answered --json F --conns N       exit 0 iff N accepted, N answered right
  eval-report.py report --dir D --doc FILE [--quick 0|1] [--no-plots]
        eval.md from D/{machine.txt,results.csv,cdf.csv,table3.csv}, and
        eval-fig5.png, eval-fig6.png, eval-fig7.png beside it (gnuplot)

tests/eval/test-eval-report.sh runs `report` on a small fixture.
"""
import argparse
import csv
import json
import os
import subprocess
import sys

RESULT_FIELDS = ["exp", "smp", "model", "conns", "interval_ms", "prio", "offered_rps",
                 "connected", "refused", "sent", "answered", "wrong", "errors", "late",
                 "rps", "p50_us", "p90_us", "p99_us", "max_us", "mean_us", "note", "complaint"]
CDF_FIELDS = ["smp", "interval_ms", "prio", "latency_us", "fraction"]
MEM_FIELDS = ["model", "limit", "total_pages", "thread_struct_bytes",
              # opening until refused: how many were accepted, and how they fared
              "accepted", "accept_refused", "accept_answered", "accept_wrong", "accept_errors",
              "accept_hold_free_pages",
              # the largest count whose connections all got their answer
              "held", "base_free_pages", "hold_free_pages", "base_heap_pages", "hold_heap_pages",
              "base_kmalloc_bytes", "hold_kmalloc_bytes", "base_user_heap", "hold_user_heap",
              "note"]
MODELS = ["kcuc", "kcut", "ktut", "ktuc"]
PAGE = 4096
# matrixd's connection limits (scripts/eval.sh's boots): a UC connection holds
# one descriptor; the figures' boots start matrixd with -c 1100 and the
# default 1,100 descriptors (8 kept back: 1092), Table 3's with -c 16368 and
# nofile=16384. A UT connection is three threads of MAXTHREADS_ABI (4096, two
# kept back: user/matrixd.h MD_UT_MAX_CONNS). Table 3's rows record theirs.
UC_LIMIT, UT_LIMIT, T3_UC_LIMIT = 1092, 1364, 16368
# The paper's figures (section 5, Table 3) and its memory arithmetic.
PAPER_MAX = {"kcuc": 385, "ktut": 186}
PAPER_CONN_BYTES = {"kcuc": 0x4000 * 2 + 176 + 120 + 80 + 64, "ktut": 0x4000 * 2 * 3}


def write_csv_rows(fields, rows):
    w = csv.DictWriter(sys.stdout, fieldnames=fields, lineterminator="\n")
    for r in rows:
        w.writerow(r)


def header(fields):
    print(",".join(fields))


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------------
# Collecting, while eval.sh runs

def first_complaint(path):
    """mclient's first complaint about a connection ("mclient: connection 5:
    no answer within 10 s" gives "no answer within 10 s"), or ''."""
    try:
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith("mclient: connection ") and ": " in line[20:]:
                    return line[20:].split(": ", 1)[1].strip()
    except (OSError, TypeError):
        pass
    return ""


def cmd_row(a):
    j = load_json(a.json)
    offered = a.conns * 1000.0 / a.interval if a.interval > 0 else ""
    base = {"exp": a.exp, "smp": a.smp, "model": a.model, "conns": a.conns,
            "interval_ms": a.interval, "offered_rps": offered, "note": a.note}
    if j is None:
        base.update(prio="all", note=a.note or "no result: mclient wrote no JSON")
        write_csv_rows(RESULT_FIELDS, [base])
        return
    counts = {k: j.get(k, "") for k in ("connected", "refused", "sent", "wrong", "errors", "late")}
    if j.get("errors"):
        base["complaint"] = first_complaint(a.client_out)

    def stats(s):
        return {k: s.get(k, "") for k in ("answered", "rps", "p50_us", "p90_us", "p99_us",
                                           "max_us", "mean_us")}
    rows = [dict(base, prio="all", **counts, **stats(j))]
    for p in j.get("prio", []):
        rows.append(dict(base, prio=p["prio"], **stats(p)))
    write_csv_rows(RESULT_FIELDS, rows)


def cmd_cdf(a):
    lat = {}
    with open(a.csv) as f:
        for r in csv.DictReader(f):
            if int(r["complete_us"]) >= 0 and int(r["first_byte_us"]) >= 0:
                lat.setdefault(int(r["prio"]), []).append(int(r["first_byte_us"]) - int(r["send_us"]))
    rows = []
    for p in sorted(lat):
        v = sorted(lat[p])
        n = len(v)
        # At most ~200 points per priority: every sample when there are few.
        step = max(1, n // 200)
        idx = list(range(0, n, step))
        if idx[-1] != n - 1:
            idx.append(n - 1)
        for i in idx:
            rows.append({"smp": a.smp, "interval_ms": a.interval, "prio": p,
                         "latency_us": v[i], "fraction": "%.4f" % ((i + 1) / n)})
    write_csv_rows(CDF_FIELDS, rows)


def read_kmem(path):
    try:
        with open(path) as f:
            line = f.read().split("\n")[0]
    except OSError:
        return {}
    if not line.startswith("KMEM "):
        return {}
    return {k: int(v) for k, v in (kv.split("=") for kv in line.split()[1:])}


def cmd_mem(a):
    acc = load_json(a.accept + ".json") or {}
    row = {"model": a.model, "limit": UT_LIMIT if a.model in ("kcut", "ktut") else T3_UC_LIMIT}
    for k in ("refused", "answered", "wrong", "errors"):
        row["accept_" + k] = acc.get(k, "")
    row["accepted"] = acc.get("connected", "")
    ab, ah = read_kmem(a.accept + ".base.txt"), read_kmem(a.accept + ".hold.txt")
    row["accept_hold_free_pages"] = ah.get("free_pages", "")
    row["total_pages"] = ab.get("total_pages", "")
    row["thread_struct_bytes"] = ab.get("thread_struct_bytes", "")
    if a.best:
        best = load_json(a.best + ".json") or {}
        row["held"] = best.get("connected", "")
        for tag in ("base", "hold"):
            d = read_kmem("%s.%s.txt" % (a.best, tag))
            row[tag + "_free_pages"] = d.get("free_pages", "")
            row[tag + "_heap_pages"] = (d["slab_pages"] + d["large_pages"]) if d else ""
            row[tag + "_kmalloc_bytes"] = d.get("kmalloc_bytes", "")
            row[tag + "_user_heap"] = d.get("user_heap_bytes", "")
    note = a.note
    try:
        with open(a.log, errors="replace") as f:
            log = f.read().replace("\r", "")
        # What the kernel said about memory, if anything.
        for line in log.split("\n"):
            if "out of memory" in line.lower() or "panic" in line.lower():
                note = (note + "; " if note else "") + "kernel: " + line.strip()[:120]
                break
    except OSError:
        pass
    row["note"] = note
    write_csv_rows(MEM_FIELDS, [row])


def cmd_get(a):
    j = load_json(a.json) or {}
    print(j.get(a.key, ""))


def cmd_all_answered(a):
    """Exit 0 iff all conns connections were accepted and got a right answer."""
    j = load_json(a.json) or {}
    ok = (j.get("connected") == a.conns and j.get("answered") == a.conns and j.get("wrong") == 0
          and j.get("errors") == 0)
    sys.exit(0 if ok else 1)


# ---------------------------------------------------------------------------
# The report

def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def read_rows(path):
    try:
        with open(path) as f:
            return list(csv.DictReader(f))
    except OSError:
        return []


def ms(us):
    v = num(us)
    if v is None:
        return "–"
    v /= 1000.0
    if v < 10:
        return "%.2f" % v
    if v < 100:
        return "%.1f" % v
    return "%.0f" % v


def why(r):
    """Why a run did not hold its point ('' if it did)."""
    if r.get("note"):
        return r["note"]
    reasons = []
    refused = int(num(r["refused"]) or 0)
    if refused:
        conn = int(num(r["connected"]) or 0)
        limit = UT_LIMIT if r["model"] in ("kcut", "ktut") else UC_LIMIT
        reasons.append("refused %d%s" % (refused, " (matrixd's limit: %d connections)" % limit
                                         if conn == limit else ""))
    if int(num(r["errors"]) or 0):
        reasons.append("errors %s%s" % (r["errors"], " (e.g. %s)" % r["complaint"]
                                         if r.get("complaint") else ""))
    if int(num(r["wrong"]) or 0):
        reasons.append("wrong %s" % r["wrong"])
    off, rps = num(r["offered_rps"]), num(r["rps"])
    if off and rps is not None and rps < 0.95 * off:
        reasons.append("late: %.0f%% of offered" % (100 * rps / off))
    return ", ".join(reasons)


def held(r):
    return r is not None and not why(r)


def pick(rows, **kw):
    for r in rows:
        if all(str(r[k]) == str(v) for k, v in kw.items()):
            return r
    return None


def fmt_rps(r):
    if r is None:
        return "not measured"
    rps = num(r["rps"])
    s = "%.0f" % rps if rps is not None else "–"
    w = why(r)
    return s + (" (%s)" % w if w else "")


def rps_cells(r):
    """Three table cells: req/s (with why, if not held), p50 and p99 in ms."""
    if r is None or num(r["rps"]) is None:
        return " %s | – | – |" % (why(r) if r else "not measured")
    return " %s | %s | %s |" % (fmt_rps(r), ms(r["p50_us"]), ms(r["p99_us"]))


def smps_of(rows):
    return sorted({int(r["smp"]) for r in rows})


def conns_of(rows):
    return sorted({int(r["conns"]) for r in rows})


CLAIMS = []   # (section, the paper's claim, Coral's status), for the summary


def added_capacity(rows, exp):
    """Why more harts may not help the low priorities: the closed loop's total
    on the fewest and the most harts, as a sentence ('' without the data)."""
    tot = {}
    for r in rows:
        if r["exp"] == exp and int(r["interval_ms"]) == 0 and r["prio"] == "all" and num(r["rps"]):
            tot[int(r["smp"])] = num(r["rps"])
    if len(tot) < 2:
        return ""
    s1, s2 = min(tot), max(tot)
    went = "the closed loop's total went from %.0f req/s on %s to %.0f on %s" % (
        tot[s1], harts(s1), tot[s2], harts(s2))
    if tot[s2] < 1.2 * tot[s1]:
        return ("On this host a second hart adds little or no capacity (%s: two host cores, "
                "shared with QEMU's network thread, the client and other work), and strict "
                "priorities hand what there is to the best priorities first." % went)
    return ("The second hart adds capacity (%s), but strict priorities hand it to the best "
            "priorities first; the low ones still wait behind them, and their tails take the "
            "noise of an oversubscribed host." % went)


def claim(section, paper, per, detail, why_not=""):
    """One of the paper's claims beside Coral's result. per: {where: holds?}
    (where: "1 hart", ...), empty when this run has no data for it. why_not:
    the likely reason, said where the claim does not hold everywhere."""
    if not per:
        status = "Not measured in this run"
    elif all(per.values()):
        status = "Reproduced"
    elif not any(per.values()):
        status = "Not reproduced"
    else:
        status = "Partly reproduced: on %s, not on %s" % (
            ", ".join(k for k, v in per.items() if v), ", ".join(k for k, v in per.items() if not v))
    shown = per and not all(per.values()) and why_not
    CLAIMS.append((section, paper, status, why_not if shown else ""))
    if shown:
        detail += " " + why_not
    return "*Paper: %s* **%s.** %s" % (paper, status, detail if per else "")


def fig5_section(rows, out):
    f5 = [r for r in rows if r["exp"] == "fig5" and r["prio"] == "all"]
    out.append("## Figure 5: throughput and latency against connections\n")
    out.append("Each connection sends a 15×15 matrix every 100 ms (offered load: connections × 10 "
               "req/s) for the run's duration, measured after all connections are set up. Per "
               "model: achieved req/s (and why, where the point is not held: refused, errors, "
               "wrong answers, or late, i.e. below 95% of the offered load because the server "
               "cannot keep up), and the latency from sending a request to the first byte of its "
               "answer, p50 and p99 in ms (at a few connections a run has only a hundred "
               "requests or so, and one hiccup of the shared host sets its p99). "
               "![Figure 5](eval-fig5.png)\n")
    for smp in smps_of(f5):
        out.append("### %d hart%s\n" % (smp, "" if smp == 1 else "s"))
        head = "| conns | offered req/s |" + "".join(
            " %s req/s | p50 ms | p99 ms |" % m.upper() for m in MODELS)
        out.append(head)
        out.append("|" + "---|" * (2 + 3 * len(MODELS)))
        for c in conns_of(f5):
            line = "| %d | %d |" % (c, c * 10)
            for m in MODELS:
                line += rps_cells(pick(f5, smp=smp, model=m, conns=c))
            out.append(line)
        out.append("")
    out.append("The paper's claims (section 5.1) beside Coral's, by mean latency where the paper "
               "speaks of latency:\n")
    for claim in fig5_claims(f5):
        out.append("- " + claim)
    out.append("")


def mean_lat(rows, smp, model, conns):
    r = pick(rows, smp=smp, model=model, conns=conns)
    return num(r["mean_us"]) if r else None


def below_from(f5, m1, m2, start):
    """Per hart count: is m1's mean latency below m2's at every count from
    start where either holds the load? And the figures, as text."""
    per, parts, misses = {}, [], []
    for smp in smps_of(f5):
        for c in (c for c in conns_of(f5) if c >= start):
            a, b = mean_lat(f5, smp, m1, c), mean_lat(f5, smp, m2, c)
            ra, rb = pick(f5, smp=smp, model=m1, conns=c), pick(f5, smp=smp, model=m2, conns=c)
            if a is None or b is None or not (held(ra) or held(rb)):
                continue
            per[harts(smp)] = per.get(harts(smp), True) and a < b
            parts.append("%s, %d: %s vs %s ms" % (harts(smp), c, ms(a), ms(b)))
            if a >= b:
                misses.append(a / b - 1 if b else 1)
    return per, parts, misses


def within_noise(misses):
    """The likely reason for exceptions that are all small: noise."""
    if misses and max(misses) < 0.15:
        return ("The exceptions are within %.0f%%, inside the noise of a shared host."
                % (100 * max(misses)))
    return ""


def fig5_claims(f5):
    smps, conns = smps_of(f5), conns_of(f5)
    if not conns:
        return ["no Figure 5 data."]
    lo, claims = conns[0], []

    def add(paper, per, parts, why_not=""):
        claims.append(claim("Figure 5", paper, per, "; ".join(parts) + ".", why_not))

    # 1. Few connections: coroutines cost more than threads.
    per, parts = {}, []
    for smp in smps:
        c, t = mean_lat(f5, smp, "kcuc", lo), mean_lat(f5, smp, "ktut", lo)
        if c is not None and t is not None:
            per[harts(smp)] = c > t
            parts.append("%s at %d connections: KCUC %s ms, KTUT %s ms" % (harts(smp), lo, ms(c), ms(t)))
    add("with few connections coroutines cost more than threads (KCUC's latency above KTUT's; the "
        "paper blames the executor's lock and idle extra cores).", per, parts,
        "The paper's cause needs a second core: on one hart there is no other hart to contend "
        "for the executor's lock or to idle.")
    # 2. From 32 connections KCUT below KTUT.
    per, parts, misses = below_from(f5, "kcut", "ktut", 32)
    add("from 32 connections on, KCUT's latency is below KTUT's (kernel coroutines switch cheaper "
        "than kernel threads).", per, ["KCUT vs KTUT mean latency where either holds the load: "
                                        + "; ".join(parts)], within_noise(misses))
    # 3. KTUC lowest at few connections.
    per, parts = {}, []
    for smp in smps:
        lats = {m: mean_lat(f5, smp, m, lo) for m in MODELS}
        if None not in lats.values():
            best = min(lats, key=lats.get)
            per[harts(smp)] = best == "ktuc"
            parts.append("%s at %d connections: lowest %s (%s ms; KTUC %s ms)" % (
                harts(smp), lo, best.upper(), ms(lats[best]), ms(lats["ktuc"])))
    add("with few connections KTUC (the polling kernel thread) has the lowest latency.", per, parts,
        "The paper's KTUC thread polls without stopping; Coral's poller sleeps until a socket "
        "event or a new call wakes it (kernel/syswork.c), so it has no head start when idle.")
    # 4. From 96 connections KCUC below KTUC.
    per, parts, misses = below_from(f5, "kcuc", "ktuc", 96)
    add("from 96 connections on, KCUC's latency is below KTUC's.", per,
        ["KCUC vs KTUC mean latency where either holds the load: " + "; ".join(parts)],
        within_noise(misses) or "A likely reason: with a second hart KTUC's polling thread runs "
        "beside the server instead of taking turns with it.")
    # 5. At high load the thread models fail first; KCUC holds.
    per, parts = {}, []
    high = [c for c in conns if 96 <= c <= 128] or [max([c for c in conns if c <= 128] or [0])]
    for smp in smps:
        r = {(m, c): pick(f5, smp=smp, model=m, conns=c) for m in ("kcuc", "kcut", "ktut")
             for c in high}
        if None in r.values():
            continue
        # KCUC holds every one of these counts; each thread model fails one.
        per[harts(smp)] = (all(held(r[("kcuc", c)]) for c in high) and
                           all(any(not held(r[(m, c)]) for c in high) for m in ("kcut", "ktut")))
        for c in high:
            parts.append("%s at %d: KCUC %s, KCUT %s, KTUT %s req/s" % (
                harts(smp), c, fmt_rps(r[("kcuc", c)]), fmt_rps(r[("kcut", c)]),
                fmt_rps(r[("ktut", c)])))
    first_late = []
    for smp in smps:
        for m in ("kcut", "ktut"):
            c = next((c for c in conns if pick(f5, smp=smp, model=m, conns=c) is not None
                      and not held(pick(f5, smp=smp, model=m, conns=c))), None)
            if c is not None:
                first_late.append("%s on %s from %d" % (m.upper(), harts(smp), c))
    add("at high load (96 to 128 connections) the thread models (KCUT, KTUT) cannot complete the "
        "test while KCUC can.", per, parts,
        "Where not, Coral's thread models hold more load than the paper's before they fall "
        "behind (%s connections on)." % ", ".join(first_late))
    # 6. Beyond that, KTUC's throughput falls and KCUC's does not.
    per, parts = {}, []
    for smp in smps:
        rc, rk = pick(f5, smp=smp, model="kcuc", conns=conns[-1]), pick(f5, smp=smp, model="ktuc", conns=conns[-1])
        if rc is not None and rk is not None and num(rc["rps"]) is not None and num(rk["rps"]) is not None:
            per[harts(smp)] = num(rc["rps"]) > num(rk["rps"])
            parts.append("%s at %d: KCUC %s, KTUC %s req/s" % (harts(smp), conns[-1], fmt_rps(rc),
                                                              fmt_rps(rk)))
    add("as connections grow further, KTUC's throughput falls markedly while KCUC's does not.",
        per, parts)
    return claims


def sat_section(rows, out):
    sat = [r for r in rows if r["exp"] == "sat" and r["prio"] == "all"]
    out.append("## Saturation: 128 connections in a closed loop\n")
    out.append("Each connection sends its next request as soon as its answer has arrived "
               "(`mclient -i 0`): the most the server answers, per model and core count.\n")
    smps = smps_of(sat)
    out.append("| model |" + "".join(" %d hart%s req/s | p50 ms | p99 ms |"
                                     % (s, "" if s == 1 else "s") for s in smps))
    out.append("|---|" + "---|" * (3 * len(smps)))
    for m in MODELS:
        line = "| %s |" % m.upper()
        for s in smps:
            line += rps_cells(pick(sat, smp=s, model=m))
        out.append(line)
    out.append("")
    per, parts = {}, []
    for s in smps:
        c, t = pick(sat, smp=s, model="kcuc"), pick(sat, smp=s, model="ktut")
        if c and t and num(c["rps"]) and num(t["rps"]):
            ratio = num(c["rps"]) / num(t["rps"])
            parts.append("%.2f× on %s" % (ratio, harts(s)))
            per[harts(s)] = ratio >= 1.05
    if len(smps) >= 2:
        s1, s2 = smps[0], smps[-1]
        change = {}
        for m in MODELS:
            a, b = pick(sat, smp=s1, model=m), pick(sat, smp=s2, model=m)
            if a and b and num(a["rps"]) and num(b["rps"]):
                change[m] = (num(a["rps"]), num(b["rps"]))
        fewer = [m for m, (a, b) in change.items() if b < 0.9 * a]
        more = [m for m, (a, b) in change.items() if b > 1.1 * a]
        if fewer:
            out.append("On %s %s serve%s fewer requests than on %s (%s): the harts share two host "
                       "cores with QEMU's network thread, the client and other work, and one "
                       "executor lock serves all harts (issue 13: two harts must be faster than "
                       "one).%s\n" % (
                           harts(s2), ", ".join(m.upper() for m in fewer), "s" if len(fewer) == 1
                           else "", harts(s1), "; ".join("%s %.0f → %.0f" % (m.upper(), *change[m])
                                                         for m in fewer),
                           (" %s gain%s (%s), likely because a hart is free for %s kernel work."
                            % (", ".join(m.upper() for m in more), "s" if len(more) == 1 else "",
                               "; ".join("%.0f → %.0f" % change[m] for m in more),
                               "its polling thread's" if more == ["ktuc"] else "the"))
                           if more else ""))
    out.append(claim("Saturation", "(section 7) coroutines give 1.05× to 3.93× the throughput of "
                     "threads (KCUC vs KTUT).", per,
                     "KCUC/KTUT at saturation: " + ", ".join(parts) + ".") + "\n")


def prio_rows(rows, exp, smp, interval):
    return sorted([r for r in rows if r["exp"] == exp and int(r["smp"]) == smp
                   and int(r["interval_ms"]) == interval and r["prio"] != "all"],
                  key=lambda r: int(r["prio"]))


def harts(n):
    return "%d hart%s" % (n, "" if n == 1 else "s")


def prio_runs(rows, exp):
    """(smp, interval, per-priority rows, heading) of each run of exp with priorities."""
    for smp in smps_of(rows):
        for interval in (50, 0):
            pr = prio_rows(rows, exp, smp, interval)
            if pr:
                yield smp, interval, pr, "%s, %s" % (harts(smp), "every 50 ms" if interval
                                                     else "closed loop")


def fig6_section(rows, out):
    f6 = [r for r in rows if r["exp"] == "fig6"]
    out.append("## Figure 6: eight priorities (KCUC, 64 connections)\n")
    out.append("Connection i asks for priority i mod 8 in its handshake. Coral's user priorities "
               "are 1..7 (0 is the kernel's, user/matrixd.h), so the client's priorities 0 and 1 "
               "both get matrixd's best, 1; 2..7 map to themselves. Per priority: achieved req/s, "
               "p50 and p99 latency in ms, at one request every 50 ms and in a closed loop. "
               "![Figure 6](eval-fig6.png)\n")
    ratios = {}
    for smp, interval, pr, heading in prio_runs(f6, "fig6"):
        all_row = pick(f6, smp=smp, interval_ms=interval, prio="all")
        out.append("**%s** (all: %s req/s%s)\n" % (
            heading, "%.0f" % (num(all_row["rps"]) or 0),
            "; " + why(all_row) if all_row and why(all_row) else ""))
        out.append("| prio |" + "".join(" %s |" % r["prio"] for r in pr))
        out.append("|---|" + "---|" * len(pr))
        out.append("| req/s |" + "".join(" %.0f |" % (num(r["rps"]) or 0) for r in pr))
        out.append("| p50 ms |" + "".join(" %s |" % ms(r["p50_us"]) for r in pr))
        out.append("| p99 ms |" + "".join(" %s |" % ms(r["p99_us"]) for r in pr))
        out.append("")
        p0, p7 = num(pr[0]["p99_us"]), num(pr[-1]["p99_us"])
        if p0 and p7 and int(pr[-1]["answered"] or 0):
            ratios[(smp, interval)] = p0 / p7
    for smp in smps_of(f6):
        slow = pick(f6, smp=smp, interval_ms=50, prio="all")
        sat = pick(f6, smp=smp, interval_ms=0, prio="all")
        if slow and sat and num(slow["rps"]) and num(sat["rps"]) and num(sat["rps"]) > 1.5 * num(slow["rps"]):
            out.append("On %s one request every 50 ms (%.0f req/s) is far below what Coral "
                       "serves in the closed loop (%.0f req/s): the harts are mostly idle and a "
                       "request seldom waits behind another, whatever its priority. The paper's "
                       "100 MHz FPGA was saturated by that load; the closed loop is Coral's "
                       "comparable condition.\n" % (harts(smp), num(slow["rps"]), num(sat["rps"])))
            break
    out.append("p99(prio 0) / p99(prio 7): " + ", ".join(
        "%s on %s: %.3g" % ("every 50 ms" if i else "closed loop", harts(s), v)
        for (s, i), v in sorted(ratios.items())) + ".\n")
    per, parts = {}, []
    for smp, interval, pr, heading in prio_runs(f6, "fig6"):
        if interval == 0 and (smp, 0) in ratios:
            per[harts(smp)] = ratios[(smp, 0)] < 0.5 and num(pr[0]["rps"]) > num(pr[-1]["rps"])
            parts.append("%s: p99(prio 0)/p99(prio 7) = %.3g, %s against %s req/s" % (
                harts(smp), ratios[(smp, 0)], "%.0f" % num(pr[0]["rps"]), "%.0f" % num(pr[-1]["rps"])))
    out.append(claim("Figure 6", "under limited resources higher priorities get higher throughput "
                     "and lower latency, and the highest priority stays best as cores are added.",
                     per, "In the closed loop " + "; ".join(parts) + ".") + "\n")
    low = {}
    for smp in smps_of(f6):
        pr = prio_rows(f6, "fig6", smp, 0)
        if pr:
            low[smp] = (num(pr[-1]["rps"]) or 0, num(pr[-1]["p99_us"]))
    per, detail = {}, ""
    if len(low) >= 2:
        s1, s2 = sorted(low)[0], sorted(low)[-1]
        per["%d → %d harts" % (s1, s2)] = low[s2][0] > low[s1][0]
        detail = ("Priority 7 in the closed loop: %.0f req/s (p99 %s ms) on %s, %.0f (p99 %s ms) "
                  "on %s." % (low[s1][0], ms(low[s1][1]), harts(s1), low[s2][0], ms(low[s2][1]),
                              harts(s2)))
    out.append(claim("Figure 6", "as cores are added, the low priorities get more throughput and "
                     "lower latency too.", per, detail, added_capacity(f6, "fig6")) + "\n")


def fig7_section(rows, cdf, out):
    f7 = [r for r in rows if r["exp"] == "fig7"]
    out.append("## Figure 7: latency distribution per priority (KCUC, 64 connections, 4 priorities)\n")
    out.append("Connection i asks for priority i mod 4 (matrixd's 1, 1, 2, 3: see Figure 6). The "
               "CDF of every request's latency per priority is in eval-fig7.png (from the per-request "
               "CSV, build/eval/fig7_*.csv); the table gives p50, p90, p99 and max in ms. "
               "![Figure 7](eval-fig7.png)\n")
    spread = {}
    for smp, interval, pr, heading in prio_runs(f7, "fig7"):
        out.append("**%s**\n" % heading)
        out.append("| prio | req/s | p50 ms | p90 ms | p99 ms | max ms |")
        out.append("|---|---|---|---|---|---|")
        for r in pr:
            out.append("| %s | %.0f | %s | %s | %s | %s |" % (
                r["prio"], num(r["rps"]) or 0, ms(r["p50_us"]), ms(r["p90_us"]),
                ms(r["p99_us"]), ms(r["max_us"])))
        out.append("")
        if interval == 0:
            spread[smp] = [(num(r["p50_us"]), num(r["p99_us"])) for r in pr]
    per, parts = {}, []
    for smp, v in sorted(spread.items()):
        if all(a is not None and b is not None for a, b in v):
            per[harts(smp)] = v[0][1] < v[-1][1] and (v[0][1] - v[0][0]) < (v[-1][1] - v[-1][0])
            parts.append("%s: prio 0 p50–p99 %s–%s ms, prio 3 %s–%s ms" % (
                harts(smp), ms(v[0][0]), ms(v[0][1]), ms(v[-1][0]), ms(v[-1][1])))
    out.append(claim("Figure 7", "high priorities have a low and concentrated latency, low "
                     "priorities a high and scattered one.", per,
                     "In the closed loop " + "; ".join(parts) + ".") + "\n")
    per, parts = {}, []
    if len(spread) >= 2:
        s1, s2 = sorted(spread)[0], sorted(spread)[-1]
        for p, (a, b) in enumerate(zip(spread[s1], spread[s2])):
            if a[1] is not None and b[1] is not None:
                per["prio %d" % p] = b[1] < a[1]
                parts.append("prio %d p99 %s → %s ms" % (p, ms(a[1]), ms(b[1])))
    out.append(claim("Figure 7", "with more cores the latency of every priority falls and "
                     "concentrates.", per, "In the closed loop, %s: " % (
                         " → ".join(harts(s) for s in sorted(spread))) + "; ".join(parts) + ".",
                     added_capacity(f7, "fig7")) + "\n")


def table3_section(mem, machine, out):
    out.append("## Table 3: connections in the paper's memory budget\n")
    out.append(
        "The paper's kernel gives its kernel heap 8 MiB, its kernel frames (page tables, thread "
        "stacks) 26 MiB and the user heap 2 MiB: 36 MiB in all. Coral has one page pool for all "
        "of these (kernel/palloc.c): kmalloc takes its slabs from it, and so do page tables, "
        "stackful kernel coroutines (16 KiB stacks) and every user page (heap through brk, "
        "stacks). No kernel argument caps a part of it; the pool is what RAM holds beyond the "
        "kernel image. So the budget is set with QEMU's `-m`, found by a probe boot "
        "(scripts/eval.sh: the pages OpenSBI, the kernel image and a running init take at "
        "64 MiB, added to the 36 MiB): `-m %s` here, %s pages in the pool. One hart, bootargs "
        "`nofile=16384`, so memory, not descriptors, ends the count. "
        "mclient opens connections (`--until-refused --requests 1 --ramp 1`) until matrixd "
        "refuses one, each accepted connection gets one request and its answer, and while all "
        "are held open the kernel's counters are read through QEMU's gdb stub "
        "(scripts/eval-kmem.gdb): palloc's free pages, kmalloc's slab and large pages, and "
        "matrixd's brk. (The console monitor's `stats` prints the same kernel counters, but it "
        "cannot run beside a `user=` boot (kernel/job.c); the `kstat` system call has them too, "
        "but matrixd prints them only at its baseline and when idle; and no counter gives one "
        "process's pages, so its heap is read from its struct proc.) matrixd runs with `-n 15`: its parser sized for the test's 15×15 "
        "requests instead of its default 32×32 (which costs about 15 KiB more per connection). "
        "Where matrixd accepts more connections than it can serve, the largest count whose "
        "connections all get their answer is found by bisection, a fresh boot per try, and the "
        "memory per connection is measured there: the difference to the baseline (matrixd "
        "listening, no connection) divided by the connections held.\n"
        % (machine.get("budget_mem", "?"), mem[0].get("total_pages", "?") if mem else "?"))
    out.append("| model | accepted until refused | what refused | of those answered | "
               "all answered at most | pool per conn | kernel heap per conn | user heap per conn | "
               "other pages per conn | pool left | paper |")
    out.append("|---|" + "---|" * 10)
    got = {}
    for m in MODELS:
        r = pick(mem, model=m)
        paper = PAPER_MAX.get(m)
        paper_s = ("%d (%.1f KiB each)" % (paper, PAPER_CONN_BYTES[m] / 1024.0)) if paper else "–"
        if r is None:
            out.append("| %s | not measured |" % m.upper() + " |" * 8 + " %s |" % paper_s)
            continue
        acc = int(num(r["accepted"]) or 0)
        limit = int(num(r["limit"]) or 0)
        left_acc = num(r["accept_hold_free_pages"])
        if not acc:
            stop = r["note"] or "no connection accepted"
        elif acc >= limit:
            stop = "matrixd's limit: %d connections%s" % (
                limit, " of 3 threads each" if m in ("kcut", "ktut") else "")
        elif left_acc is not None and left_acc < 0.01 * (num(r["total_pages"]) or 1):
            stop = "memory: %d pages left in the pool" % left_acc
        else:
            stop = "matrixd refused connection %d" % (acc + 1)
        if r["note"] and acc:
            stop += "; " + r["note"]
        answered = "%s%s%s" % (r["accept_answered"] or "–",
                               "" if str(r["accept_errors"]) in ("0", "") else
                               ", %s closed by the server" % r["accept_errors"],
                               "" if str(r["accept_wrong"]) in ("0", "") else
                               ", %s wrong" % r["accept_wrong"])
        held_n = int(num(r["held"]) or 0)
        if not held_n or num(r["hold_free_pages"]) is None or num(r["base_free_pages"]) is None:
            out.append("| %s | %s | %s | %s | %s | | | | | | %s |" % (
                m.upper(), acc or "–", stop, answered, held_n or "none", paper_s))
            continue
        used = (num(r["base_free_pages"]) - num(r["hold_free_pages"])) * PAGE / held_n
        heap = (num(r["hold_heap_pages"]) - num(r["base_heap_pages"])) * PAGE / held_n
        uheap = ((num(r["hold_user_heap"]) or 0) - (num(r["base_user_heap"]) or 0)) / held_n
        other = used - heap - uheap
        left = num(r["hold_free_pages"]) * PAGE
        got[m] = (held_n, used, left, acc)
        out.append("| %s | %d | %s | %s | %d | %.1f KiB | %.1f KiB | %.1f KiB | %.1f KiB | %.1f MiB | %s |"
                   % (m.upper(), acc, stop, answered, held_n, used / 1024, heap / 1024,
                      uheap / 1024, other / 1024, left / 1048576, paper_s))
    out.append("")
    for m in MODELS:
        r = pick(mem, model=m)
        if r is None or not int(num(r["accept_errors"]) or 0):
            continue
        out.append("%s: matrixd accepted %s connections, but only %s of them got an answer; it "
                   "closed the other %s on their first request, when a malloc failed (the pool "
                   "had %s pages left). It accepts a connection when it can allocate its "
                   "coroutines, not all that serving a request needs (user/matrixd_uc.c, "
                   "user/matrixd_core.c end a connection that runs out of memory).\n"
                   % (m.upper(), r["accepted"], r["accept_answered"], r["accept_errors"],
                      r["accept_hold_free_pages"] or "?"))
    out.append("A KCUC or KTUC connection is three stackful user coroutines with 2 KiB stacks "
               "from the user heap (user/matrixd_uc.c; an idle one holds no receive or parse "
               "buffer, and at most 64 requests are in flight at once, matrixd -F), where the "
               "paper's are stackless (120, 80 and 64 bytes); a KCUT or KTUT connection is three user threads (their stacks from "
               "the user heap too) and, while they wait, stackful kernel coroutines (16 KiB "
               "stacks, in \"other\").\n")
    ts = next((r["thread_struct_bytes"] for r in mem if r.get("thread_struct_bytes")), "")
    out.append(
        "Kernel heap = kmalloc's slab and large pages; user heap = matrixd's brk; other = the "
        "rest of the pages the connections took: stacks of stackful kernel coroutines, page "
        "tables, user stacks outside the heap. The per-thread kernel state (`struct thread`, "
        "%s bytes each, allocated when a thread is first created) is in the kernel heap, so "
        "the UT models' three threads per connection are counted there.\n"
        % (ts or "?"))
    parts = []
    for m in MODELS:
        if m in got:
            conn, used, left, _ = got[m]
            fit = int(conn + left / used) if used > 0 else conn
            parts.append("%s: %d held, %.1f KiB each; the pool left would hold about %d in all"
                         % (m.upper(), conn, used / 1024, fit))
    if parts:
        out.append("If matrixd's own limits were lifted, memory alone would allow (computed from "
                   "the measured cost, not measured): " + "; ".join(parts) + ".\n")
    r = pick(mem, model="kcuc")
    if "kcuc" in got and num(r["hold_user_heap"]) is not None:
        uheap = (num(r["hold_user_heap"]) - (num(r["base_user_heap"]) or 0)) / got["kcuc"][0]
        if uheap > 0:
            out.append("Why one pool and not the paper's three parts: with its split taken "
                       "literally, a 2 MiB user heap would hold only about %d KCUC connections on "
                       "Coral (%.1f KiB of user heap each), because Coral's user coroutines and "
                       "threads keep their stacks in the user heap (the paper's note under Table "
                       "3: its thread stacks come out of the kernel frames).\n"
                       % (2 * 1048576 // uheap, uheap / 1024))
    if "kcuc" in got and "ktut" in got:
        (c_n, c_used, c_left, _), (t_n, t_used, t_left, t_acc) = got["kcuc"], got["ktut"]
        t_fit = int(t_n + t_left / t_used) if t_used > 0 else t_n
        capped = t_acc >= int(num(pick(mem, model="ktut")["limit"]) or UT_LIMIT)
        ok = c_n > (t_fit if capped else t_n) and c_used < t_used
        detail = ("Coral holds %d KCUC connections and %d KTUT ones%s; a KTUT connection costs "
                  "%.1f KiB of the pool, a KCUC one %.1f KiB (%.1f×)."
                  % (c_n, t_n, " (stopped by matrixd's thread limit with %.1f MiB of the pool "
                     "left, which by the measured cost would hold about %d: %.1f× fewer than KCUC)"
                     % (t_left / 1048576, t_fit, c_n / max(t_fit, 1)) if capped else
                     " (%.1f×)" % (c_n / max(t_n, 1)), t_used / 1024, c_used / 1024,
                     t_used / max(c_used, 1)))
        out.append(claim("Table 3", "in this budget KCUC holds 385 connections and KTUT 186 "
                         "(2.1×), because a thread connection needs two 16 KiB stacks per thread.",
                         {"1 hart": ok}, detail) + "\n")


# ---- plots ----

def gp_escape(s):
    return s.replace('"', '\\"')


def write_dat(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def plots(rows, cdf, d, docdir):
    """Writes gnuplot data and scripts into d and renders the PNGs into docdir."""
    scripts = []
    # Figure 5: rows = harts; left throughput, right latency.
    f5 = [r for r in rows if r["exp"] == "fig5" and r["prio"] == "all" and num(r["rps"]) is not None]
    smps = smps_of(f5)
    if f5:
        for s in smps:
            for m in MODELS:
                pts = sorted((int(r["conns"]), r) for r in f5 if int(r["smp"]) == s and r["model"] == m)
                write_dat(os.path.join(d, "fig5_smp%d_%s.dat" % (s, m)),
                          ["%d %s %s %s %s" % (c, r["rps"], (num(r["p50_us"]) or 0) / 1000,
                                               (num(r["p99_us"]) or 0) / 1000,
                                               (num(r["mean_us"]) or 0) / 1000) for c, r in pts])
        g = ["set terminal pngcairo size 1200,%d font ',10'" % (420 * len(smps)),
             "set output '%s'" % os.path.join(docdir, "eval-fig5.png"),
             "set multiplot layout %d,2 title 'Figure 5 on Coral: 15x15 every 100 ms per connection'"
             % len(smps), "set logscale x 2", "set key top left", "set grid"]
        for s in smps:
            plot = ", ".join("'%s' u 1:2 w lp lc %d t '%s'" % (
                os.path.join(d, "fig5_smp%d_%s.dat" % (s, m)), i + 1, m.upper())
                for i, m in enumerate(MODELS))
            g += ["set title '%d hart%s: throughput'" % (s, "" if s == 1 else "s"),
                  "set xlabel 'connections'", "set ylabel 'req/s'", "set logscale y 10",
                  "plot x*10 w l dt 2 lw 2 lc 'gray' t 'offered', " + plot]
            lat = ", ".join("'%s' u 1:4 w lp lc %d t '%s p99', '%s' u 1:3 w l dt 2 lc %d t '%s p50'" % (
                os.path.join(d, "fig5_smp%d_%s.dat" % (s, m)), i + 1, m.upper(),
                os.path.join(d, "fig5_smp%d_%s.dat" % (s, m)), i + 1, m.upper())
                for i, m in enumerate(MODELS))
            g += ["set title '%d hart%s: latency (p50 dashed, p99 solid)'" % (s, "" if s == 1 else "s"),
                  "set ylabel 'ms'", "set logscale y 10", "plot " + lat]
        g.append("unset multiplot")
        scripts.append(("fig5", g))
    # Figure 6: rows = harts, columns = load; boxes = req/s, points = latency (y2, log).
    f6 = [r for r in rows if r["exp"] == "fig6" and r["prio"] != "all"]
    if f6:
        s6 = smps_of(f6)
        g = ["set terminal pngcairo size 1200,%d font ',10'" % (400 * len(s6)),
             "set output '%s'" % os.path.join(docdir, "eval-fig6.png"),
             "set multiplot layout %d,2 title 'Figure 6 on Coral: KCUC, 64 connections, priority i mod 8'"
             % len(s6), "set style fill solid 0.4", "set boxwidth 0.6", "set grid y",
             "set xlabel 'priority (0 = best)'", "set ylabel 'req/s'", "set y2label 'latency ms'",
             "set logscale y2 10", "set ytics nomirror", "set y2tics", "set xrange [-0.5:7.5]",
             "set key top center horizontal"]
        for s in s6:
            for interval in (50, 0):
                pr = prio_rows(rows, "fig6", s, interval)
                fn = os.path.join(d, "fig6_smp%d_i%d.dat" % (s, interval))
                write_dat(fn, ["%s %s %s %s" % (r["prio"], r["rps"], max(num(r["p50_us"]) or 0, 1) / 1000,
                                                max(num(r["p99_us"]) or 0, 1) / 1000) for r in pr])
                top = max([num(r["rps"]) or 0 for r in pr] + [1])
                g += ["set title '%d hart%s, %s'" % (s, "" if s == 1 else "s",
                                                     "every 50 ms" if interval else "closed loop"),
                      "set yrange [0:%g]" % (top * 1.35),   # room for the key above the bars
                      "plot '%s' u 1:2 w boxes t 'req/s', '' u 1:3 axes x1y2 w lp pt 6 t 'p50', "
                      "'' u 1:4 axes x1y2 w lp pt 7 t 'p99'" % fn]
        g.append("unset multiplot")
        scripts.append(("fig6", g))
    # Figure 7: CDF per priority; rows = load, columns = harts.
    if cdf:
        s7 = sorted({int(r["smp"]) for r in cdf})
        loads = [i for i in (50, 0) if any(int(r["interval_ms"]) == i for r in cdf)]
        g = ["set terminal pngcairo size %d,%d font ',10'" % (600 * len(s7), 400 * len(loads)),
             "set output '%s'" % os.path.join(docdir, "eval-fig7.png"),
             "set multiplot layout %d,%d title 'Figure 7 on Coral: latency CDF per priority "
             "(KCUC, 64 connections, priority i mod 4)'" % (len(loads), len(s7)),
             "set logscale x 10", "set xlabel 'latency ms'", "set ylabel 'fraction of requests'",
             "set yrange [0:1]", "set key bottom right", "set grid"]
        for interval in loads:
            for s in s7:
                parts = []
                for p in sorted({int(r["prio"]) for r in cdf}):
                    pts = [r for r in cdf if int(r["smp"]) == s and int(r["interval_ms"]) == interval
                           and int(r["prio"]) == p]
                    if not pts:
                        continue
                    fn = os.path.join(d, "fig7_smp%d_i%d_p%d.dat" % (s, interval, p))
                    write_dat(fn, ["%s %s" % (max(num(r["latency_us"]), 1) / 1000, r["fraction"])
                                   for r in pts])
                    parts.append("'%s' u 1:2 w l lw 2 t 'prio %d'" % (fn, p))
                g += ["set title '%d hart%s, %s'" % (s, "" if s == 1 else "s",
                                                     "every 50 ms" if interval else "closed loop"),
                      "plot " + (", ".join(parts) if parts else "NaN t ''")]
        g.append("unset multiplot")
        scripts.append(("fig7", g))
    failed = []
    for name, g in scripts:
        path = os.path.join(d, name + ".gp")
        write_dat(path, g)
        r = subprocess.run(["gnuplot", path], capture_output=True, text=True)
        if r.returncode != 0:
            failed.append("%s: %s" % (name, r.stderr.strip()[:300]))
    return failed


def summary(rows, mem, out):
    """The headline figures and every claim's status (the sections fill CLAIMS)."""
    out.append("## Summary\n")
    sat = [r for r in rows if r["exp"] == "sat" and r["prio"] == "all"]
    if sat:
        out.append("- **Saturation** (128 connections, closed loop), req/s on " + " / ".join(
            harts(s) for s in smps_of(sat)) + ": " + "; ".join(
            "%s %s" % (m.upper(), " / ".join(
                "%.0f" % num(r["rps"]) if r and num(r["rps"]) is not None else "–"
                for r in (pick(sat, smp=s, model=m) for s in smps_of(sat))))
            for m in MODELS) + ".")
    f6 = [r for r in rows if r["exp"] == "fig6"]
    ratios = []
    for smp, interval, pr, heading in prio_runs(f6, "fig6"):
        p0, p7 = num(pr[0]["p99_us"]), num(pr[-1]["p99_us"])
        if p0 and p7:
            ratios.append("%.3g (%s)" % (p0 / p7, heading))
    if ratios:
        out.append("- **Priorities** (KCUC, 64 connections in 8 priorities): p99(prio 0) / "
                   "p99(prio 7) = " + ", ".join(ratios) + ".")
    held_ = ["%s %s" % (r["model"].upper(), r["held"] or "–") for r in mem]
    if held_:
        out.append("- **Memory budget** (36 MiB pool, Table 3): connections that each got their "
                   "answer: " + ", ".join(held_) + " (the paper: KCUC 385, KTUT 186).")
    out.append("")
    out.append("| section | the paper's claim | on Coral | where not, the likely reason |")
    out.append("|---|---|---|---|")
    for section, paper, status, why_not in CLAIMS:
        out.append("| %s | %s | %s | %s |" % (section, paper.rstrip("."), status, why_not or "–"))
    out.append("")


def cmd_report(a):
    rows = read_rows(os.path.join(a.dir, "results.csv"))
    cdf = read_rows(os.path.join(a.dir, "cdf.csv"))
    mem = read_rows(os.path.join(a.dir, "table3.csv"))
    machine = {}
    try:
        with open(os.path.join(a.dir, "machine.txt")) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition("=")
                machine[k] = v
    except OSError:
        pass
    docdir = os.path.dirname(os.path.abspath(a.doc))
    out = ["# The COPS paper's evaluation on Coral\n"]
    out.append("Produced by `make eval` (scripts/eval.sh%s) on %s, in %s: QEMU %s, machine virt, "
               "TCG, no `-icount` (wall-clock time), 256 MiB unless said otherwise, virtio-net on "
               "QEMU's user network, the host client on the same machine (`build/host/mclient`). "
               "Host: %s, %s cores, %s; load average (1, 5, 15 min) %s at the start and %s at "
               "the end of the run (the host also ran other work: QEMU's harts did not have its "
               "cores to themselves). Commit %s. Raw data: `build/eval/` (results.csv, cdf.csv, "
               "table3.csv, every mclient JSON)."
               % (", QUICK=1: fewer points, %s s each" % machine.get("duration_s", "?")
                  if str(machine.get("quick", a.quick)) == "1" else "", machine.get("date", "?"),
                  "%dm%02ds" % divmod(int(machine.get("elapsed_s", 0) or 0), 60),
                  machine.get("qemu", "?"), machine.get("cpu", "?"), machine.get("host_cores", "?"),
                  machine.get("kernel", "?"), machine.get("load_start", "?"),
                  machine.get("load_end", "?"), machine.get("commit", "?")))
    out.append("")
    out.append("**How to read it.** The paper ran on a 4-core Rocket at 100 MHz on an FPGA; Coral "
               "runs here on QEMU, whose harts are host threads. `-smp 1` and `-smp 2` are the "
               "\"amount of cores\"; the host has two cores, which QEMU's harts share with its "
               "network thread and with the client, so on 2 harts the machine is oversubscribed "
               "and its figures are noisier. Compare the models with each other and the trends "
               "with the paper's, not the absolute numbers. Latency is from sending a request to "
               "the first byte of its answer, as the paper measures it. The models "
               "(user/matrixd.c): KCUC = user coroutines + async calls, a kernel coroutine per "
               "waiting call; KTUC = user coroutines + async calls served by one polling kernel "
               "thread; KCUT = three user threads per connection, sync calls, a kernel coroutine "
               "per waiting call; KTUT = the same with a kernel thread (stackful coroutine, 16 KiB "
               "stack) per waiting call.\n")
    body = []
    fig5_section(rows, body)
    sat_section(rows, body)
    fig6_section(rows, body)
    fig7_section(rows, cdf, body)
    table3_section(mem, machine, body)
    summary(rows, mem, out)
    out += body
    if not a.no_plots:
        failed = plots(rows, cdf, a.dir, docdir)
        for f in failed:
            print("eval-report: gnuplot failed: " + f, file=sys.stderr)
    with open(a.doc, "w") as f:
        f.write("\n".join(out).rstrip("\n") + "\n")
    print("eval-report: wrote %s" % a.doc, file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for h in ("header", "cdf-header", "mem-header"):
        sub.add_parser(h)
    p = sub.add_parser("row")
    p.add_argument("--exp", required=True)
    p.add_argument("--smp", type=int, required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--conns", type=int, required=True)
    p.add_argument("--interval", type=int, required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--client-out", help="mclient's output: its first complaint says why")
    p.add_argument("--note", default="")
    p = sub.add_parser("cdf")
    p.add_argument("--smp", type=int, required=True)
    p.add_argument("--interval", type=int, required=True)
    p.add_argument("--csv", required=True)
    p = sub.add_parser("mem")
    p.add_argument("--model", required=True)
    p.add_argument("--accept", required=True, help="PREFIX of the run until refused "
                   "(PREFIX.json, PREFIX.base.txt, PREFIX.hold.txt)")
    p.add_argument("--best", help="PREFIX of the largest run whose connections all got answers")
    p.add_argument("--log", required=True)
    p.add_argument("--note", default="")
    p = sub.add_parser("get")
    p.add_argument("--json", required=True)
    p.add_argument("--key", required=True)
    p = sub.add_parser("all-answered")
    p.add_argument("--json", required=True)
    p.add_argument("--conns", type=int, required=True)
    p = sub.add_parser("report")
    p.add_argument("--dir", required=True)
    p.add_argument("--doc", required=True)
    p.add_argument("--quick", default="0")
    p.add_argument("--no-plots", action="store_true")
    a = ap.parse_args()
    if a.cmd == "header":
        header(RESULT_FIELDS)
    elif a.cmd == "cdf-header":
        header(CDF_FIELDS)
    elif a.cmd == "mem-header":
        header(MEM_FIELDS)
    else:
        {"row": cmd_row, "cdf": cmd_cdf, "mem": cmd_mem, "get": cmd_get,
         "all-answered": cmd_all_answered, "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    main()
