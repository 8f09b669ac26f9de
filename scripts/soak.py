#!/usr/bin/env python3
"""The soak run behind `make soak` (scripts/soak.sh starts it).

    soak.py --ports P80,P81,P82,P83 --minutes M [--round S] [--summary FILE]
            [--log LOG] [--mclient PATH] [--checks] [--plant-open-conn] ...
            -- QEMU-COMMAND...      (--help lists every option)

One boot, several servers: init starts matrixd (KCUC, guest port 80) and the
shell; soak.py types three more at the shell, each in another model and with
another way of giving connections priorities, on guest ports 81-83 (the
QEMU command forwards host port Pn to each). Then, round after round (a round
is --round seconds, 60 by default: the progress line comes once a round), it
runs mclient against all four at once, 128 connections in all (each answer is
checked against the client's own product), and tests/net/badinput.py (the
malformed-message cases) against one of them in turn, in the middle of the
load.

The kernel's counters come from the guest: the `kstats` program (user/kstats.c)
typed at the shell prints memory, coroutines, processes, sockets, TCP control
blocks, live timers and the processes' heap pages on one line. They are read
at boot, after a warm-up round (the same load, and bad input on every server:
heaps and caches grow to their working size, which is not a leak; every other
counter must be back at its boot value) and at the end, once every connection
is gone: the end must equal the warm-up's values, looked at again until it
does (connections in TIME_WAIT, servers' idle watches that give up after 15 s)
or --settle seconds pass.

Fails (exit status 1, and a line saying why) on a wrong answer or any
mclient error, a failed bad-input case, a hang (a client, the shell or a
server that does not answer within a generous limit), a kernel panic or a
server that dies, and a counter that does not come back. Prints one progress
line a round, and the counters side by side at the end; --summary writes the
whole result as Markdown (docs/results/soak.md for make soak). Every wait
is for an event (a line on the console, a client's exit), with a wall-clock
limit as a safety net only; the two pauses decide no verdict: bad input
starts two seconds into a round (so that it meets the load), and the
counters are looked at once a second until they are back.
"""
import argparse
import os
import re
import socket
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The servers: guest port, model, how connections get priorities, and the
# load on them (mclient options). 4 x 32 = 128 connections. KCUC and KTUC
# are the coroutine models, KCUT and KTUT the thread ones; priorities come
# from the client's handshake (prio=P) or from the server (-P mod).
# The thread models accept priorities and ignore them (user/matrixd_ut.c), and
# apply the stall rule when the next bytes come (badinput.py --stall lazy).
SERVERS = [
    # port, matrixd options (None: the one init starts), mclient options,
    # badinput.py options, label
    (80, None, ["-c", "32", "-n", "15", "--prio-mod", "8"], [], "KCUC, handshake prio i mod 8"),
    (81, "-m ktuc -P mod", ["-c", "32", "-n", "20"], [], "KTUC, server prio i mod 7"),
    (82, "-m kcut", ["-c", "32", "-n", "10", "--prio", "3"], ["--stall", "lazy"],
     "KCUT, handshake prio 3, which threads ignore"),
    (83, "-m ktut -P mod", ["-c", "32", "-n", "15", "--prio-mod", "4"], ["--stall", "lazy"],
     "KTUT, handshake prio i mod 4, which threads ignore"),
]
# Counters that must come back, and how kstats names them. The caches
# (executor slots, timer heaps) grow once and stay by design; they are shown,
# and the kmalloc figures are compared without them, as every leak test does.
# Likewise the servers' heaps (user memory: umalloc keeps what it frees, so a
# heap grows to its high-water mark and stays): free_pages is shown, and the
# pages are compared as free_pages + heap_pages + kmalloc_pages, the pages
# that would be free if the heaps were given back and kmalloc held nothing.
# kmalloc is left to its exact counters: the same live objects sit on more or
# fewer slab pages from one moment to the next, and a grown cache takes pages
# that are not a leak. A page taken from the page allocator and never given
# back by anyone else (page tables, stacks, buffers) shows in the sum.
COMPARED = ["pages", "kmalloc_live_bytes", "kmalloc_live_objects", "coroutines",
            "procs", "sockets", "tcp_pcbs", "timers"]
GROWS = {  # shown, not compared on their own: why
    "free_pages": "in `pages` (not compared alone)",
    "heap_pages": "user heaps, high-water; in `pages`",
    "kmalloc_pages": "slabs and large runs; in `pages`",
    "cache_bytes": "cache, grows once (not compared)",
    "cache_objects": "cache, grows once (not compared)",
}
SHOWN = COMPARED + list(GROWS)
PAGE = 4096


def page_allowance(start, end):
    """How many pages the sum free + heap + kmalloc pages may differ by
    between start and end without a leak. One thing moves pages that no
    counter holds: page-table pages for the heaps' growth (one per 2 MiB of
    growth, plus one for each server whose heap crossed a 2 MiB boundary),
    and one page besides. A leak that grows with the load passes this in a
    few rounds."""
    heap = max(0, end["heap_pages"] - start["heap_pages"])
    allow = 1
    if heap:
        allow += heap // 512 + len(SERVERS)
    return allow


def counter_ok(k, start, end):
    """Whether counter k at the end is back at its start value: exactly, or
    for the pages within page_allowance."""
    if k != "pages":
        return end[k] == start[k]
    return abs(start[k] - end[k]) <= page_allowance(start, end)


# What make test counts (--checks): one line each, "PASS soak/NAME" or
# "FAIL soak/NAME: why", and one per compared counter.
CHECKS = ["boot", "answers", "bad-input", "no-hang", "guest", "counters"]
# What a healthy run never prints: a kernel panic or fault, a killed server,
# the user runtime's fatal errors, a server that exited (init reaps the one it
# started, the shell reports its background ones).
TROUBLE = re.compile(r"PANIC|KERNEL FAULT|coral: pid \d+ \(matrixd\) killed|cops: |"
                     r"init: reaped pid|sh: background pid \d+ done|matrixd: cannot start")


def wait_until(p, limit):
    """p's exit status, or None (and p killed) if it is still running at monotonic time limit."""
    try:
        return p.wait(max(1, limit - time.monotonic()))
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return None


class Guest:
    """QEMU's console: output collected by a thread, input typed like a person."""

    def __init__(self, cmd, log_path):
        self.log = open(log_path, "wb")
        self.out = b""
        self.lock = threading.Condition()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        fd = self.proc.stdout.fileno()
        while True:
            chunk = os.read(fd, 65536)
            with self.lock:
                if not chunk:
                    self.lock.notify_all()
                    return
                self.out += chunk.replace(b"\r", b"")
                self.log.write(chunk)
                self.log.flush()
                self.lock.notify_all()

    def text(self):
        with self.lock:
            return self.out.decode(errors="replace")

    def text_since(self, at):
        """The output after offset at (a mark: bytes, not characters)."""
        with self.lock:
            return self.out[at:].decode(errors="replace")

    def mark(self):
        with self.lock:
            return len(self.out)

    def send(self, line):
        self.send_raw(line.encode() + b"\r")

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def wait_for(self, pattern, since, limit):
        """The first match of regex pattern in the output after offset since,
        or None after limit seconds (or if QEMU has gone)."""
        rx = re.compile(pattern.encode(), re.M)
        deadline = time.monotonic() + limit
        with self.lock:
            while True:
                m = rx.search(self.out, since)
                if m:
                    return m
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return None
                self.lock.wait(min(left, 1.0))

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.reader.join(5)
        self.log.close()


def backtraces(a):
    """Every hart's backtrace through QEMU's gdb stub, into LOG-gdb.log: where
    each hart is when the status key is not enough (a hart stuck with its
    interrupts off never prints it; the console's interrupt goes to hart 0).
    scripts/qemu-watchdog.py takes them, as it does for a run that hangs."""
    if not a.gdb_port:
        return
    out = os.path.join(a.log_dir, a.prefix + "-gdb.log")
    cmd = [sys.executable, os.path.join(HERE, "qemu-watchdog.py"), "--backtraces",
           str(a.gdb_port), a.kernel_elf]
    try:
        with open(out, "w") as f:
            subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=90)
        print(f"soak: every hart's backtrace (gdb) is in {out}", flush=True)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"soak: no backtraces: {e}", flush=True)


STATUS_KEY = b"\x14"              # Ctrl-T: the kernel prints its counters and listings
# A hart's line in the status key's output (kernel/sched.c's counters).
HART_LINE = re.compile(r"^hart (\d+) \(id \d+\):.*parked (\d+) times \((\d+) ms; started again (\d+)\)", re.M)


class Soak:
    def __init__(self, a, guest):
        self.a, self.g = a, guest
        self.failures = []
        self.rounds = []          # per round: dict of figures
        self.totals = dict(answered=0, wrong=0, errors=0, sent=0, connected=0,
                           bad_pass=0, bad_fail=0, bad_runs=0)
        self.snap = {}            # name -> counters

    def say(self, msg):
        print(f"soak: {msg}", flush=True)

    def fail(self, cat, why):
        """A failure in category cat (one of CHECKS)."""
        self.failures.append((cat, why))
        print(f"soak: FAIL {why}", flush=True)

    def trouble(self):
        m = TROUBLE.search(self.g.text())
        return m and self.g.text()[m.start():].split("\n", 1)[0]

    # ---- the shell ----
    def shell(self, line, pattern, limit=120):
        """Type line at the shell and wait for pattern after it; the match or None."""
        at = self.g.mark()
        self.g.send(line)
        return self.g.wait_for(pattern, at, limit)

    def kstats(self):
        m = self.shell("kstats", r"kstats: (.*)\n", 60)
        if not m:
            return None
        v = {k: int(x) for k, x in re.findall(r"(\w+)=(-?\d+)", m.group(1).decode())}
        v["kmalloc_live_bytes"] = v["kmalloc_bytes"] - v["cache_bytes"]
        v["kmalloc_live_objects"] = v["kmalloc_objects"] - v["cache_objects"]
        v["pages"] = v["free_pages"] + v["heap_pages"] + v["kmalloc_pages"]
        # The shell prompts again once kstats has exited (a server's line may
        # follow the prompt, so this is not a check; the next kstats would show it).
        self.g.wait_for(r"\$ ", m.end(), 30)
        return v

    def boot(self):
        if not self.g.wait_for(r"matrixd: baseline ", 0, 120) or not self.g.wait_for(r"\$ ", 0, 60):
            self.fail("boot", f"boot: no matrixd baseline or shell prompt ({self.trouble()})")
            return False
        for port, opts, _, _, label in SERVERS:
            if opts is None:
                continue
            at = self.g.mark()
            self.g.send(f"matrixd {opts} -p {port} &")
            if not self.g.wait_for(rf"matrixd: listening on port {port},", at, 60) or \
               not self.g.wait_for(r"matrixd: baseline ", at, 60):
                self.fail("boot", f"boot: matrixd {opts} -p {port} did not start ({self.trouble()})")
                return False
        self.say("4 servers up: " + "; ".join(f"port {p}: {lbl}" for p, _, _, _, lbl in SERVERS))
        return True

    # ---- one round of load, and maybe bad input ----
    def run_round(self, idx, seconds, badinput):
        procs = []
        logdir = self.a.log_dir
        for (port, _, copts, _, _), hport in zip(SERVERS, self.a.ports):
            out = open(os.path.join(logdir, f"{self.a.prefix}-round{idx}-port{port}.client.log"), "w")
            cmd = [self.a.mclient, "-p", str(hport), "-i", "100", "-d", str(seconds),
                   "--seed", str(1000 * idx + port)] + copts
            procs.append((port, subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT), out))
        bads = []
        if badinput:
            # In the middle of the load: once the clients have their connections up.
            time.sleep(min(2.0, seconds / 4))
        for i in badinput:
            port, hport = SERVERS[i][0], self.a.ports[i]
            bad_log = os.path.join(logdir, f"{self.a.prefix}-round{idx}-port{port}.badinput.log")
            with open(bad_log, "w") as f:
                bads.append((port, subprocess.Popen(
                    [sys.executable, os.path.join(ROOT, "tests/net/badinput.py"), "-p", str(hport)]
                    + SERVERS[i][3],
                    stdout=f, stderr=subprocess.STDOUT), bad_log))
        limit = time.monotonic() + seconds + self.a.hang_limit
        fig = dict(answered=0, wrong=0, errors=0, sent=0, connected=0, p99=0, rps=0.0,
                   bad=[], ok=True)
        for port, p, out in procs:
            rc = wait_until(p, limit)
            out.close()
            text = open(out.name).read()
            m = re.search(r"^mclient: conns=\d+ connected=(\d+) refused=(\d+) sent=(\d+) answered=(\d+) "
                          r"wrong=(\d+) errors=(\d+) rps=([\d.]+) p50_us=\d+ p90_us=\d+ p99_us=(\d+)",
                          text, re.M)
            if rc is None:
                self.fail("no-hang", f"round {idx}: the client on port {port} hung (no end within "
                          f"{seconds + self.a.hang_limit:.0f} s; {self.trouble()}) (see {out.name})")
                fig["ok"] = False
                continue
            if not m:
                self.fail("answers", f"round {idx}: the client on port {port} exited with {rc} without a "
                          f"summary: {text.strip().splitlines()[-1:] or '(no output)'} (see {out.name})")
                fig["ok"] = False
                continue
            conn, _, sent, ans, wrong, errs, rps, p99 = m.groups()
            fig["connected"] += int(conn)
            fig["sent"] += int(sent)
            fig["answered"] += int(ans)
            fig["wrong"] += int(wrong)
            fig["errors"] += int(errs)
            fig["rps"] += float(rps)
            fig["p99"] = max(fig["p99"], int(p99))
            if rc != 0 or int(wrong) or int(errs):
                why = [ln for ln in text.splitlines() if "wrong answer" in ln or "connection" in ln][:1]
                self.fail("answers", f"round {idx}: port {port}: mclient status {rc}, wrong={wrong} errors={errs} "
                          f"{why[0] if why else ''} (see {out.name})")
                fig["ok"] = False
        for port, p, bad_log in bads:
            rc = wait_until(p, limit)
            lines = open(bad_log).read().splitlines()
            npass = sum(ln.startswith("PASS ") for ln in lines)
            fails = [ln for ln in lines if ln.startswith("FAIL ")]
            self.totals["bad_runs"] += 1
            self.totals["bad_pass"] += npass
            self.totals["bad_fail"] += len(fails)
            fig["bad"].append(f"port {port}: {npass}/{npass + len(fails)}")
            if rc is None:
                self.fail("no-hang", f"round {idx}: badinput.py on port {port} hung (see {bad_log})")
                fig["ok"] = False
            elif rc != 0 or fails or npass == 0:
                self.fail("bad-input", f"round {idx}: badinput.py on port {port}: status {rc}, "
                          f"{fails[0] if fails else 'no PASS line'} (see {bad_log})")
                fig["ok"] = False
        t = self.trouble()
        if t:
            self.fail("guest", f"round {idx}: the guest says: {t}")
            fig["ok"] = False
        if not self.g.alive():
            self.fail("guest", f"round {idx}: QEMU has exited")
            fig["ok"] = False
        for k in ("answered", "wrong", "errors", "sent", "connected"):
            self.totals[k] += fig[k]
        return fig

    # ---- the counters ----
    def settle(self, want, keys, limit, steady=1):
        """kstats until the counters in keys equal want's in `steady` reads in a
        row that agree on every compared counter (nothing still on its way
        back), or limit seconds have passed. The last read and how many."""
        deadline = time.monotonic() + limit
        tries, run = 0, []
        while True:
            v = self.kstats()
            tries += 1
            if v is None:
                return None, tries
            back = all(counter_ok(k, want, v) for k in keys)
            if back and (not run or all(v[k] == run[-1][k] for k in COMPARED)):
                run.append(v)
            else:
                run = [v] if back else []
            if len(run) >= steady or time.monotonic() >= deadline:
                return v, tries
            # A connection in TIME_WAIT or a server's idle watch still holds
            # something: look again shortly (each look is a process start).
            time.sleep(1.0)

    def table(self):
        cols = ["boot", "start", "end"]
        rows = ["| counter | at boot | start (after warm-up) | end | |", "|---|--:|--:|--:|---|"]
        for k in SHOWN:
            vals = [self.snap.get(c, {}).get(k, "?") for c in cols]
            if k in COMPARED and "start" in self.snap and "end" in self.snap and \
               None not in (self.snap["start"], self.snap["end"]):
                ok = counter_ok(k, self.snap["start"], self.snap["end"])
                verdict = "same" if vals[1] == vals[2] else \
                    f"within {page_allowance(self.snap['start'], self.snap['end'])} pages (below)" \
                    if ok else "**differs**"
            elif k in COMPARED:
                verdict = "not read"
            else:
                verdict = GROWS[k]
            rows.append(f"| {k} | {vals[0]} | {vals[1]} | {vals[2]} | {verdict} |")
        return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ports", required=True, help="host ports forwarded to guest ports 80..83")
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--round", type=float, default=60.0, help="seconds per round (a progress line each)")
    ap.add_argument("--warmup", type=float, default=10.0, help="seconds of the warm-up round")
    ap.add_argument("--bad-every", type=int, default=1, help="bad input every K rounds")
    ap.add_argument("--settle", type=float, default=60.0,
                    help="seconds the end's counters get to come back (a safety net)")
    ap.add_argument("--hang-limit", type=float, default=120.0,
                    help="seconds past a round's end before a client counts as hung")
    ap.add_argument("--log", default="build/soak/soak-qemu.log")
    ap.add_argument("--log-dir", default=None)
    ap.add_argument("--summary", default=None, help="write the result as Markdown here")
    ap.add_argument("--command", default="make soak", help="how this run was started (for the summary)")
    ap.add_argument("--mclient", default="build/host/mclient")
    ap.add_argument("--gdb-port", type=int, default=0,
                    help="QEMU's gdb stub (-gdb tcp::PORT): on a failure, every hart's backtrace")
    ap.add_argument("--kernel-elf", default="build/kernel.elf", help="symbols for those backtraces")
    ap.add_argument("--checks", action="store_true", help="PASS/FAIL lines for make test")
    ap.add_argument("--plant-open-conn", action="store_true",
                    help="a self-test: hold one connection open from the start to the end, "
                         "which the counters must show (the run must fail)")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    a.ports = [int(p) for p in a.ports.split(",")]
    assert len(a.ports) == len(SERVERS), "one host port per server"
    a.log_dir = a.log_dir or os.path.dirname(a.log) or "."
    a.prefix = os.path.basename(a.log).removesuffix("-qemu.log").removesuffix(".log")
    os.makedirs(a.log_dir, exist_ok=True)
    nrounds = max(1, round(a.minutes * 60 / a.round))

    started = time.time()
    g = Guest(cmd, a.log)
    s = Soak(a, g)
    try:
        ok = s.boot()
        if ok:
            s.snap["boot"] = s.kstats()
            s.say(f"warm-up: {a.warmup:.0f} s of the same load, bad input on every server "
                  "(heaps and caches grow to their working size)")
            w = s.run_round(0, a.warmup, range(len(SERVERS)))
            ok = w["ok"] and s.snap["boot"] is not None
        if ok:
            # At rest again: every counter but the free pages back at its boot
            # value (the warm-up's connections, calls and timers are all gone;
            # the servers' idle watches have given up waiting), steady over
            # two reads. Only the pages may have gone: heaps grown to size.
            s.snap["start"], _ = s.settle(s.snap["boot"], [k for k in COMPARED if k != "pages"],
                                          max(a.settle, 60), steady=2)
            if s.snap["start"] and any(s.snap["start"][k] != s.snap["boot"][k]
                                       for k in COMPARED if k != "pages"):
                s.fail("counters", "the warm-up's counters did not come back to the boot values within "
                       f"{max(a.settle, 60):.0f} s")
            ok = s.snap["start"] is not None
            if not ok:
                s.fail("no-hang", "the shell did not run kstats after the warm-up")
        if ok:
            s.say("start: " + " ".join(f"{k}={s.snap['start'][k]}" for k in SHOWN))
            if a.plant_open_conn:
                planted = socket.create_connection(("127.0.0.1", a.ports[0]), timeout=30)
                planted.sendall(b"connect ok?\n")
                s.say(f"planted: a connection held open to the end (answered {planted.recv(64)!r})")
            t0 = time.monotonic()
            for r in range(1, nrounds + 1):
                bad = [(r - 1) // a.bad_every % len(SERVERS)] if (r - 1) % a.bad_every == 0 else []
                f = s.run_round(r, a.round, bad)
                s.rounds.append(f)
                el = time.monotonic() - t0
                s.say(f"round {r}/{nrounds} ({el / 60:.1f} min): answered {f['answered']} "
                      f"({f['rps']:.0f}/s), wrong {f['wrong']}, errors {f['errors']}, max p99 "
                      f"{f['p99'] / 1000:.1f} ms, bad input {', '.join(f['bad']) or '-'}; total answered "
                      f"{s.totals['answered']}, wrong {s.totals['wrong']}"
                      + ("" if f["ok"] else "  <- FAILED"))
                if not f["ok"] or not g.alive():
                    break
            s.soak_seconds = time.monotonic() - t0
            # The end: every connection closed; wait for the counters to come back.
            end, tries = s.settle(s.snap["start"], COMPARED, a.settle)
            s.snap["end"] = end
            if end is None:
                s.fail("no-hang", f"hang: the shell did not answer kstats at the end ({s.trouble()})")
            else:
                diff = [k for k in COMPARED if not counter_ok(k, s.snap["start"], end)]
                if diff:
                    s.fail("counters", "counters not back after %.0f s: %s" % (a.settle, ", ".join(
                        f"{k} {s.snap['start'][k]} -> {end[k]}" for k in diff)))
                else:
                    s.say(f"end: the counters were back after {tries} look(s)")
        for row in s.table():
            print("soak: " + row, flush=True)
        if not s.failures and g.alive() and s.snap.get("end"):
            # Each hart's scheduler counters at the end (the status key's
            # hart lines), for the summary: how often idle harts parked and
            # were started again under this load (kernel/park.c).
            at = g.mark()
            g.send_raw(STATUS_KEY)
            if g.wait_for(r"^status: end", at, 60):
                s.harts = HART_LINE.findall(g.text_since(at))
                for h in s.harts:
                    s.say("hart %s: parked %s times (%s ms), started again %s" % h)
            else:
                s.fail("no-hang", "the kernel did not answer the status key (Ctrl-T) at the end within 60 s")
        if s.failures and g.alive():
            # The status key (kernel/status.c): what each process, thread and
            # connection waits for, into the console log, before the boot ends.
            at = g.mark()
            g.send_raw(STATUS_KEY)
            if g.wait_for(r"^status: end", at, 60):
                s.say(f"the kernel's status (Ctrl-T) is in {a.log}")
            else:
                s.say("the kernel did not answer the status key (Ctrl-T) within 60 s")
            backtraces(a)
    finally:
        g.stop()
    t = s.trouble()
    if t and not any(c == "guest" for c, _ in s.failures):
        s.fail("guest", f"the guest says: {t}")
    verdict = "PASS" if not s.failures else "FAIL"
    if a.checks:
        print_checks(s)
    if a.summary:
        write_summary(a, s, nrounds, started, verdict)
    s.say(f"{verdict}: {len(s.rounds)} round(s) of {a.round:.0f} s, {s.totals['answered']} answers, "
          f"{s.totals['wrong']} wrong, {s.totals['errors']} errors, bad input "
          f"{s.totals['bad_pass']}/{s.totals['bad_pass'] + s.totals['bad_fail']} cases passed in "
          f"{s.totals['bad_runs']} bursts" + ("" if not s.failures else "; " + s.failures[0][1]))
    return 0 if not s.failures else 1


def print_checks(s):
    for cat in CHECKS:
        why = [w for c, w in s.failures if c == cat]
        print(f"FAIL soak/{cat}: {why[0]}" if why else f"PASS soak/{cat}", flush=True)
    start, end = s.snap.get("start"), s.snap.get("end")
    for k in COMPARED:
        if start and end and counter_ok(k, start, end):
            print(f"PASS soak/counter/{k}")
        else:
            print(f"FAIL soak/counter/{k}: start {start and start[k]}, end {end and end[k]}")
    if not s.rounds:
        print("FAIL soak/rounds: no round ran")


def write_summary(a, s, nrounds, started, verdict):
    t = s.totals
    # The board as the guest reported it.
    out = s.g.text()
    m = re.search(r"Coral: (\d+) harts online, (\d+) MiB memory", out)
    u = re.search(r"uintr: user interrupts (\w+)", out)
    board = "virt, " + (f"{m.group(1)} harts, {m.group(2)} MiB" if m else "banner not seen") + \
        (f", user interrupts {u.group(1)}" if u else "")
    lines = [
        "# Soak: matrixd in four models at once, 128 connections, with bad input",
        "",
        f"Written by `{a.command}` (scripts/soak.sh, scripts/soak.py) on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}; every figure below is "
        "measured by that run. Do not edit by hand: run it again.",
        "",
        f"**Verdict: {verdict}.** {len(s.rounds)} of {nrounds} rounds of {a.round:.0f} s "
        f"({getattr(s, 'soak_seconds', 0) / 60:.1f} min of load after a {a.warmup:.0f} s warm-up): "
        f"{t['answered']:,} answers checked, **{t['wrong']} wrong**, {t['errors']} client errors; "
        f"bad input in {t['bad_runs']} bursts, {t['bad_pass']} of {t['bad_pass'] + t['bad_fail']} "
        "cases passed.",
        "",
        f"One QEMU boot ({board}). init starts matrixd "
        "in KCUC; the shell starts three more. Each round runs mclient against all four at "
        "once (32 connections each, one request per connection every 100 ms, every answer "
        "checked against the client's own product) and tests/net/badinput.py against one of "
        "them in turn, during the load.",
        "",
        "| guest port | server | client |",
        "|---|---|---|",
    ]
    for port, opts, copts, _, label in SERVERS:
        lines.append(f"| {port} | `matrixd {opts or '(started by init: KCUC)'}` ({label}) | "
                     f"`mclient -i 100 {' '.join(copts)}` |")
    lines += ["", "## Kernel counters", "",
              "Read in the guest by `kstats` (user/kstats.c: kstat() with KSTAT_QUIET first) "
              "typed at the shell. The start is after the warm-up round: the first load grows the "
              "servers' heaps and the kernel's caches to their working size. kmalloc_live_* are "
              "kmalloc's live bytes and objects without the caches (the executor's slot table and "
              "the timer heaps, which grow once and stay), as in every leak test; timers counts "
              "kernel coroutines waiting on a timer (KSTAT_TIMERS). The pages are compared as "
              "one sum, `pages`: free pages, plus the processes' heap pages (KSTAT_HEAP_PAGES: the "
              "servers' heaps grow to a high-water mark and keep it), plus the pages kmalloc holds "
              "(KSTAT_KMALLOC_PAGES: kmalloc's objects are compared exactly above, and the same "
              "objects sit on more or fewer slab pages from one moment to the next): a page the "
              "kernel took and never gave back shows there. The sum may differ by the page-table "
              "pages of the heaps' growth (one per 2 MiB, plus one per server) and one page "
              "besides. A leak that grows with the load exceeds that within a few rounds.", ""]
    lines += s.table()
    start, end = s.snap.get("start"), s.snap.get("end")
    if start and end:
        grew = end["heap_pages"] - start["heap_pages"]
        lines += ["", f"The servers' heaps (user memory) grew by {grew} pages ({grew * 4} KiB) "
                  f"between the start and the end, {grew / max(1, len(s.rounds)):.1f} pages a round: "
                  "umalloc keeps what it frees, so a heap only grows; a longer run tells whether "
                  "that levels off."]
    lines += ["", "## Rounds", "",
              "| round | connected | answered | requests/s | wrong | errors | worst p99 (ms) | bad input |",
              "|--:|--:|--:|--:|--:|--:|--:|---|"]
    for i, f in enumerate(s.rounds, 1):
        lines.append(f"| {i} | {f['connected']} | {f['answered']} | {f['rps']:.0f} | {f['wrong']} | "
                     f"{f['errors']} | {f['p99'] / 1000:.1f} | {', '.join(f['bad']) or '-'} |")
    harts = getattr(s, "harts", [])
    if harts:
        lines += ["", "## Harts", "",
                  "From the status key (Ctrl-T) after the end: how often each hart, idle for "
                  "the park delay, parked (kernel/park.c), how long it stayed parked in all, and "
                  "how often a busy hart or a spawn started it again.", "",
                  "| hart | parked (times) | parked (ms) | started again |", "|--:|--:|--:|--:|"]
        lines += [f"| {h} | {n} | {ms} | {again} |" for h, n, ms, again in harts]
    if s.failures:
        lines += ["", "## Failures", ""] + [f"- {why}" for _, why in s.failures]
    lines += ["", "Latency is the host's as much as the guest's: QEMU and the clients share the "
              "host's cores with whatever else runs there, so a round's p99 says how loaded the "
              "host was; the verdict does not depend on it.",
              "", "Raw logs of the run: the QEMU console in `%s`, each client's output beside it."
              % os.path.relpath(a.log, ROOT), ""]
    with open(a.summary, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
