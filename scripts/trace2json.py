#!/usr/bin/env python3
"""The host side of the scheduler timeline: converts a scheduler trace into
Chrome trace-event JSON (opens in Perfetto, ui.perfetto.dev, or
chrome://tracing) and, with --png, a timeline drawn by gnuplot.

  trace2json.py TRACE [-o OUT.json] [--elf KERNEL] [--png OUT.png [--window START:LEN]] [--check]

TRACE is either a console log holding the kernel's binary dump (kernel/trace.c:
TRACE-BEGIN .. TRACE-END, decoded by scripts/tracedump.py into the events
below, with syscall and upost besides), or the text form below (hand-made
traces, tests/trace/prodcons.trace). The text form: one event per line; blank lines and lines starting with '#' are
skipped, and so is anything else that does not start with "T " (console
noise around the dump). A header line gives the timebase:

  TRACE timebase=HZ                       (ticks per second of TS; 10000000 on QEMU virt)
  T HART TS run cid=C prio=P who=kernel|PID[:TID]   a coroutine is dispatched
  T HART TS end cid=C why=done|yield|block          ... and gives the hart back
  T HART TS uenter pid=P tid=T           a switching coroutine enters a user thread
  T HART TS uexit pid=P tid=T            ... and is back in the kernel
  T HART TS submit pid=P cid=C call=NAME an async system call is handed to the kernel
  T HART TS complete pid=P cid=C res=R   ... and its result is posted to the ring
  T HART TS uintr pid=P                  a user interrupt is delivered
  T HART TS irq kind=timer|soft|dev [irq=N]   an interrupt arrives
  T HART TS syscall pid=P tid=T call=NAME async=0|1 prio=P   a system call arrives
  T HART TS upost pid=P tid=T             a user interrupt is posted to a thread

HART is the hart's index, TS its time (rdtime ticks), in order per hart.
In the JSON each hart is a thread of one process ("Coral"); run/end become
duration events named by who and cid ("kernel c12", "pid 3 c5"), uenter/uexit
a nested "user pid:tid" slice, submit/complete an async slice from the hart
that submitted to the one that completed, uintr and irq instant events.
Records a wrapped buffer lost are repaired so that every slice nests: an end
with no open run is dropped, a run while one is open closes it first, and
whatever is open at the end is closed at the last timestamp; the counts are in
the JSON's "otherData" and on stderr. --check verifies the output instead of
trusting it: valid JSON, begin/end events that nest per hart, timestamps that
never go back per hart, and, for a dump, no record missing (exit status 1
otherwise). Records the kernel's rings overwrote are reported per hart
("lost"); the JSON's times are microseconds since the trace started.
--window START:LEN draws only that stretch of the PNG (microseconds);
--window busiest:LEN the stretch of that length in which most slices begin.
"""
import argparse
import json
import os
import subprocess
import sys

import tracedump

KINDS = ("run", "end", "uenter", "uexit", "submit", "complete", "uintr", "irq", "syscall",
         "upost")


def parse(lines, elf=None):
    """(timebase, t0, [(hart, ts, kind, {key: value})], dump info or None)
    from the trace's lines; elf names a dump's coroutine functions."""
    lines = list(lines)
    if any(line.startswith("TRACE-BEGIN") for line in lines):
        return tracedump.parse_dump(lines, elf)
    timebase, events = 10_000_000, []
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if line.startswith("TRACE "):
            for kv in line.split()[1:]:
                k, _, v = kv.partition("=")
                if k == "timebase":
                    timebase = int(v)
            continue
        if not line.startswith("T "):
            continue
        f = line.split()
        if len(f) < 4 or f[3] not in KINDS:
            raise ValueError("line %d: not an event: %r" % (n, line))
        args = dict(kv.partition("=")[::2] for kv in f[4:])
        events.append((int(f[1]), int(f[2]), f[3], args))
    return timebase, 0, events, None


def slice_name(a, switchers=()):
    who, cid = a.get("who", "?"), a.get("cid", "?")
    if who != "kernel":
        return "pid " + who + " c" + cid
    if "fn" in a:                          # a dump read with the kernel's symbols
        return a["fn"] + " c" + cid
    return ("switcher" if cid in switchers else "kernel") + " c" + cid


def convert(timebase, events, t0=0):
    """The Chrome trace-event document, and the repairs made. t0: the tick
    that becomes time 0."""
    us = 1e6 / timebase
    # The kernel coroutines that enter user mode are switching coroutines.
    switchers = {a.get("cid") for _, _, kind, a in events if kind == "uenter"}
    out, repairs = [], {"end_without_run": 0, "run_while_open": 0, "uexit_without_uenter": 0,
                        "closed_at_end": 0, "time_went_back": 0}
    harts = sorted({e[0] for e in events})
    for h in harts:
        out.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": h,
                    "args": {"name": "hart %d" % h}})
    out.append({"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "Coral"}})
    stack = {h: [] for h in harts}     # open slices per hart: (kind, name, cid, args)
    last = {h: None for h in harts}
    suspended = {}                     # (pid, tid): the user coroutines open at its uexit
    t_end = 0

    def close(h, ts, kind, cid=None, end_args=None):
        """Close hart h's open slices down to (and including) the last of
        kind (and cid, if given), that one with end_args; returns those above
        it, innermost last."""
        above = []
        while stack[h]:
            k, name, c, args = stack[h].pop()
            out.append({"name": name, "ph": "E", "pid": 0, "tid": h, "ts": ts})
            if k == kind and (cid is None or c == cid):
                if end_args:              # (a viewer merges them into the slice's)
                    out[-1]["args"] = end_args
                return above[::-1]
            above.append((k, name, c, args))
        return above[::-1]

    def begin(h, ts, kind, name, cid, cat, args):
        stack[h].append((kind, name, cid, args))
        out.append({"name": name, "ph": "B", "pid": 0, "tid": h, "ts": ts, "cat": cat,
                    "args": args})

    def is_open(h, kind, cid=None):
        return any(k == kind and (cid is None or c == cid) for k, _, c, _ in stack[h])

    for h, tick, kind, a in events:
        if last[h] is not None and tick < last[h]:
            repairs["time_went_back"] += 1
            tick = last[h]
        last[h] = tick
        ts = round((tick - t0) * us, 3)
        t_end = max(t_end, ts)
        if kind == "run":
            # A kernel coroutine runs alone on its hart; a process's
            # coroutines run inside a user slice (uenter .. uexit).
            if stack[h] and stack[h][-1][0] == "run":
                repairs["run_while_open"] += 1
                close(h, ts, "run")
            begin(h, ts, "run", slice_name(a, switchers), a.get("cid"),
                  "kernel" if a.get("who") == "kernel" else "process",
                  {k: a[k] for k in ("cid", "prio", "who", "fn") if k in a})
        elif kind == "end":
            if not is_open(h, "run", a.get("cid")):
                repairs["end_without_run"] += 1
                continue
            # The end event carries why the coroutine stopped.
            out.append({"name": "why", "ph": "i", "s": "t", "pid": 0, "tid": h, "ts": ts,
                        "args": {"why": a.get("why", "?"), "cid": a.get("cid", "?")}})
            close(h, ts, "run", a.get("cid"))
        elif kind == "uenter":
            key = (a.get("pid"), a.get("tid"))
            begin(h, ts, "user", "user %s:%s" % key, None, "user", dict(a))
            # The thread resumes what it was running when it left user mode.
            for k, name, c, args in suspended.pop(key, []):
                begin(h, ts, k, name, c, "process", dict(args, resumed=1))
        elif kind == "uexit":
            if not is_open(h, "user"):
                repairs["uexit_without_uenter"] += 1
                continue
            # A user coroutine still running is suspended with its thread (a
            # trap, an interrupt): it resumes, unannounced, at the next uenter.
            end_args = {k: a[k] for k in ("prio", "cause") if k in a}
            if "prio" in end_args:        # what the process ran when it trapped
                end_args["user_prio"] = end_args.pop("prio")
            suspended[(a.get("pid"), a.get("tid"))] = close(h, ts, "user", end_args=end_args)
        elif kind in ("submit", "complete"):
            out.append({"name": "syscall", "ph": "b" if kind == "submit" else "e", "cat": "syscall",
                        "id": "%s.%s" % (a.get("pid", "?"), a.get("cid", "?")), "pid": 0,
                        "tid": h, "ts": ts, "args": dict(a)})
        elif kind in ("syscall", "upost"):
            name = ("syscall " + a.get("call", "?") if kind == "syscall"
                    else "upost %s:%s" % (a.get("pid"), a.get("tid")))
            out.append({"name": name, "ph": "i", "s": "t", "cat": kind, "pid": 0, "tid": h,
                        "ts": ts, "args": dict(a)})
        else:   # uintr, irq
            out.append({"name": kind if kind == "uintr" else "irq %s" % a.get("kind", "?"),
                        "ph": "i", "s": "t", "pid": 0, "tid": h, "ts": ts, "args": dict(a)})
    for h in harts:
        if stack[h]:
            repairs["closed_at_end"] += len(stack[h])
            close(h, t_end, stack[h][0][0], stack[h][0][2])
    return {"traceEvents": out, "displayTimeUnit": "ns",
            "otherData": {"timebase": timebase, "repairs": repairs}}, repairs


def check(doc):
    """Problems with a trace-event document: nesting and time order per hart."""
    problems, stack, last = [], {}, {}
    for e in doc["traceEvents"]:
        if e["ph"] == "M":
            continue
        h, ts = e["tid"], e["ts"]
        if ts < last.get(h, ts):
            problems.append("hart %s: time goes back at %s" % (h, ts))
        last[h] = ts
        if e["ph"] == "B":
            stack.setdefault(h, []).append(e["name"])
        elif e["ph"] == "E":
            if not stack.get(h):
                problems.append("hart %s: end of %r with nothing open at %s" % (h, e["name"], ts))
            elif stack[h][-1] != e["name"]:
                problems.append("hart %s: end of %r closes %r at %s" % (h, e["name"], stack[h][-1], ts))
            else:
                stack[h].pop()
    for h, s in stack.items():
        if s:
            problems.append("hart %s: %d slices never end" % (h, len(s)))
    return problems


# Instant events drawn as marks above each hart's bars: (name prefix, label,
# gnuplot point type, colour, height above the hart's line).
MARKS = (("irq timer", "timer interrupt", 9, "black", 0.47),
         ("irq dev", "device interrupt", 7, "dark-violet", 0.47),
         ("irq soft", "IPI (kick)", 6, "gray40", 0.47),
         ("syscall", "system call", 11, "dark-cyan", -0.47),
         ("uintr", "user interrupt delivered", 5, "dark-red", -0.47),
         ("upost", "user interrupt posted", 4, "dark-red", -0.47))


def busiest(doc, length):
    """The start of the stretch of `length` microseconds in which most slices begin."""
    starts = sorted(e["ts"] for e in doc["traceEvents"] if e["ph"] == "B")
    best, best_n, j = 0.0, 0, 0
    for i, t in enumerate(starts):
        while starts[j] < t - length:
            j += 1
        if i - j + 1 > best_n:
            best, best_n = t - length, i - j + 1
    return max(best, 0.0)


def png(doc, path, workdir, window=None):
    """A timeline: one row per hart, a bar per slice coloured by priority (user
    mode gray), each nested slice a thinner bar drawn over its parent, and a
    mark per instant event (interrupts above the bars, system calls and user
    interrupts below). window: (start, length) in microseconds, or None."""
    lo, hi = (window[0], window[0] + window[1]) if window else (float("-inf"), float("inf"))
    rows, marks, open_ = [], {m[0]: [] for m in MARKS}, {}
    for e in doc["traceEvents"]:
        if e["ph"] == "B":
            open_.setdefault(e["tid"], []).append(e)
        elif e["ph"] == "E" and open_.get(e["tid"]):
            depth = len(open_[e["tid"]]) - 1
            b = open_[e["tid"]].pop()
            if e["ts"] < lo or b["ts"] > hi:
                continue
            prio = -1 if b.get("cat") == "user" else int(b.get("args", {}).get("prio", 8))
            rows.append((depth, e["tid"], max(b["ts"], lo), min(e["ts"], hi), prio, b["name"]))
        elif e["ph"] == "i" and lo <= e["ts"] <= hi:
            for m in MARKS:
                if e["name"].startswith(m[0]):
                    marks[m[0]].append((e["ts"], e["tid"] + m[4]))
                    break
    if not rows:
        return "nothing to draw"
    rows.sort()                        # parents first: children are drawn over them
    base = os.path.join(workdir, os.path.basename(path))
    with open(base + ".dat", "w") as f:
        for depth, h, t0, t1, prio, _ in rows:
            half = max(0.4 - 0.1 * depth, 0.05)
            f.write("%g %g %g %g %g %g %d\n" % ((t0 + t1) / 2, h, t0, t1, h - half, h + half,
                                                 prio))
    # Names on the slices wide enough to carry one (a twelfth of the picture).
    t_lo, t_hi = min(r[2] for r in rows), max(r[3] for r in rows)
    labels = ["set label '%s' at %g,%g center front noenhanced font ',8'"
              % (name, (t0 + t1) / 2, h + 0.25 - 0.12 * depth, )
              for depth, h, t0, t1, _, name in rows if t1 - t0 > (t_hi - t_lo) / 12]
    plots = ["'%s.dat' u 1:2:3:4:5:6:7 w boxxyerror lc palette notitle" % base]
    for i, (name, label, pt, colour, _) in enumerate(MARKS):
        if marks[name]:
            with open("%s.mark%d" % (base, i), "w") as f:
                f.writelines("%g %g\n" % xy for xy in marks[name])
            plots.append("'%s.mark%d' u 1:2 w points pt %d ps 0.8 lc '%s' title '%s'"
                         % (base, i, pt, colour, label))
    harts = sorted({r[1] for r in rows})
    span = " (%g to %g us)" % (lo, hi) if window else ""
    with open(base + ".gp", "w") as f:
        f.write("\n".join([
            "set terminal pngcairo size 1400,%d font ',10'" % (200 + 110 * len(harts)),
            "set output '%s'" % path,
            "set title 'Coral scheduler timeline%s: colour = priority (0 best), gray = user "
            "mode, nested slices thinner'" % span,
            "set xlabel 'time since the trace started (us)'",
            "set xrange [%g:%g]" % ((lo, hi) if window else (t_lo, t_hi)),
            "set ytics (%s)" % ", ".join("'hart %d' %d" % (h, h) for h in harts),
            "set yrange [%g:%g]" % (harts[0] - 0.7, harts[-1] + 0.7),
            "set cbrange [-1:8]", "set cblabel 'priority'",
            "set palette defined (-1 'gray60', -0.01 'gray60', 0 'red', 3 'orange', 5 'green', "
            "8 'blue')",
            "set style fill solid 0.9 border lc 'gray20'",
            "set key outside bottom center horizontal"] + labels + [
            "plot " + ", ".join(plots)]) + "\n")
    r = subprocess.run(["gnuplot", base + ".gp"], capture_output=True, text=True)
    return r.stderr.strip() if r.returncode else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("-o", "--out", help="the JSON (default: TRACE with .json)")
    ap.add_argument("--png", help="also draw the timeline (gnuplot)")
    ap.add_argument("--elf", help="the kernel that made a dump (names its coroutines' functions)")
    ap.add_argument("--window", help="START:LEN or busiest:LEN: draw only that stretch "
                    "(microseconds)")
    ap.add_argument("--check", action="store_true",
                    help="verify the JSON written (nesting, order) and the dump (no record missing)")
    a = ap.parse_args()
    with open(a.trace, errors="replace") as f:
        try:
            timebase, t0, events, info = parse(f, a.elf)
        except ValueError as e:
            print("trace2json: %s: %s" % (a.trace, e), file=sys.stderr)
            return 2
    doc, repairs = convert(timebase, events, t0)
    problems = []
    if info:
        # What the rings overwrote is reported, never silent; what the
        # console lost on the way is an error.
        doc["otherData"]["dump"] = info
        for h, hi in sorted(info["harts"].items()):
            print("trace2json: hart %d: %d records written, %d kept, %d lost (ring overflow), "
                  "%d missing" % (h, hi.get("written", 0), hi.get("kept", 0), hi.get("lost", 0),
                                  hi["missing"]), file=sys.stderr)
            if hi["missing"]:
                problems.append("hart %d: %d records missing from the dump" % (h, hi["missing"]))
        if info["bad_lines"]:
            problems.append("%d dump lines unreadable" % info["bad_lines"])
    out = a.out or os.path.splitext(a.trace)[0] + ".json"
    with open(out, "w") as f:
        json.dump(doc, f, indent=0)
    fixed = {k: v for k, v in repairs.items() if v}
    print("trace2json: %d events -> %s%s" % (len(events), out,
                                              " (repaired: %s)" % fixed if fixed else ""),
          file=sys.stderr)
    status = 0
    if a.check:
        with open(out) as f:
            problems += check(json.load(f))
        for p in problems:
            print("trace2json: check: " + p, file=sys.stderr)
        status = 1 if problems else 0
    if a.png:
        window = None
        if a.window:
            start, _, length = a.window.partition(":")
            window = ((busiest(doc, float(length)) if start == "busiest" else float(start)),
                      float(length))
            print("trace2json: png: %g us from %g us" % (window[1], window[0]), file=sys.stderr)
        err = png(doc, a.png, os.path.dirname(os.path.abspath(out)), window)
        if err:
            print("trace2json: png: " + err, file=sys.stderr)
            status = status or 1
    return status


if __name__ == "__main__":
    sys.exit(main())
