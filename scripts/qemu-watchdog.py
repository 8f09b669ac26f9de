#!/usr/bin/env python3
"""Run QEMU under a wall-clock limit, as timeout(1) does, but learn where a hung
guest is before stopping it.

    qemu-watchdog.py LIMIT GDBPORT ELF -- QEMU-COMMAND...
    qemu-watchdog.py --backtraces GDBPORT ELF   (of a QEMU running now: make soak's)

QEMU gets a gdb stub on 127.0.0.1:GDBPORT (-gdb), which costs nothing while
no debugger is attached. QEMU's exit status is passed on (the kernel's verdict,
kernel/poweroff.c). If QEMU is still running after LIMIT seconds, the run has
hung: every hart's backtrace and registers are taken through the stub with
gdb-multiarch (symbols from ELF, if it is an .elf file) and printed on stderr, which the
scripts send to the run's log; then QEMU is stopped and the status is 124, as
timeout's. A hart spinning with its interrupts off, which no console command
can reach, shows up there with its whole call chain. TERM, INT and HUP are
passed on to QEMU, as timeout passes them (scripts/qemu-lib.sh stops runs by
signalling this process). Stdin, stdout and stderr are QEMU's own.
"""
import os
import shutil
import signal
import subprocess
import sys


def backtraces(port, elf):
    gdb = shutil.which("gdb-multiarch")
    if not gdb:
        return "qemu-watchdog: no gdb-multiarch: no backtraces\n"
    cmd = [gdb, "-nx", "-batch", "-ex", "set pagination off",
           "-ex", f"target remote 127.0.0.1:{port}", "-ex", "info threads",
           "-ex", "thread apply all bt 30",
           "-ex", "thread apply all info registers pc sp ra sstatus sepc scause"]
    if elf.endswith(".elf") and os.path.exists(elf):
        cmd.append(elf)              # (not a raw image, such as Linux's: no symbols)
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60)
        return r.stdout.decode(errors="replace")
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"qemu-watchdog: gdb failed: {e}\n"


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--backtraces":
        sys.stdout.write(backtraces(int(sys.argv[2]), sys.argv[3]))
        return
    if len(sys.argv) < 6 or sys.argv[4] != "--":
        sys.exit("usage: qemu-watchdog.py LIMIT GDBPORT ELF -- QEMU-COMMAND...")
    limit, port, elf, cmd = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[5:]
    qemu = subprocess.Popen(cmd + ["-gdb", f"tcp:127.0.0.1:{port}"])

    def pass_on(sig, _frame):
        try:
            qemu.send_signal(sig)
        except ProcessLookupError:
            pass
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, pass_on)

    try:
        status = qemu.wait(limit)
        # (A signal's death is reported as timeout reports it: 128 + signal.)
        sys.exit(status if status >= 0 else 128 - status)
    except subprocess.TimeoutExpired:
        pass
    sys.stderr.write(f"\nqemu-watchdog: QEMU still running after {limit:.0f} s: "
                     "the run has hung; every hart's backtrace (gdb) follows\n")
    sys.stderr.write(backtraces(port, elf))
    sys.stderr.write("qemu-watchdog: stopping QEMU\n")
    sys.stderr.flush()
    qemu.terminate()
    try:
        qemu.wait(10)
    except subprocess.TimeoutExpired:
        qemu.kill()
        qemu.wait()
    sys.exit(124)


if __name__ == "__main__":
    main()
