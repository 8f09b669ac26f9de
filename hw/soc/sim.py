#!/usr/bin/env python3
# Build (cached) and run Coral's LiteX/Rocket SoC under Verilator.
#
#   sim.py --build DIR --stub BIN --kernel BIN --opensbi BIN [--args "..."]
#          [--trace [--trace-start PS --trace-end PS]]
#          [--until TEXT --log FILE | --commands "a; b" --log FILE]
#
# Every run regenerates the SoC's sources with coral_soc.py (seconds): that
# rewrites the memory files (kernel, firmware, device tree with the command
# line). The Verilator build (minutes) is redone only when what it compiles
# changed: a hash of the generated sources (memory files and the run-time
# configuration left out) and of our simulator module is kept next to it.
#
# Without --until the console is the terminal (Ctrl-C ends the simulation).
# With --until, the console goes to --log and the simulation ends once TEXT
# has been printed and the line finished (or at CORAL_SIM_MAX_CYCLES); with
# --commands, the console goes to --log while the commands are typed into
# Coral's shell one after another (the mode make test-sim uses).
import argparse
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def say(msg):
    print(f"[sim] {msg}", file=sys.stderr, flush=True)


def source_hash(gateware, simmod):
    """What the Verilator build depends on. Generated comments carry dates,
    so comment-only lines are skipped."""
    h = hashlib.sha256()
    skip = (".init", ".log", ".fst", ".vcd", ".gtkw")
    names = sorted(n for n in os.listdir(gateware)
                   if os.path.isfile(os.path.join(gateware, n))
                   and not n.endswith(skip) and n != "sim_config.js"
                   and not n.startswith("run_"))
    for n in names:
        h.update(n.encode())
        with open(os.path.join(gateware, n), "rb") as f:
            for line in f:
                if not line.lstrip().startswith(b"//"):
                    h.update(line)
    for root, _, files in sorted(os.walk(simmod)):
        for n in sorted(files):
            with open(os.path.join(root, n), "rb") as f:
                h.update(n.encode() + f.read())
    return h.hexdigest()


def generate(a, out, simmod):
    cmd = [sys.executable, os.path.join(HERE, "coral_soc.py"), "gen", "--out", out,
           "--stub", a.stub, "--opensbi", a.opensbi, "--kernel", a.kernel,
           "--simmod", simmod, "--dtb-addr", a.dtb_addr, "--bootargs", a.args, "--harts", str(a.harts),
           "--jobs", str(a.jobs)]
    if a.core_hz:
        cmd += ["--core-hz", str(a.core_hz)]
    if a.trace:
        cmd += ["--trace", "--trace-start", str(a.trace_start), "--trace-end", str(a.trace_end)]
    t = time.time()
    say("generating the SoC (LiteX 2022.12, Rocket LitexLinuxConfig) ...")
    log = os.path.join(out, "gen.log")
    os.makedirs(out, exist_ok=True)
    with open(log, "w") as f:
        r = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT)
    if r != 0:
        sys.stderr.write(open(log).read()[-3000:])
        say(f"generation failed (see {log})")
        sys.exit(1)
    say(f"generated in {time.time() - t:.1f} s")


def compile_sim(gateware, jobs):
    """LiteX's build script, with our job limit, niced, and a heartbeat."""
    log = os.path.join(gateware, "verilator.log")
    say(f"Verilator build of the SoC: several minutes on 2 cores (log: {log})")
    t = time.time()
    with open(log, "w") as f:
        p = subprocess.Popen(["nice", "-n", "10", "bash", "build_sim.sh"], cwd=gateware,
                             stdout=f, stderr=subprocess.STDOUT)
        phase = ""
        while p.poll() is None:
            time.sleep(10)
            try:
                with open(log, "rb") as g:
                    g.seek(max(0, os.path.getsize(log) - 4000))
                    tail = g.read().decode(errors="replace")
            except OSError:
                tail = ""
            now = phase
            if "Vsim.mk" in tail or "g++" in tail or "ccache" in tail:
                now = "compiling the C++ model (g++)"
            elif "verilator" in tail:
                now = "verilating"
            elif "modules" in tail:
                now = "simulator modules"
            phase = now
            say(f"  ... {time.time() - t:.0f} s: {phase or 'starting'}")
    if p.returncode != 0:
        sys.stderr.write(open(log, errors="replace").read()[-3000:])
        say(f"Verilator build failed (see {log})")
        sys.exit(1)
    say(f"Verilator build done in {time.time() - t:.0f} s")


def run_interactive(gateware, env):
    say("starting the simulation: the console is this terminal; Ctrl-C ends it")
    saved = None
    if sys.stdin.isatty():
        import termios
        saved = termios.tcgetattr(sys.stdin.fileno())
    try:
        return subprocess.call(["obj_dir/Vsim"], cwd=gateware, env=env)
    except KeyboardInterrupt:
        return 130
    finally:
        if saved is not None:
            import termios
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSAFLUSH, saved)


def console(p, log, echo):
    """The simulated console's bytes, one at a time, logged (and echoed)."""
    while True:
        c = p.stdout.read(1)
        if not c:
            return
        log.write(c)
        if echo:
            sys.stdout.buffer.write(c)
            if c in (b"\n", b" "):
                sys.stdout.flush()
        yield c


def stop(p, log, echo):
    """End the simulation (coralstat prints its totals) and keep its last output."""
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    rest, _ = p.communicate()
    log.write(rest)
    if echo:
        sys.stdout.buffer.write(rest)
        sys.stdout.flush()


def run_until(gateware, env, until, logfile, echo):
    """Console to logfile; stop once `until` was printed and its line ended."""
    with open(logfile, "wb", buffering=0) as log:
        p = subprocess.Popen(["obj_dir/Vsim"], cwd=gateware, env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)   # our module's reports: stderr
        want, seen, buf = until.encode(), False, b""
        for c in console(p, log, echo):
            buf = (buf + c)[-len(want) - 1:]
            if not seen and buf.endswith(want):
                seen = True
            elif seen and c == b"\n":
                break
        stop(p, log, echo)
    return 0 if seen else 1


def run_commands(gateware, env, prompt, commands, logfile, echo):
    """Boot to the shell, then type each command after a prompt; stop at the
    prompt after the last one. The log gets a line "==== sim: <command>"
    before each command's output (the shell does not echo what it reads).
    serial2console feeds one byte per cycle into a 16-byte FIFO without
    waiting for room, so commands are sent at most 15 bytes at a time, each
    piece once the previous one had time to be read."""
    want = prompt.encode()
    with open(logfile, "wb", buffering=0) as log:
        p = subprocess.Popen(["obj_dir/Vsim"], cwd=gateware, env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)   # our module's reports: stderr
        todo, buf, done = list(commands), b"", False
        for c in console(p, log, echo):
            buf = (buf + c)[-len(want):]
            if buf != want:
                continue
            if not todo:
                done = True
                break
            cmd = todo.pop(0)
            log.write(f"\n==== sim: {cmd}\n".encode())
            log.flush()
            data = (cmd + "\n").encode()
            for i in range(0, len(data), 15):
                if i:
                    time.sleep(1.0)
                p.stdin.write(data[i:i + 15])
                p.stdin.flush()
        stop(p, log, echo)
    return 0 if done else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True, help="build folder for the SoC (e.g. build/soc)")
    ap.add_argument("--stub", required=True)
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--opensbi", required=True)
    ap.add_argument("--dtb-addr", required=True, help="where the device tree is preloaded")
    ap.add_argument("--args", default="", help="kernel command line")
    ap.add_argument("--harts", type=int, default=1)
    ap.add_argument("--core-hz", type=int,
                    help="the core clock the device tree declares (default: coral_soc.py's CORE_CLK_HZ)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--trace-start", type=int, default=0, help="picoseconds (1 cycle = 1e6 ps)")
    ap.add_argument("--trace-end", type=int, default=-1)
    ap.add_argument("--until")
    ap.add_argument("--commands", help="with --log: shell commands separated by ';'")
    ap.add_argument("--prompt", default="$ ")
    ap.add_argument("--log")
    ap.add_argument("--echo", action="store_true", help="with --until: copy the console here too")
    ap.add_argument("--build-only", action="store_true")
    a = ap.parse_args()

    out = os.path.abspath(os.path.join(a.build, "trace" if a.trace else "sim"))
    gateware = os.path.join(out, "gateware")
    simmod = os.path.join(out, "simmod")
    # Our module's sources are copied out of the tree: LiteX writes a
    # variables.mak next to them.
    shutil.rmtree(simmod, ignore_errors=True)
    shutil.copytree(os.path.join(HERE, "simmod"), simmod)
    generate(a, out, simmod)
    digest = source_hash(gateware, os.path.join(HERE, "simmod"))
    stamp = os.path.join(gateware, "obj_dir", ".coral-sources")
    built = open(stamp).read().strip() if os.path.exists(stamp) else ""
    if built != digest or not os.path.exists(os.path.join(gateware, "obj_dir", "Vsim")):
        compile_sim(gateware, a.jobs)
        with open(stamp, "w") as f:
            f.write(digest + "\n")
    else:
        say("Verilator model is up to date (cached)")
    if a.build_only:
        return 0
    env = dict(os.environ)
    if a.trace:
        say(f"waveform: {os.path.join(gateware, 'sim.vcd')} (open with gtkwave); the "
            "last few kB of it are written only if the run goes on past the window")
    if a.commands:
        cmds = [c.strip() for c in a.commands.split(";") if c.strip()]
        return run_commands(gateware, env, a.prompt, cmds, a.log, a.echo)
    if a.until:
        return run_until(gateware, env, a.until, a.log, a.echo)
    return run_interactive(gateware, env)


if __name__ == "__main__":
    sys.exit(main())
