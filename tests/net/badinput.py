#!/usr/bin/env python3
"""Bad input against a running matrixd (docs/PROTOCOL.md, "Errors").

    tests/net/badinput.py [-H host] -p port [-n max_n] [--stall timer|lazy]

Sends what a broken or hostile client would: tokens that are not numbers,
negative and huge numbers, a framed count that is not a square, a matrix above
the server's limit, a request longer than its buffer, a request that stalls
half-way, an abrupt reset (SO_LINGER 0), and the paper's unframed base protocol.
--stall lazy is for matrixd's thread models (KCUT, KTUT), whose receiver is
blocked in recv when a request stalls: they apply the 2 s rule when the next
bytes arrive (docs/PROTOCOL.md, "Timing rules"), so the check sends more after
the pause instead of waiting for the error to come by itself.
Each check prints "PASS name" or "FAIL name: why"; after every error the same
connection must still answer a good request. Exit status 0 iff all passed.
Python standard library only (socket), so it runs wherever the test suite does.
"""
import argparse
import socket
import struct
import sys
import time

TIMEOUT = 30.0          # seconds to wait for any one reply: a safety net
results = []


def report(name, ok, why=""):
    results.append(ok)
    print(f"PASS {name}" if ok else f"FAIL {name}: {why}", flush=True)


class Conn:
    """One framed connection: every message ends with \\n, and so does every reply."""

    def __init__(self, host, port, handshake=b"connect ok?\n"):
        self.s = socket.create_connection((host, port), timeout=TIMEOUT)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        if handshake is not None:
            self.s.sendall(handshake)
            got = self.line()
            if got != b"connect ok":
                raise RuntimeError(f"handshake answered {got!r}")

    def line(self, timeout=TIMEOUT):
        """The next reply line (without its \\n)."""
        self.s.settimeout(timeout)
        while b"\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise RuntimeError(f"connection closed (had {self.buf[:80]!r})")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def ask(self, payload, timeout=TIMEOUT):
        self.s.sendall(payload)
        return self.line(timeout)

    def close(self):
        self.s.close()


def square(m):
    n = len(m)
    return [[sum(m[i][k] * m[k][j] for k in range(n)) for j in range(n)] for i in range(n)]


def encode(m):
    return " ".join(str(v) for row in m for v in row).encode()


def usable(c, name):
    """After an error the connection must still answer a good request."""
    m = [[2, 0, 1], [1, 3, 0], [0, 1, 4]]
    want = encode(square(m))
    try:
        got = c.ask(encode(m) + b"\n")
    except Exception as e:  # noqa: BLE001 - any failure is the test's result
        report(name + "/still-usable", False, f"{e}")
        return
    report(name + "/still-usable", got == want, f"got {got[:80]!r}, want {want!r}")


def expect_error(c, name, payload, reason):
    want = b"error: " + reason.encode()
    try:
        got = c.ask(payload)
    except Exception as e:  # noqa: BLE001
        report(name, False, f"{e}")
        return
    report(name, got == want, f"got {got[:80]!r}, want {want!r}")
    usable(c, name)


def usable_after_lazy_stall(c):
    """--stall lazy: the next bytes bring the stalled part's error, then their own answer."""
    m = [[2, 0, 1], [1, 3, 0], [0, 1, 4]]
    c.s.sendall(encode(m) + b"\n")
    try:
        got = c.line()
        report("stall", got == b"error: incomplete request",
               f"got {got[:80]!r}, want 'error: incomplete request' once more bytes came")
        got, want = c.line(), encode(square(m))
        report("stall/still-usable", got == want, f"got {got[:80]!r}, want {want!r}")
    except Exception as e:  # noqa: BLE001
        report("stall", False, f"{e}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-H", "--host", default="127.0.0.1")
    ap.add_argument("-p", "--port", type=int, required=True)
    ap.add_argument("-n", "--max-n", type=int, default=32)
    ap.add_argument("--stall", choices=["timer", "lazy"], default="timer",
                    help="how the server applies the stall rule: by its own timer "
                         "(coroutine models) or when the next bytes come (thread models)")
    a = ap.parse_args()
    host, port, max_n = a.host, a.port, a.max_n

    try:
        c = Conn(host, port)
    except Exception as e:  # noqa: BLE001
        report("connect", False, f"{e}")
        return 1
    report("connect", True)

    # A good request first, and three pipelined in one send: answers in order.
    usable(c, "good")
    reqs = [[[i, 1], [2, i]] for i in range(3)]
    c.s.sendall(b"".join(encode(m) + b"\n" for m in reqs))
    try:
        got = [c.line() for _ in reqs]
        want = [encode(square(m)) for m in reqs]
        report("pipelined", got == want, f"got {got!r}, want {want!r}")
    except Exception as e:  # noqa: BLE001
        report("pipelined", False, f"{e}")

    expect_error(c, "garbage-token", b"1 2 x 4\n", "not a number")
    expect_error(c, "garbage-line", b"\x01\xff hello world\n", "not a number")
    expect_error(c, "negative", b"1 -2 3 4\n", "negative number")
    expect_error(c, "too-large-value", b"1 2 3 99999999999999999999\n", "number too large")
    expect_error(c, "not-square", b"1 2 3\n", "not a square matrix")
    big = max_n + 1
    expect_error(c, "oversize-n", b" ".join([b"1"] * (big * big)) + b"\n", "matrix too large")
    # Longer than the server's request buffer (MP_REQ_BYTES(max_n) = 11*n*n + 64).
    count = (max_n * max_n * 11 + 64) // 2 + 100
    expect_error(c, "too-long", b"1 " * count + b"1\n", "request too long")

    # A stall: half a request, then silence. After 2 s the server gives up on it.
    # The lower bound is the rule; the upper one only says "not forever" (a
    # loaded host may run the guest late).
    c.s.sendall(b"1 2 3")
    t0 = time.time()
    if a.stall == "lazy":
        # The rule is about the server's clock: 3 s leaves a margin over its 2 s.
        # Then a good request: the stalled part gets the error first, and the
        # new bytes are a message of their own (usable checks its answer).
        time.sleep(3.0)
        usable_after_lazy_stall(c)
    else:
        try:
            got = c.line(timeout=30)
            dt = time.time() - t0
            ok = got == b"error: incomplete request" and 1.5 <= dt <= 30
            report("stall", ok, f"got {got!r} after {dt:.2f}s, want 'error: incomplete request' after ~2s")
        except Exception as e:  # noqa: BLE001
            report("stall", False, f"no reply within 30 s: {e}")
        usable(c, "stall")

    # Priority in the handshake (answered like the plain one) on a new connection.
    try:
        p = Conn(host, port, b"connect ok? prio=3\n")
        report("handshake-prio", True)
        usable(p, "handshake-prio")
        p.close()
    except Exception as e:  # noqa: BLE001
        report("handshake-prio", False, f"{e}")

    # The paper's base protocol: no terminators anywhere; "close connection"
    # makes the server close without a reply.
    try:
        b = socket.create_connection((host, port), timeout=TIMEOUT)
        b.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        b.sendall(b"connect ok?")
        got = b.recv(100)
        ok = got == b"connect ok"
        m = [[1, 2], [3, 4]]
        b.sendall(encode(m))
        want = encode(square(m))
        ans = b""
        deadline = time.time() + TIMEOUT
        while len(ans) < len(want) and time.time() < deadline:
            chunk = b.recv(100)
            if not chunk:
                break
            ans += chunk
        ok = ok and ans == want
        report("base-protocol", ok, f"handshake {got!r}, answer {ans!r}, want {want!r}")
        b.sendall(b"close connection")
        b.settimeout(TIMEOUT)
        try:
            rest = b.recv(100)
            report("base-close", rest == b"", f"server sent {rest!r} instead of closing")
        except Exception as e:  # noqa: BLE001
            report("base-close", False, f"server did not close: {e}")
        b.close()
    except Exception as e:  # noqa: BLE001
        report("base-protocol", False, f"{e}")

    # An abrupt reset in the middle of a request: SO_LINGER 0 makes close send RST.
    try:
        r = Conn(host, port)
        r.s.sendall(b"1 2 3 4 5 6")
        time.sleep(0.2)
        r.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        r.s.close()
        time.sleep(0.5)
        # ... and one while the server has answers queued for it.
        r = Conn(host, port)
        r.s.sendall(b"".join(encode([[i] * 20] * 20) + b"\n" for i in range(8)))
        r.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        r.s.close()
        time.sleep(0.5)
        report("reset", True)
    except Exception as e:  # noqa: BLE001
        report("reset", False, f"{e}")

    # The server is still there for the first connection and for new ones.
    usable(c, "after-reset")
    try:
        f = Conn(host, port)
        usable(f, "new-after-all")
        f.s.sendall(b"close connection\n")
        f.s.settimeout(TIMEOUT)
        rest = f.s.recv(100)
        report("framed-close", rest == b"", f"server sent {rest!r} instead of closing")
        f.close()
    except Exception as e:  # noqa: BLE001
        report("new-after-all", False, f"{e}")
    c.s.sendall(b"close connection\n")
    c.close()
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
