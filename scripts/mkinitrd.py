#!/usr/bin/env python3
"""Pack files into a Coral initrd archive.

    scripts/mkinitrd.py OUTPUT FILE...

Each FILE is stored under its basename. The format (version 1, little-endian,
offsets from the start of the archive) is documented in kernel/initrd.h:

    header   16 bytes   "CORALRD1", u32 count, u32 reserved (0)
    entries  48 bytes   char name[32] (NUL-terminated, NUL-padded), u64 offset, u64 size
    data                each file at a multiple of 8, zero-padded

The output is deterministic (no timestamps or modes), so the same inputs give
byte-identical archives. It is written to a temporary file and renamed, so a
failed run never leaves a partial archive behind. Exit status 0 on success,
1 on a bad input (name too long, empty or duplicated; unreadable file), 2 on
bad usage.
"""
import os
import struct
import sys

MAGIC = b"CORALRD1"
HDR_SIZE = 16
ENTRY_SIZE = 48
NAME_MAX = 32          # bytes in the name field, including the NUL
MAX_FILES = 1024       # INITRD_MAX_FILES in kernel/initrd.h
ALIGN = 8


def align(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def fail(msg):
    sys.stderr.write("mkinitrd: %s\n" % msg)
    sys.exit(1)


def collect(paths):
    """Return [(name bytes, data bytes)] in command-line order."""
    if len(paths) > MAX_FILES:
        fail("%d files; at most %d fit" % (len(paths), MAX_FILES))
    files, seen = [], {}
    for path in paths:
        name = os.path.basename(path).encode()
        if not name:
            fail("%r has no file name" % path)
        if len(name) >= NAME_MAX:
            fail("name %r is %d bytes; names must be shorter than %d"
                 % (name.decode(errors="replace"), len(name), NAME_MAX))
        if name in seen:
            fail("%r and %r would both be stored as %r"
                 % (seen[name], path, name.decode(errors="replace")))
        seen[name] = path
        try:
            with open(path, "rb") as f:
                files.append((name, f.read()))
        except OSError as e:
            fail("cannot read %s: %s" % (path, e.strerror))
    return files


def pack(files):
    table_end = HDR_SIZE + ENTRY_SIZE * len(files)
    header = MAGIC + struct.pack("<II", len(files), 0)
    entries, data = b"", b""
    off = align(table_end)
    for name, content in files:
        entries += struct.pack("<32sQQ", name, off, len(content))
        padded = content + b"\0" * (align(len(content)) - len(content))
        data += padded
        off += len(padded)
    pad = b"\0" * (align(table_end) - table_end)
    return header + entries + pad + data


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("usage: mkinitrd.py OUTPUT FILE...\n")
        return 2
    out = argv[1]
    blob = pack(collect(argv[2:]))
    tmp = out + ".tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(blob)
        os.replace(tmp, out)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        fail("cannot write %s: %s" % (out, e.strerror))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
