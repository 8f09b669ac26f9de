#!/usr/bin/env python3
"""Malformed frames against a running kernel: an Ethernet peer that lies.

    tests/net/framefuzz.py --qemu PORT --peer PORT [--seed S] [--frames N]
                           [--batch B] [--port 80]

The guest's network card is connected to this script, not to QEMU's user
network: QEMU runs with `-netdev socket,id=net0,udp=127.0.0.1:PEER,
localaddr=127.0.0.1:QEMU`, so every frame the guest sends arrives here as one
UDP datagram, and every datagram sent to QEMU's port enters the guest's card as
one frame. The script plays the gateway 10.0.2.2 (the guest is 10.0.2.15,
net/netif.c) with a network stack of its own, small and just enough: it
answers ARP, pings, and opens TCP connections to matrixd by hand.

What it sends, from a fixed seed (the same frames in the same order on every
machine): random bytes; Ethernet frames cut short; IPv4 headers with every
field wrong in turn (version, header length, total length, fragments, TTL,
protocol, checksum, source and destination addresses, options); ICMP of every
type, bad checksums, pings up to the largest frame; TCP segments to the
listener and to closed ports with random flags, header lengths and options
(MSS, window scale, SACK, timestamps with bad lengths), correct and wrong
checksums; segments on established connections (a fresh one every second
batch, left to the fuzz) in and near the window, with any flags and data; SYNs and pings that claim to come from the guest itself or from a
broadcast address; ARP with wrong sizes and opcodes, and claims that 10.0.2.2 or the
guest's own address belong to other cards; and valid frames (a SYN, a ping,
an ARP request) with bits flipped or cut at random places.

What it checks (a line each, "PASS name" or "FAIL name: why"):
  - before the frames: the guest answers ARP and ping, and matrixd answers a
    request on a fresh TCP connection;
  - after every batch of frames: the guest still answers a ping (which also
    paces the sending: the next batch goes once the last one was read);
  - the guest's initial sequence numbers of successive connections are not
    close to each other (a peer cannot guess one from another: RFC 6528);
  - after all of them: a connection opened before the frames still gets its
    answers right, and so does a new one; both close cleanly.
The caller (scripts/nettest.sh) then checks the kernel's log for a panic and
waits for matrixd's idle line to show the kernel's memory back at its baseline.

Like a real host, the script answers a TCP segment from the guest for a
connection it does not hold with a reset, so the half-open connections the
fuzz leaves on the listener are closed as soon as the guest speaks of them.
While the card's receive queue is full QEMU leaves the datagrams in its
socket, so frames wait rather than drop (the host's UDP counters showed none
lost); the probes resend anyway, and nothing checked depends on which frames
got in. Python standard library only.
"""
import argparse
import random
import socket
import struct
import sys
import time

MY_MAC = bytes.fromhex("52550a000202")       # the gateway's address, as QEMU's user net has it
MY_IP = bytes([10, 0, 2, 2])
GUEST_IP = bytes([10, 0, 2, 15])
BROADCAST = b"\xff" * 6
ETH_IP, ETH_ARP = 0x0800, 0x0806
TCP_FIN, TCP_SYN, TCP_RST, TCP_PSH, TCP_ACK = 0x01, 0x02, 0x04, 0x08, 0x10
OUR_PORTS = range(40000, 41000)             # the connections we open; random segments never use them
VICTIM_PORTS = range(40100, 41000)          # ... of which these are left to the fuzz
PROBE_TRIES = 30                            # a probe resends every 2 s: 60 s is the safety net
results = []


def report(name, ok, why=""):
    results.append(ok)
    print(f"PASS {name}" if ok else f"FAIL {name}: {why}", flush=True)


# ---- building frames ----

def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def eth(dst, ethertype, payload, src=MY_MAC):
    return dst + src + struct.pack("!H", ethertype) + payload


def ipv4(proto, payload, src=MY_IP, dst=GUEST_IP, ttl=64, ident=0, frag=0x4000,
         options=b"", version=4, ihl=None, total=None, check=True):
    ihl = (20 + len(options)) // 4 if ihl is None else ihl
    total = 20 + len(options) + len(payload) if total is None else total
    hdr = struct.pack("!BBHHHBBH4s4s", (version << 4) | (ihl & 15), 0, total & 0xFFFF,
                      ident & 0xFFFF, frag & 0xFFFF, ttl, proto, 0, src, dst) + options
    if check:
        hdr = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]
    return hdr + payload


def tcp(sport, dport, seq, ack, flags, payload=b"", window=65535, options=b"",
        src=MY_IP, dst=GUEST_IP, doff=None, check=True):
    doff = (20 + len(options)) // 4 if doff is None else doff
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                      (doff & 15) << 4, flags & 0xFF, window, 0, 0) + options + payload
    if check:
        pseudo = src + dst + struct.pack("!BBH", 0, 6, len(seg))
        seg = seg[:16] + struct.pack("!H", csum(pseudo + seg)) + seg[18:]
    return seg


def icmp(icmp_type, code, rest, check=True):
    msg = struct.pack("!BBH", icmp_type, code, 0) + rest
    if check:
        msg = msg[:2] + struct.pack("!H", csum(msg)) + msg[4:]
    return msg


def arp(op, sha, spa, tha, tpa, htype=1, ptype=ETH_IP, hlen=6, plen=4):
    return struct.pack("!HHBBH", htype, ptype, hlen, plen, op) + sha + spa + tha + tpa


# ---- the peer: one UDP socket is the wire ----

class Peer:
    def __init__(self, qemu_port, peer_port):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        self.sock.bind(("127.0.0.1", peer_port))
        self.qemu = ("127.0.0.1", qemu_port)
        self.guest_mac = BROADCAST                  # until the guest answers ARP
        self.conns = {}                             # our port -> Tcp
        self.victims = []                           # (port, our next seq, the guest's), fuzz's to use
        self.sent = self.got = self.resets = 0

    def send(self, frame):
        assert frame, "an empty datagram would end QEMU's reading (gen_short)"
        self.sent += 1
        self.sock.sendto(frame, self.qemu)

    def send_ip(self, proto, payload, **kw):
        self.send(eth(self.guest_mac, ETH_IP, ipv4(proto, payload, **kw)))

    def frames(self, until):
        """The guest's frames until time `until`, each after the duties a host
        has towards it (ARP answered, strays reset), as parsed dicts."""
        while True:
            left = until - time.monotonic()
            if left <= 0:
                return
            self.sock.settimeout(left)
            try:
                data, _ = self.sock.recvfrom(65536)
            except socket.timeout:
                return
            self.got += 1
            f = parse(data)
            if f is None:
                continue
            self.duties(f)
            yield f

    def duties(self, f):
        if f["type"] == "arp" and f["op"] == 1 and f["tpa"] == MY_IP:
            self.send(eth(f["sha"], ETH_ARP, arp(2, MY_MAC, MY_IP, f["sha"], f["spa"])))
        elif f["type"] == "tcp" and f["dport"] not in self.conns and not f["flags"] & TCP_RST:
            # A segment for a connection we do not hold: reset it (RFC 793's
            # reply to a segment for a closed port: seq = its ack when it has one).
            self.resets += 1
            if f["flags"] & TCP_ACK:
                seg = tcp(f["dport"], f["sport"], f["ack"], 0, TCP_RST)
            else:
                seg = tcp(f["dport"], f["sport"], 0, f["seq"] + len(f["data"]) + 1,
                          TCP_RST | TCP_ACK)
            self.send_ip(6, seg)

    def wait_for(self, pred, seconds):
        for f in self.frames(time.monotonic() + seconds):
            if pred(f):
                return f
        return None

    def ask(self, send, pred, tries=PROBE_TRIES, every=2.0):
        """send(), and again every `every` s until a frame matches pred."""
        for _ in range(tries):
            send()
            f = self.wait_for(pred, every)
            if f is not None:
                return f
        return None


def parse(data):
    if len(data) < 14:
        return None
    ethertype = struct.unpack("!H", data[12:14])[0]
    body = data[14:]
    if ethertype == ETH_ARP and len(body) >= 28:
        op = struct.unpack("!H", body[6:8])[0]
        return {"type": "arp", "op": op, "sha": body[8:14], "spa": body[14:18],
                "tpa": body[24:28], "src": data[6:12]}
    if ethertype != ETH_IP or len(body) < 20:
        return None
    ihl = (body[0] & 15) * 4
    total = struct.unpack("!H", body[2:4])[0]
    proto, payload = body[9], body[ihl:total]
    if proto == 1 and len(payload) >= 8:
        t, _, _, ident, seq = struct.unpack("!BBHHH", payload[:8])
        return {"type": "icmp", "icmp": t, "id": ident, "seq": seq, "src": data[6:12]}
    if proto == 6 and len(payload) >= 20:
        sport, dport, seq, ack, doff, flags = struct.unpack("!HHIIBB", payload[:14])
        return {"type": "tcp", "sport": sport, "dport": dport, "seq": seq, "ack": ack,
                "flags": flags, "data": payload[(doff >> 4) * 4:], "src": data[6:12]}
    return {"type": "ip", "proto": proto}


# ---- a TCP connection by hand: enough for matrixd's line protocol ----

class Tcp:
    def __init__(self, peer, sport, dport, isn):
        self.peer, self.sport, self.dport = peer, sport, dport
        self.snd_nxt = isn
        self.rcv_nxt = 0
        self.buf = b""
        self.fin = False
        peer.conns[sport] = self

    def mine(self, f):
        return f["type"] == "tcp" and f["dport"] == self.sport and f["sport"] == self.dport

    def seg(self, flags, payload=b"", seq=None, options=b""):
        self.peer.send_ip(6, tcp(self.sport, self.dport, self.snd_nxt if seq is None else seq,
                                 self.rcv_nxt, flags, payload, options=options))

    def take(self, f):
        """In-order data and FIN from the guest; anything else is a repeat."""
        if f["flags"] & TCP_RST:
            raise RuntimeError(f"port {self.sport}: reset by the guest")
        if f["seq"] == self.rcv_nxt and (f["data"] or f["flags"] & TCP_FIN):
            self.buf += f["data"]
            self.rcv_nxt += len(f["data"])
            if f["flags"] & TCP_FIN:
                self.rcv_nxt += 1
                self.fin = True
        if f["data"] or f["flags"] & TCP_FIN:
            self.seg(TCP_ACK)                    # ack what we hold (again, for a repeat)

    def connect(self):
        isn = self.snd_nxt
        mss = b"\x02\x04\x05\xb4"
        f = self.peer.ask(lambda: self.seg(TCP_SYN, seq=isn, options=mss),
                          lambda f: self.mine(f) and f["flags"] & (TCP_SYN | TCP_ACK) ==
                          (TCP_SYN | TCP_ACK) and f["ack"] == (isn + 1) & 0xFFFFFFFF)
        if f is None:
            raise RuntimeError(f"port {self.sport}: no SYN-ACK")
        self.snd_nxt = (isn + 1) & 0xFFFFFFFF
        self.guest_isn = f["seq"]
        self.rcv_nxt = (f["seq"] + 1) & 0xFFFFFFFF
        self.seg(TCP_ACK)

    def ask(self, line):
        """Send one line, return the guest's reply line (resending until acked)."""
        seq = self.snd_nxt
        self.snd_nxt = (seq + len(line)) & 0xFFFFFFFF
        deadline = time.monotonic() + 2 * PROBE_TRIES
        acked = False
        while b"\n" not in self.buf:
            if time.monotonic() > deadline:
                raise RuntimeError(f"port {self.sport}: no reply (have {self.buf[:60]!r})")
            if not acked:
                self.seg(TCP_PSH | TCP_ACK, line, seq=seq)
            for f in self.peer.frames(time.monotonic() + 2.0):
                if not self.mine(f):
                    continue
                if f["flags"] & TCP_ACK and (f["ack"] - self.snd_nxt) & 0xFFFFFFFF < 1 << 31:
                    acked = True
                self.take(f)
                if b"\n" in self.buf:
                    break
        reply, self.buf = self.buf.split(b"\n", 1)
        return reply

    def close(self):
        """Our FIN, then matrixd's (it closes when it reads the end)."""
        fin_seq = self.snd_nxt
        deadline = time.monotonic() + 2 * PROBE_TRIES
        acked = False
        while not (self.fin and acked):
            if time.monotonic() > deadline:
                raise RuntimeError(f"port {self.sport}: no clean close (fin={self.fin} acked={acked})")
            if not acked:
                self.seg(TCP_FIN | TCP_ACK, seq=fin_seq)
            for f in self.peer.frames(time.monotonic() + 2.0):
                if not self.mine(f):
                    continue
                if f["flags"] & TCP_ACK and f["ack"] == (fin_seq + 1) & 0xFFFFFFFF:
                    acked = True
                self.take(f)
                if self.fin and acked:
                    break
        self.snd_nxt = (fin_seq + 1) & 0xFFFFFFFF
        del self.peer.conns[self.sport]


MATRIX = [[2, 0, 1], [1, 3, 0], [0, 1, 4]]
SQUARE = " ".join(str(sum(MATRIX[i][k] * MATRIX[k][j] for k in range(3)))
                  for i in range(3) for j in range(3)).encode()


def exchange(conn, name, handshake=True):
    try:
        if handshake:
            got = conn.ask(b"connect ok?\n")
            if got != b"connect ok":
                report(name, False, f"handshake answered {got[:60]!r}")
                return False
        got = conn.ask(" ".join(str(v) for r in MATRIX for v in r).encode() + b"\n")
        report(name, got == SQUARE, f"got {got[:60]!r}, want {SQUARE!r}")
        return got == SQUARE
    except RuntimeError as e:
        report(name, False, str(e))
        return False


# ---- the fuzz: one frame per call, from rng ----

def rand_bytes(rng, n):
    return bytes(rng.getrandbits(8) for _ in range(n))


def any_ip(rng):
    return rng.choice([MY_IP, GUEST_IP, b"\xff" * 4, b"\0" * 4, bytes([127, 0, 0, 1]),
                       bytes([224, 0, 0, 1]), bytes([10, 0, 2, 255]), rand_bytes(rng, 4)])


def any_mac(rng, peer):
    return rng.choice([peer.guest_mac, peer.guest_mac, BROADCAST, rand_bytes(rng, 6)])


def fuzz_port(rng):
    return rng.choice([rng.randrange(1, OUR_PORTS.start), rng.randrange(OUR_PORTS.stop, 65536), 0])


def tcp_options(rng):
    pool = [b"\x02\x04\x05\xb4", b"\x02\x00", b"\x02\x01", b"\x02\xff", b"\x02\x04\x00\x00",
            b"\x03\x03\xff", b"\x03\x03\x0e", b"\x03\x00", b"\x04\x02", b"\x04\x00",
            b"\x05\x0a" + rand_bytes(rng, 8), b"\x05\x01", b"\x08\x0a" + rand_bytes(rng, 8),
            b"\x08\x02", b"\x01", b"\x00", bytes([rng.randrange(256), rng.randrange(256)])]
    opts = b"".join(rng.choice(pool) for _ in range(rng.randrange(0, 6)))
    return opts[:40]


def gen_junk(rng, peer):
    return any_mac(rng, peer) + rand_bytes(rng, rng.randrange(0, 1515))


def gen_short(rng, peer):
    full = eth(peer.guest_mac, rng.choice([ETH_IP, ETH_ARP]), rand_bytes(rng, 60))
    # (Not 0 bytes: QEMU's socket backend takes an empty datagram for the end
    # of its connection and stops reading, and no card ever receives one.)
    return full[:rng.randrange(1, 40)]


def gen_ip(rng, peer):
    payload = rand_bytes(rng, rng.choice([0, 1, 8, 20, rng.randrange(0, 1480)]))
    options = rand_bytes(rng, rng.choice([0, 0, 4, 8, 40]))
    return eth(any_mac(rng, peer), ETH_IP, ipv4(
        rng.choice([1, 6, 6, 17, 2, rng.randrange(256)]), payload, src=any_ip(rng),
        dst=rng.choice([GUEST_IP, GUEST_IP, any_ip(rng)]), ttl=rng.choice([0, 1, 64, 255]),
        ident=rng.getrandbits(16), frag=rng.choice([0, 0x4000, 0x2000, 0x2000 | rng.getrandbits(13),
                                                    rng.getrandbits(16)]),
        options=options, version=rng.choice([4, 4, 4, 6, rng.randrange(16)]),
        ihl=rng.choice([None, None, 0, 4, 5, 15, rng.randrange(16)]),
        total=rng.choice([None, None, 0, 19, 20, 65535, rng.getrandbits(16)]),
        check=rng.random() < 0.75))


def gen_icmp(rng, peer):
    t = rng.choice([8, 8, 0, 3, 5, 11, 13, 17, rng.randrange(256)])
    rest = rand_bytes(rng, rng.choice([0, 2, 4, 56, rng.randrange(0, 1476)]))
    return eth(peer.guest_mac, ETH_IP, ipv4(1, icmp(t, rng.randrange(4), rest, rng.random() < 0.75),
                                            dst=rng.choice([GUEST_IP, GUEST_IP, b"\xff" * 4,
                                                            bytes([10, 0, 2, 255])])))


def gen_tcp(rng, peer):
    opts = tcp_options(rng)
    opts += b"\0" * (-len(opts) % 4)
    seg = tcp(fuzz_port(rng), rng.choice([80, 80, 80, fuzz_port(rng)]), rng.getrandbits(32),
              rng.getrandbits(32), rng.choice([TCP_SYN, TCP_SYN, TCP_ACK, TCP_RST, TCP_FIN | TCP_ACK,
                                               TCP_SYN | TCP_FIN, rng.getrandbits(8)]),
              rand_bytes(rng, rng.choice([0, 0, 1, 100, rng.randrange(0, 1400)])),
              window=rng.choice([0, 1, 65535, rng.getrandbits(16)]), options=opts,
              doff=rng.choice([None, None, None, 0, 4, 5, 15, rng.randrange(16)]),
              check=rng.random() < 0.75)
    return eth(peer.guest_mac, ETH_IP, ipv4(6, seg))


def gen_arp(rng, peer):
    if rng.random() < 0.3:                 # a claim: someone else has 10.0.2.2 or 10.0.2.15
        body = arp(rng.choice([1, 2]), rand_bytes(rng, 6), rng.choice([MY_IP, GUEST_IP]),
                   BROADCAST, rng.choice([MY_IP, GUEST_IP]))
    else:
        body = arp(rng.choice([1, 2, 3, 0, rng.getrandbits(16)]), any_mac(rng, peer), any_ip(rng),
                   any_mac(rng, peer), rng.choice([GUEST_IP, any_ip(rng)]),
                   htype=rng.choice([1, 1, 6, rng.getrandbits(16)]),
                   ptype=rng.choice([ETH_IP, ETH_IP, rng.getrandbits(16)]),
                   hlen=rng.choice([6, 6, 0, 255, rng.randrange(256)]),
                   plen=rng.choice([4, 4, 0, 16, rng.randrange(256)]))
        body = body[:rng.choice([len(body), len(body), rng.randrange(len(body) + 1)])]
    return eth(any_mac(rng, peer), ETH_ARP, body)


def gen_flipped(rng, peer):
    good = rng.choice([
        lambda: eth(peer.guest_mac, ETH_IP, ipv4(6, tcp(fuzz_port(rng), 80, rng.getrandbits(32), 0,
                                                        TCP_SYN, options=b"\x02\x04\x05\xb4"))),
        lambda: eth(peer.guest_mac, ETH_IP, ipv4(1, icmp(8, 0, struct.pack("!HH", 7, 7) +
                                                         rand_bytes(rng, 32)))),
        lambda: eth(BROADCAST, ETH_ARP, arp(1, MY_MAC, MY_IP, b"\0" * 6, GUEST_IP)),
    ])()
    frame = bytearray(good)
    for _ in range(rng.randrange(1, 9)):
        bit = rng.randrange(len(frame) * 8)
        frame[bit // 8] ^= 1 << (bit % 8)
    if rng.random() < 0.3:
        frame = frame[:rng.randrange(1, len(frame) + 1)]
    elif rng.random() < 0.2:
        frame += rand_bytes(rng, rng.randrange(64))
    return bytes(frame)


def gen_victim(rng, peer):
    """A segment on an established connection, near where the guest expects
    it: in or just outside the window, random flags (RST, SYN and URG among
    them), random options, and data that is half protocol, half noise."""
    if not peer.victims:
        return gen_tcp(rng, peer)
    port, snd, rcv = rng.choice(peer.victims[-3:])
    near = lambda: rng.choice([0, 0, 1, -1, rng.randrange(1, 65536), rng.getrandbits(32)])  # noqa: E731
    data = rng.choice([b"", b"connect ok?\n", b"1 2 3 4\n", b"9" * rng.randrange(1, 200),
                       rand_bytes(rng, rng.randrange(1, 1400))])
    opts = tcp_options(rng)
    opts += b"\0" * (-len(opts) % 4)
    seg = tcp(port, 80, snd + near(), rcv + near(),
              rng.choice([TCP_ACK, TCP_PSH | TCP_ACK, TCP_PSH | TCP_ACK, TCP_RST, TCP_RST | TCP_ACK,
                          TCP_SYN, TCP_FIN | TCP_ACK, 0x20 | TCP_ACK, rng.getrandbits(8)]),
              data, window=rng.choice([0, 1, 65535, rng.getrandbits(16)]), options=opts)
    return eth(peer.guest_mac, ETH_IP, ipv4(6, seg))


def gen_spoofed(rng, peer):
    """A valid SYN or ping claiming to come from the guest itself (the "land"
    attack), from a broadcast or multicast address, or to the broadcast."""
    src = rng.choice([GUEST_IP, GUEST_IP, b"\xff" * 4, bytes([10, 0, 2, 255]), bytes([224, 0, 0, 1])])
    dst = rng.choice([GUEST_IP, GUEST_IP, b"\xff" * 4, bytes([10, 0, 2, 255])])
    if rng.random() < 0.7:
        sport = rng.choice([80, fuzz_port(rng)])
        body = ipv4(6, tcp(sport, 80, rng.getrandbits(32), 0, TCP_SYN, src=src, dst=dst), src=src, dst=dst)
    else:
        body = ipv4(1, icmp(8, 0, struct.pack("!HH", 9, 9) + rand_bytes(rng, 16)), src=src, dst=dst)
    return eth(rng.choice([peer.guest_mac, BROADCAST]), ETH_IP, body)


GENERATORS = [gen_junk, gen_spoofed, gen_victim, gen_victim, gen_short, gen_ip, gen_ip, gen_icmp, gen_tcp, gen_tcp, gen_tcp,
              gen_arp, gen_flipped, gen_flipped]


# ---- the run ----

def ping(peer, ident, seq):
    def send():
        peer.send_ip(1, icmp(8, 0, struct.pack("!HH", ident, seq) + b"coral framefuzz probe"))
    return peer.ask(send, lambda f: f["type"] == "icmp" and f["icmp"] == 0 and f["id"] == ident
                    and f["seq"] == seq) is not None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--qemu", type=int, required=True, help="QEMU's localaddr UDP port")
    ap.add_argument("--peer", type=int, required=True, help="this script's UDP port (QEMU's udp=)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--frames", type=int, default=4000)
    ap.add_argument("--batch", type=int, default=100)
    args = ap.parse_args()
    peer = Peer(args.qemu, args.peer)
    rng = random.Random(args.seed)

    # Before: the guest's card, ARP, ping and matrixd, as a host sees them.
    f = peer.ask(lambda: peer.send(eth(BROADCAST, ETH_ARP, arp(1, MY_MAC, MY_IP, b"\0" * 6, GUEST_IP))),
                 lambda f: f["type"] == "arp" and f["op"] == 2 and f["spa"] == GUEST_IP)
    report("arp", f is not None, "no ARP reply for 10.0.2.15")
    if f is None:
        return 1
    peer.guest_mac = f["sha"]
    report("ping", ping(peer, 0xC0, 0), "no echo reply")
    live = Tcp(peer, 40000, 80, 1000)
    try:
        live.connect()
    except RuntimeError as e:
        report("tcp-before", False, str(e))
        return 1
    if not exchange(live, "tcp-before"):
        return 1

    # The frames, a batch at a time, each batch followed by a ping.
    bad_batches = 0
    isns = []                               # the guest's ISN of each victim, in order
    batches = (args.frames + args.batch - 1) // args.batch
    t0 = time.monotonic()
    for b in range(batches):
        if b % 2 == 0:
            # A fresh connection for gen_victim. It is not ours to keep: the
            # first segment the guest sends on it is a stray and is reset.
            victim = Tcp(peer, VICTIM_PORTS[b % len(VICTIM_PORTS)], 80, rng.getrandbits(32))
            try:
                victim.connect()
            except RuntimeError as e:
                report(f"victim-connect-{b + 1}", False, str(e))
                bad_batches += 1
                break
            del peer.conns[victim.sport]
            peer.victims.append((victim.sport, victim.snd_nxt, victim.rcv_nxt))
            isns.append(victim.guest_isn)
        batch = []
        for _ in range(min(args.batch, args.frames - b * args.batch)):
            gen = rng.choice(GENERATORS)
            batch.append((gen.__name__, gen(rng, peer)))
            peer.send(batch[-1][1])
        if not ping(peer, 0xC1, b + 1):
            bad_batches += 1
            for name, frame in batch:      # what the guest read last, for whoever looks into it
                print(f"framefuzz: {name} {frame.hex()}", file=sys.stderr)
            report(f"alive-after-batch-{b + 1}", False,
                   f"no echo reply within {2 * PROBE_TRIES} s after {peer.sent} frames")
            break
        if (b + 1) % 10 == 0:
            print(f"framefuzz: {b + 1}/{batches} batches, {peer.sent} frames sent, "
                  f"{peer.got} received, {peer.resets} strays reset, "
                  f"{time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)
    report("alive-after-every-batch", bad_batches == 0,
           f"the guest stopped answering after batch {b + 1}")
    if bad_batches:
        return 1

    # The victims' ISNs: one connection's must not tell the next one's
    # (RFC 6528; net/isn.c). Ports differ, so with a keyed hash consecutive
    # ISNs are about 2^31 apart and fewer than 1 in 128 pairs lie within 2^24;
    # lwIP's own counter puts every pair within a few thousand.
    close = sum(1 for a, b in zip(isns, isns[1:]) if min((b - a) % 2**32, (a - b) % 2**32) < 1 << 24)
    if len(isns) >= 4:
        report("isn-unpredictable", close <= (len(isns) - 1) // 2,
               f"{close} of {len(isns) - 1} consecutive connections' ISNs within 2^24 of each "
               f"other: {' '.join(hex(i) for i in isns[:6])} ...")

    # After: the old connection still serves, a new one too, and both close.
    exchange(live, "tcp-survivor", handshake=False)
    fresh = Tcp(peer, 40001, 80, 5000)
    try:
        fresh.connect()
        exchange(fresh, "tcp-after")
    except RuntimeError as e:
        report("tcp-after", False, str(e))
    for name, c in (("close-survivor", live), ("close-after", fresh)):
        try:
            c.close()
            report(name, True)
        except RuntimeError as e:
            report(name, False, str(e))
    # Strays still on their way get their resets.
    for _ in peer.frames(time.monotonic() + 1.0):
        pass
    print(f"framefuzz: seed {args.seed}: {peer.sent} frames sent, {peer.got} received, "
          f"{peer.resets} stray segments reset", flush=True)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
