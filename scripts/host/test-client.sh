#!/usr/bin/env bash
# Tests of the host network tools, without QEMU: mclient (the latency client)
# against mserver (the host server on the guest's protocol engine). Both are
# built here with ASan + UBSan, so a leak or a bad access in either fails the
# check that ran it. Prints "PASS client/<name>" or "FAIL client/<name>: why";
# scripts/test.sh counts those lines.
#
#   scripts/host/test-client.sh      (BUILD=build by default; logs in $BUILD/host/test-client/)
set -uo pipefail
cd "$(dirname "$0")/../.."

BUILD=${BUILD:-build}
OUT=$BUILD/host/test-client
HOSTCC=${HOSTCC:-gcc}
FLAGS="-std=gnu11 -Wall -Wextra -Werror -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -Iuser"
mkdir -p "$OUT"
MCLIENT=$OUT/mclient
MSERVER=$OUT/mserver

pass() { echo "PASS client/$1"; }
fail() { echo "FAIL client/$1: $2"; }

# ---- build ----
if ! $HOSTCC $FLAGS scripts/host/mclient.c user/matrix_proto.c -lm -o "$MCLIENT" > "$OUT/build.log" 2>&1 ||
   ! $HOSTCC $FLAGS scripts/host/mserver.c user/matrix_proto.c -o "$MSERVER" >> "$OUT/build.log" 2>&1; then
  fail build "see $OUT/build.log"
  exit 1
fi
pass build

# ---- helpers ----
# Each helper leaves its complaint, if any, in WHY (empty: all good). They run
# in this shell, never in $(...), because they keep state (SPID, RC).
WHY= SPID= PORT= RC=0

# start_server NAME [mserver options]: on a free port (mserver -p 0 prints it).
start_server() {
  local name=$1
  shift
  # Empty the output first: the loop below must not read a previous run's port
  # before the background server has opened (and truncated) the file.
  : > "$OUT/$name.server.out"
  "$MSERVER" -p 0 "$@" >> "$OUT/$name.server.out" 2> "$OUT/$name.server.err" &
  SPID=$!
  PORT=
  for _ in $(seq 300); do      # 30 s at most: a safety net
    PORT=$(sed -n 's/^mserver: listening on .*:\([0-9]*\)$/\1/p' "$OUT/$name.server.out")
    [ -n "$PORT" ] && return 0
    sleep 0.1
  done
  return 1
}

# stop_server NAME: SIGTERM; it must exit 0 with no sanitizer report (leaks included).
stop_server() {
  WHY=
  kill -TERM "$SPID" 2> /dev/null
  wait "$SPID"
  local rc=$?
  SPID=
  if [ $rc -ne 0 ]; then
    WHY="mserver exited with status $rc (see $OUT/$1.server.err)"
  elif grep -q "Sanitizer\|runtime error" "$OUT/$1.server.err"; then
    WHY="sanitizer report in $OUT/$1.server.err"
  fi
}
trap '[ -n "$SPID" ] && kill "$SPID" 2> /dev/null' EXIT

# field NAME FILE: NAME=value from the summary line (the first line of FILE).
field() { head -1 "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

SUMMARY_RE='^mclient: conns=[0-9]* connected=[0-9]* refused=[0-9]* sent=[0-9]* answered=[0-9]* wrong=[0-9]* errors=[0-9]* rps=[0-9.]* p50_us=[0-9]* p90_us=[0-9]* p99_us=[0-9]* max_us=[0-9]* silent=[0-9]*$'

# client NAME [mclient options]: runs mclient against $PORT; RC is its status.
# WHY: a sanitizer report, or no summary line in the expected format.
client() {
  local name=$1
  shift
  WHY=
  timeout 60 "$MCLIENT" -p "$PORT" --quiet "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
  RC=$?
  if grep -q "Sanitizer\|runtime error" "$OUT/$name.err"; then
    WHY="sanitizer report in $OUT/$name.err"
  elif ! head -1 "$OUT/$name.out" | grep -q "$SUMMARY_RE"; then
    WHY="no summary line in the expected format (status $RC, see $OUT/$name.out)"
  fi
}

# clean_run NAME CONNS SECONDS INTERVAL_MS [mclient options]: runs the client
# and wants a clean run: status 0, every connection up, every request
# answered right, and about the scheduled number of requests (within 10%).
clean_run() {
  local name=$1 conns=$2 secs=$3 ms=$4
  shift 4
  client "$name" -c "$conns" -d "$secs" -i "$ms" "$@"
  [ -n "$WHY" ] && return
  local f=$OUT/$name.out want=$((conns * secs * 1000 / ms))
  local sent answered
  sent=$(field sent "$f") answered=$(field answered "$f")
  if [ $RC -ne 0 ]; then
    WHY="exit status $RC: $(head -1 "$f")"
  elif [ "$(field connected "$f")" != "$conns" ] || [ "$(field wrong "$f")" != 0 ] ||
       [ "$(field errors "$f")" != 0 ] || [ "$(field refused "$f")" != 0 ]; then
    WHY="unexpected counts: $(head -1 "$f")"
  elif [ "$sent" != "$answered" ] || [ "$sent" -lt $((want * 9 / 10)) ] ||
       [ "$sent" -gt $((want * 11 / 10)) ]; then
    WHY="sent=$sent answered=$answered, expected about $want: $(head -1 "$f")"
  fi
}

result() {   # result NAME: PASS, or FAIL with WHY
  if [ -z "$WHY" ]; then pass "$1"; else fail "$1" "$WHY"; fi
}

# ---- framed, base, priorities, CSV/JSON, server errors: one server ----
# (with a short stall timer, for the server-protocol check)
if ! start_server main --stall-ms 300; then
  fail server "mserver did not start (see $OUT/main.server.err)"
  exit 1
fi

clean_run framed 16 2 100
result framed

clean_run base 16 2 100 --base -n 20
result base

# Priorities: one line per priority 0..3, whose counts add up.
clean_run prio 16 2 100 --prio-mod 4
if [ -z "$WHY" ]; then
  f=$OUT/prio.out
  prios=$(sed -n 's/^mclient: prio=\([0-9]*\) answered=.*/\1/p' "$f" | tr '\n' ' ')
  sum=$(sed -n 's/^mclient: prio=[0-9]* answered=\([0-9]*\) .*/\1/p' "$f" | awk '{s += $1} END {print s}')
  if [ "$prios" != "0 1 2 3 " ]; then
    WHY="expected lines for prio=0..3, got '$prios' (see $f)"
  elif [ "$sum" != "$(field answered "$f")" ]; then
    WHY="per-priority answers add up to $sum, not $(field answered "$f")"
  fi
fi
result prio-mod

# CSV and JSON: one row per request, all ok; the JSON agrees with the summary.
csv=$OUT/run.csv json=$OUT/run.json
rm -f "$csv" "$json"
clean_run csvjson 8 2 50 -n 15 --prio 2 --csv "$csv" --json "$json"
if [ -z "$WHY" ]; then
  f=$OUT/csvjson.out
  WHY=$(python3 - "$csv" "$json" "$(head -1 "$f")" "$(sed -n 2p "$f")" 2>&1 << 'PYEOF'
import csv, json, sys
rows = list(csv.reader(open(sys.argv[1])))
j = json.load(open(sys.argv[2]))
summary = dict(kv.split("=") for kv in sys.argv[3].split()[1:])
prio = dict(kv.split("=") for kv in sys.argv[4].split()[1:])
problems = []
if rows[0] != ["conn", "prio", "send_us", "first_byte_us", "complete_us", "ok"]:
    problems.append("bad CSV header %s" % rows[0])
body = rows[1:]
if len(body) != int(summary["sent"]):
    problems.append("%d CSV rows for sent=%s" % (len(body), summary["sent"]))
for r in body:
    conn, p, s, fb, c, ok = map(int, r)
    if not (ok == 1 and p == 2 and 0 <= conn < 8 and 0 <= s <= fb <= c):
        problems.append("bad CSV row %s" % r)
        break
for k in ("conns", "connected", "refused", "sent", "answered", "wrong", "errors",
          "p50_us", "p90_us", "p99_us", "max_us"):
    if str(j[k]) != summary[k]:
        problems.append("JSON %s=%s but summary %s" % (k, j[k], summary[k]))
if "%.1f" % j["rps"] != summary["rps"]:
    problems.append("JSON rps %s vs %s" % (j["rps"], summary["rps"]))
if not j["complete_p50_us"] >= j["p50_us"]:
    problems.append("complete latency below first-byte latency")
if len(j["prio"]) != 1 or j["prio"][0]["prio"] != 2 or str(j["prio"][0]["answered"]) != prio["answered"]:
    problems.append("JSON per-priority entry wrong: %s" % j["prio"])
print("; ".join(problems))
PYEOF
)
fi
result csv-json

# -i 0 is a closed loop: far more requests than a 50 ms grid would send.
client closed-loop -c 4 -i 0 -d 1
if [ -z "$WHY" ]; then
  f=$OUT/closed-loop.out
  if [ $RC -ne 0 ] || [ "$(field sent "$f")" != "$(field answered "$f")" ] ||
     [ "$(field sent "$f")" -lt 400 ]; then
    WHY="status $RC, expected well over 80 requests: $(head -1 "$f")"
  fi
fi
result closed-loop

# --requests K: K requests per connection, then held open until -d ends.
client hold -c 8 -i 50 -d 1 --requests 2
if [ -z "$WHY" ]; then
  f=$OUT/hold.out
  if [ $RC -ne 0 ] || [ "$(field sent "$f")" != 16 ] || [ "$(field answered "$f")" != 16 ]; then
    WHY="status $RC, expected 16 requests: $(head -1 "$f")"
  elif ! grep -qx "mclient: holding 8 connections open (2 answers each)" "$OUT/hold.err"; then
    WHY="no holding line in $OUT/hold.err"
  fi
fi
result requests-hold

# The server side of the engine: errors, several messages in one segment, a
# stalled request, the base protocol's request in two pieces; the connection
# stays usable throughout.
WHY=$(python3 - "$PORT" 2>&1 << 'PYEOF'
import socket, sys, time
port = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", port), timeout=5)
def expect(want):
    got = b""
    while len(got) < len(want):
        chunk = s.recv(65536)
        if not chunk:
            break
        got += chunk
    if got != want:
        print("expected %r, got %r" % (want, got))
        sys.exit(0)
s.sendall(b"connect ok? prio=1\n1 2 x\n1 2 3 4\n-1\n1 2 3\n\n1000000001\n")
expect(b"connect ok\nerror: not a number\n7 10 15 22\nerror: negative number\n"
       b"error: not a square matrix\nerror: number too large\n")
s.sendall(b"5 6")          # stalls without its '\n' (the server runs with --stall-ms 300)
expect(b"error: incomplete request\n")
s.sendall(b"2\n")
expect(b"4\n")
s.sendall(b"close connection\n")
if s.recv(100) != b"":
    print("the server did not close after 'close connection'")
    sys.exit(0)
s.close()
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall(b"connect ok?")
expect(b"connect ok")
s.sendall(b"1 2 3")        # 3 values: not a square yet, the server must wait
time.sleep(0.05)
s.sendall(b" 4")
expect(b"7 10 15 22")
s.sendall(b"close connection")
s.close()
PYEOF
)
result server-protocol

stop_server main
result server-exit

# ---- the client must notice a wrong answer ----
if start_server corrupt --corrupt; then
  client corrupt -c 4 -i 50 -d 1
  f=$OUT/corrupt.out
  if [ -z "$WHY" ]; then
    w=$(field wrong "$f")
    if [ $RC -eq 0 ]; then
      WHY="exit status 0 with one corrupted answer: $(head -1 "$f")"
    elif [ "$w" -lt 1 ]; then
      WHY="wrong=$w with one corrupted answer: $(head -1 "$f")"
    elif [ "$(field errors "$f")" != 0 ]; then
      WHY="a wrong answer must not break the connection: $(head -1 "$f")"
    fi
  fi
  result detects-wrong
  stop_server corrupt
  [ -n "$WHY" ] && fail detects-wrong/server "$WHY"
else
  fail detects-wrong "mserver did not start"
fi

# ---- refused connections: nothing listens on that port any more ----
client refused -c 4 -i 50 -d 1
if [ -z "$WHY" ] && { [ $RC -eq 0 ] || [ "$(field refused "$OUT/refused.out")" != 4 ]; }; then
  WHY="status $RC: $(head -1 "$OUT/refused.out")"
fi
if [ -z "$WHY" ]; then
  client refused-allowed -c 4 -i 50 -d 1 --allow-refused
  if [ -z "$WHY" ] && { [ $RC -ne 0 ] || [ "$(field refused "$OUT/refused-allowed.out")" != 4 ]; }; then
    WHY="--allow-refused: status $RC: $(head -1 "$OUT/refused-allowed.out")"
  fi
fi
result refused

# --until-refused: the first refusal stops the opening; the rest are untried.
client until-refused -c 6 -i 50 -d 1 --ramp 1 --until-refused --allow-refused --json "$OUT/until.json"
if [ -z "$WHY" ]; then
  untried=$(sed -n 's/.*"untried": \([0-9]*\).*/\1/p' "$OUT/until.json")
  if [ $RC -ne 0 ] || [ "$(field refused "$OUT/until-refused.out")" != 1 ] || [ "$untried" != 5 ]; then
    WHY="status $RC, untried '$untried': $(head -1 "$OUT/until-refused.out")"
  fi
fi
result until-refused

# ---- --reuseport: two servers on one port share its connections (the Linux
#      baseline runs one a hart so: scripts/linux/init.c); without it the
#      second cannot bind ----
if start_server reuse-a --reuseport; then
  A=$SPID
  # The second on the same port (start_server's -p 0 comes first; this -p wins).
  if start_server reuse-b --reuseport -p "$PORT"; then
    B=$SPID
    clean_run reuseport 32 1 100
    why_run=$WHY
    SPID=$B
    stop_server reuse-b        # (each must exit 0 with no sanitizer report)
    why_b=$WHY
    SPID=$A
    stop_server reuse-a
    WHY=${why_run:-${why_b:-$WHY}}
  else
    SPID=$A
    stop_server reuse-a
    WHY="the second mserver did not start (see $OUT/reuse-b.server.err)"
  fi
  # Each server's own count ("mserver: N connections, ...", on exit).
  na=$(sed -n 's/^mserver: \([0-9]*\) connections.*/\1/p' "$OUT/reuse-a.server.err")
  nb=$(sed -n 's/^mserver: \([0-9]*\) connections.*/\1/p' "$OUT/reuse-b.server.err")
  if [ -z "$WHY" ] && { [ "${na:-0}" -lt 1 ] || [ "${nb:-0}" -lt 1 ] || [ $((na + nb)) -ne 32 ]; }; then
    # (32 connections all hashed to one server: about 1 in 2^31)
    WHY="connections per server '$na' and '$nb' (want both > 0, 32 in all)"
  fi
  result reuseport
  if start_server reuse-c; then
    "$MSERVER" -p "$PORT" > "$OUT/reuse-d.server.out" 2> "$OUT/reuse-d.server.err"
    rcd=$?
    WHY=
    grep -q "Address already in use" "$OUT/reuse-d.server.err" && [ $rcd -eq 1 ] ||
      WHY="a second server without --reuseport: status $rcd, $(head -1 "$OUT/reuse-d.server.err")"
    result reuseport-needed
    stop_server reuse-c
  else
    fail reuseport-needed "mserver did not start"
  fi
else
  fail reuseport "mserver did not start"
fi

# ---- many connections at once (the flood test's shape, smaller) ----
if start_server flood; then
  client flood -c 300 -i 100 -d 1 --allow-refused
  f=$OUT/flood.out
  if [ -z "$WHY" ] && { [ $RC -ne 0 ] || [ "$(field wrong "$f")" != 0 ] ||
                        [ "$(field errors "$f")" != 0 ] || [ "$(field connected "$f")" -eq 0 ]; }; then
    WHY="status $RC: $(head -1 "$f")"
  fi
  result flood
  stop_server flood
  [ -n "$WHY" ] && fail flood/server "$WHY"
else
  fail flood "mserver did not start"
fi
exit 0
