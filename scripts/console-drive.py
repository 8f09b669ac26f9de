#!/usr/bin/env python3
"""Drive a program's console like a person at a terminal, but by events.

Starts COMMAND with its stdin and stdout on pipes, then works through the
steps in order: `--expect TEXT` waits until TEXT has appeared in the output
(after everything matched so far), `--send TEXT` types TEXT (with "\\r" for
Enter, as a terminal sends), `--run SHELLCOMMAND` runs a command on the host
and waits for it to end (the program's output is read meanwhile, so it never
stalls on a full pipe; a command that fails, or outlives --timeout, fails the
run: make trace runs the client this way). Nothing waits for an amount of time: a step
waits for what it needs, up to --timeout seconds as a safety net. At the end
the program gets --timeout seconds to exit by itself (--end exit) or is
stopped (--end kill). All output goes to LOG.

  console-drive.py LOG [--timeout S] [--end exit|kill] STEP... -- COMMAND...

Exit status: 0 if every expectation was met (and, with --end exit, the
program exited by itself), 1 otherwise, with the unmet step on stderr.
"""
import os
import select
import signal
import subprocess
import sys
import time


def main(argv):
    if "--" not in argv or len(argv) < 3:
        sys.exit(__doc__)
    split = argv.index("--")
    opts, command = argv[1:split], argv[split + 1:]
    log_path, opts = opts[0], opts[1:]
    timeout, end, steps = 60.0, "kill", []
    i = 0
    while i < len(opts):
        key, val = opts[i], opts[i + 1]
        if key == "--timeout":
            timeout = float(val)
        elif key == "--end":
            end = val
        elif key == "--run":
            steps.append(("run", val))
        elif key in ("--expect", "--send"):
            steps.append((key[2:], val.replace("\\r", "\r").replace("\\n", "\n")))
        else:
            sys.exit(f"console-drive: unknown option {key}")
        i += 2

    out = b""          # everything the program printed
    seen = 0           # how far the expectations have matched
    with open(log_path, "wb") as log:
        # Its own process group, so that stopping it stops whatever it started
        # (make qemu runs QEMU as a child).
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)

        def read_some(deadline):
            nonlocal out
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select([proc.stdout], [], [], min(left, 0.5))
            if ready:
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    return False
                out += chunk
                log.write(chunk)
                log.flush()
            return True

        ok, why = True, ""
        for kind, text in steps:
            if kind == "send":
                try:
                    proc.stdin.write(text.encode())
                    proc.stdin.flush()
                except BrokenPipeError:
                    ok, why = False, f"could not send {text!r}: the program has gone"
                    break
                continue
            if kind == "run":
                host = subprocess.Popen(text, shell=True)
                deadline = time.monotonic() + timeout
                while host.poll() is None and time.monotonic() < deadline:
                    if not read_some(min(deadline, time.monotonic() + 0.2)):
                        time.sleep(0.05)   # the program's output ended; just wait
                if host.poll() is None:
                    host.kill()
                    host.wait()
                    ok, why = False, f"{text!r} did not end within {timeout:.0f} s"
                elif host.returncode != 0:
                    ok, why = False, f"{text!r} failed with status {host.returncode}"
                if not ok:
                    break
                continue
            want = text.encode()
            deadline = time.monotonic() + timeout
            while out.find(want, seen) < 0:
                if not read_some(deadline):
                    ok, why = False, f"did not see {text!r} within {timeout:.0f} s"
                    break
            if not ok:
                break
            seen = out.find(want, seen) + len(want)

        if ok and end == "exit":
            deadline = time.monotonic() + timeout
            while proc.poll() is None and read_some(deadline):
                pass
            try:   # its output may end a moment before the process does
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                ok, why = False, f"the program did not exit within {timeout:.0f} s"
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        rest = proc.stdout.read()
        if rest:
            log.write(rest)
    if not ok:
        print(f"console-drive: {why}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
