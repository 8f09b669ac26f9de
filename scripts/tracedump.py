"""The kernel's trace dump (kernel/trace.c, printed by the monitor's `trace
dump` or at poweroff with the bootarg `trace`) read back into the events
scripts/trace2json.py converts. Imported by trace2json.py.

The dump, among any other console lines:

  TRACE-BEGIN version=1 timebase=HZ harts=N records=R recsize=32 start=T stop=T
  TRACE-HART H written=W kept=K lost=L      (L = W - K: overwritten in the ring)
  TD H <base64: 3 records of 32 bytes>      (K records of hart H, oldest first)
  ...
  TRACE-END

A record (struct trace_rec in kernel/trace.h), little-endian: ts u64 (time
CSR), cid u64, arg i32, who i32 (0: kernel, else a pid), seq u32 (the hart's
record number), type u8, hart u8, prio u8, tid u8. Type 0 pads a short last
line.

Each hart's records must carry the numbers L .. W-1, in order: a gap is a
record the console lost (a line cut or dropped), counted as "missing", never
passed over in silence; L, the records the ring overwrote, is "lost".
"""
import base64
import os
import re
import struct
import subprocess

REC = struct.Struct("<QQiiIBBBB")
TYPES = {1: "run", 2: "end", 3: "uenter", 4: "uexit", 5: "syscall", 6: "submit",
         7: "complete", 8: "upost", 9: "uintr", 10: "irq", 11: "irq", 12: "irq"}
IRQ_KIND = {10: "timer", 11: "soft", 12: "dev"}
WHY = {0: "block", 1: "yield", 2: "done"}            # CO_PENDING, CO_YIELD, CO_DONE
INTERRUPTS = {1: "soft", 5: "timer", 9: "ext"}          # scause codes (kernel/riscv.h)
EXCEPTIONS = {2: "illegal", 8: "ecall", 12: "ipage", 13: "lpage", 15: "spage"}


def call_names():
    """{number: name} of the system calls, and SYS_ASYNC, from kernel/abi.h."""
    abi = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernel", "abi.h")
    names, async_bit = {}, 0x10000
    with open(abi) as f:
        for m in re.finditer(r"^#define SYS_(\w+)\s+(0x[0-9a-fA-F]+|\d+)", f.read(), re.M):
            if m.group(1) == "ASYNC":
                async_bit = int(m.group(2), 0)
            else:
                names[int(m.group(2), 0)] = m.group(1)
    return names, async_bit


def symbols(elf, nm="riscv64-unknown-elf-nm"):
    """{address's low 32 bits: function name} from the kernel's ELF, or {}
    without one (then dispatches are named by cid only)."""
    if not elf:
        return {}
    try:
        out = subprocess.run([nm, elf], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "tT":
            syms[int(f[0], 16) & 0xffffffff] = f[2]
    return syms


def fields(line):
    return dict(kv.partition("=")[::2] for kv in line.split()[1:] if "=" in kv)


def records(lines):
    """(header, {hart: {written, kept, lost}}, {hart: [record tuples]}, bad lines)."""
    header, harts, recs, bad, inside, ended = None, {}, {}, 0, False, False
    for line in lines:
        line = line.strip()
        if line.startswith("TRACE-BEGIN"):
            header, harts, recs, bad, inside = fields(line), {}, {}, 0, True
        elif not inside:
            continue
        elif line.startswith("TRACE-HART "):
            h = int(line.split()[1])
            harts[h] = {k: int(v) for k, v in fields(line).items()}
            recs[h] = []
        elif line.startswith("TD "):
            parts = line.split()
            try:
                h, raw = int(parts[1]), base64.b64decode(parts[2], validate=True)
                if len(raw) % REC.size or h not in recs:
                    raise ValueError
            except (ValueError, IndexError):
                bad += 1
                continue
            recs[h].extend(r for r in REC.iter_unpack(raw) if r[5] != 0)
        elif line.startswith("TRACE-END"):
            inside, ended = False, True
    if header is None:
        raise ValueError("no TRACE-BEGIN line: not a kernel trace dump")
    if not ended:
        raise ValueError("no TRACE-END line: the dump was cut off")
    if int(header.get("recsize", REC.size)) != REC.size:
        raise ValueError("records of %s bytes; this reader knows %d" % (header["recsize"], REC.size))
    return header, harts, recs, bad


def parse_dump(lines, elf=None):
    """(timebase, t0, events, info): events as trace2json.parse gives them,
    info the counts per hart (written, kept, lost, missing) and bad lines.
    elf: the kernel that made the dump, to name the coroutines' functions."""
    header, harts, recs, bad = records(lines)
    names, async_bit = call_names()
    funcs = symbols(elf)
    info = {"bad_lines": bad, "harts": {}}
    events = []
    for h in sorted(recs):
        hinfo = dict(harts[h], missing=0, decoded=len(recs[h]))
        expect = hinfo.get("lost", 0)
        for ts, cid, arg, who, seq, typ, hart, prio, tid in recs[h]:
            if seq != expect:
                hinfo["missing"] += max(seq - expect, 0)
            expect = seq + 1
            kind = TYPES.get(typ)
            if kind is None:
                hinfo["missing"] += 1
                continue
            a = {}
            if who:
                a.update(pid=str(who), tid=str(tid))
            if kind in ("run", "end"):
                a.update(cid="%x" % cid, prio=str(prio), who="kernel")
                if kind == "end":
                    a["why"] = WHY.get(arg, str(arg))
                elif (arg & 0xffffffff) in funcs:
                    a["fn"] = funcs[arg & 0xffffffff]
            elif kind in ("uenter", "uexit"):
                a.update(cid="%x" % cid, prio=str(prio))
                if kind == "uexit":
                    code = arg & 0xff
                    a["cause"] = (INTERRUPTS if arg & 256 else EXCEPTIONS).get(code, str(code))
            elif kind == "syscall":
                a.update(call=names.get(arg & ~async_bit, str(arg & ~async_bit)), prio=str(prio),
                         **{"async": "1" if arg & async_bit else "0"})
                if cid:
                    a["cid"] = "%x" % cid
            elif kind in ("submit", "complete"):
                # a sync call has no user coroutine: its thread names it
                a["cid"] = "%x" % cid if cid else "t%d" % tid
                if kind == "submit":
                    a["call"] = names.get(arg, str(arg))
                else:
                    a["res"] = str(arg)
            elif kind == "irq":
                a.update(kind=IRQ_KIND[typ], cid="%x" % cid if cid else "-")
                if typ == 12:
                    a["irq"] = str(arg)
            events.append((h, ts, kind, a))
        hinfo["missing"] += max(hinfo.get("written", expect) - expect, 0)
        info["harts"][h] = hinfo
    return int(header.get("timebase", 10_000_000)), int(header.get("start", 0)), events, info
