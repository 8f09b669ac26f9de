#!/usr/bin/env bash
# Network tests: matrixd (user/matrixd.c) in each of the paper's four models,
# driven from the host through QEMU's user network (the frame fuzz: through
# its socket backend).
#
# For each model (kcuc kcut ktut ktuc): boot `user=matrixd,-m,MODEL` on 2 harts
# with a free host port forwarded to the guest's port 80, run the host client
# (16 connections, 3 s), and check that once the connections are gone the
# server's "idle" line shows the kernel's kmalloc counters back at the
# "baseline" line's values. The KCUC boot also gets: 20x20 requests, the
# paper's unframed base protocol, tests/net/badinput.py while a load runs on
# other connections, and a 1,000-connection flood, after which the kernel must
# be alive, matrixd must serve a fresh client and the counters must be back.
# Then, for each model, a boot whose network card is wired to
# tests/net/framefuzz.py, which sends it 4,000 malformed frames (below). Then
# two boots with small limits (matrixd -c 4; bootargs nofile=10): the
# connections over the limit must be refused at once, none left unanswered.
#
# Prints "PASS net/<name>" or "FAIL net/<name>: why" per check and nothing else
# on stdout; exit status 1 if anything failed. QEMU logs and client output are in
# $BUILD/test-logs/net-*.log.
#
#   scripts/nettest.sh [model ...]      (env: BUILD, QEMU_LIMIT, QEMU, QEMU_CPU,
#                                        OPENSBI, NET_LOGS: where the logs go)
#   NET_PARTS=frames FRAMES=30000 FRAMES_SEED=7 FRAMES_SMP=1 scripts/nettest.sh kcuc
#       only the frame fuzz, longer, from another seed, on one hart (make fuzz)
set -uo pipefail
cd "$(dirname "$0")/.."

source scripts/qemu-lib.sh     # BUILD, QEMU, coral_qemu, free_port, boot_matrixd
trap halt_qemu EXIT            # however this script ends, its QEMU ends with it
LOGS=${NET_LOGS:-$BUILD/test-logs}
MCLIENT=$BUILD/host/mclient
MODELS=${*:-kcuc kcut ktut ktuc}
NET_PARTS=${NET_PARTS:-all}        # all, or frames: the frame fuzz alone
FRAMES=${FRAMES:-4000} FRAMES_SEED=${FRAMES_SEED:-1} FRAMES_SMP=${FRAMES_SMP:-2}
mkdir -p "$LOGS"

failed=0
pass() { echo "PASS net/$1"; }
fail() { echo "FAIL net/$1: $2"; failed=$((failed + 1)); }

if ! make -s BUILD="$BUILD" all client > "$LOGS/net.build.log" 2>&1 || [ ! -x "$MCLIENT" ]; then
  fail build "kernel or host client does not build (see $LOGS/net.build.log)"
  exit 1
fi

# ---- one QEMU boot ----
LOG=
boot() {   # boot MODEL SMP: start QEMU in the background; 0 once matrixd's baseline is out
  LOG=$LOGS/net-$1.log
  boot_matrixd "$LOG" "$2" "user=matrixd,-m,$1"
}

lines() { tr -d '\r' < "$LOG" | grep -c "^matrixd: $1 " ; }
field() { sed -n "s/.* $1=\([0-9-]*\).*/\1/p" <<< "$2"; }

# Why a run went wrong, from the log: a kernel panic or fault, a killed process.
trouble() {
  tr -d '\r' < "$LOG" |
    grep -m1 -E "PANIC|KERNEL FAULT|coral: pid [0-9]+ \(matrixd\) killed|cops: |init: matrixd exited" || true
}

# idle_check NAME BEFORE: wait (up to 40 s) for an idle line beyond the first
# BEFORE ones, then compare its kmalloc counters with the baseline.
idle_check() {
  local name=$1 before=$2 base idle
  for _ in $(seq 1 400); do
    [ "$(lines idle)" -gt "$before" ] && break
    sleep 0.1
  done
  if [ "$(lines idle)" -le "$before" ]; then
    fail "$name" "no idle line within 40 s after the clients ended ($(trouble)) (see $LOG)"
    return
  fi
  sleep 0.5    # a later idle line, if one is on its way, is the one that counts
  base=$(tr -d '\r' < "$LOG" | grep -m1 "^matrixd: baseline ")
  idle=$(tr -d '\r' < "$LOG" | grep "^matrixd: idle " | tail -1)
  local ok=1 k
  for k in kmalloc_bytes kmalloc_objects; do
    [ "$(field $k "$base")" = "$(field $k "$idle")" ] || ok=0
  done
  if [ $ok = 1 ]; then
    pass "$name"
  else
    fail "$name" "kernel memory not back to the baseline: '${base#matrixd: }' vs '${idle#matrixd: }' (see $LOG)"
  fi
}

# script_results NAME STATUS OUT WHERE: a check script's "PASS x" and
# "FAIL x: why" lines in OUT as checks NAME/x (WHERE: where to look, for the
# failures), and a failure if it exited with STATUS != 0 without a FAIL line.
script_results() {
  local line rest
  while IFS= read -r line; do
    case "$line" in
      "PASS "*) pass "$1/${line#PASS }" ;;
      "FAIL "*) rest=${line#FAIL }; fail "$1/${rest%%:*}" "${rest#*: } ($(trouble)) ($4)" ;;
    esac
  done < "$3"
  [ "$2" -eq 0 ] || grep -q "^FAIL " "$3" ||
    fail "$1/run" "$(basename "$3") ended with status $2 without a FAIL line ($4)"
}

# client NAME ARGS...: run the host client against the current boot; PASS if it
# exits 0, else FAIL with its last line. Output in $LOGS/net-NAME.client.log.
client() {
  local name=$1; shift
  local out=$LOGS/net-${name//\//-}.client.log rc
  timeout 120 "$MCLIENT" -p "$PORT" "$@" > "$out" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    pass "$name"
    return 0
  fi
  fail "$name" "mclient $* exited with $rc: $(tail -1 "$out") ($(trouble)) (see $out and $LOG)"
  return 1
}

for model in $MODELS; do
  [ "$NET_PARTS" = frames ] && break
  if ! boot "$model" 2; then
    fail "$model/boot" "no 'matrixd: baseline' line ($(tr -d '\r' < "$LOG" | grep -m1 -E 'matrixd: .*failed|PANIC' || echo timeout)) (see $LOG)"
    halt_qemu
    continue
  fi
  grep -q "^matrixd: listening on port 80, model ${model^^}" <(tr -d '\r' < "$LOG") ||
    fail "$model/banner" "no 'matrixd: listening on port 80, model ${model^^}' line (see $LOG)"

  n=$(lines idle)
  client "$model/load" -c 16 -d 3
  idle_check "$model/idle" "$n"

  if [ "$model" = kcuc ]; then
    n=$(lines idle)
    client kcuc/n20 -c 8 -d 2 -n 20
    idle_check kcuc/idle-after-n20 "$n"
    n=$(lines idle)
    client kcuc/base-protocol -c 8 -d 2 --base
    idle_check kcuc/idle-after-base-protocol "$n"

    # Bad input on some connections while a load runs on others: the load must
    # still get every answer right.
    n=$(lines idle)
    timeout 120 "$MCLIENT" -p "$PORT" -c 8 -i 50 -d 20 > "$LOGS/net-kcuc-badinput-load.client.log" 2>&1 &
    load=$!
    sleep 1
    out=$LOGS/net-kcuc-badinput.log
    timeout 120 python3 tests/net/badinput.py -p "$PORT" > "$out" 2>&1
    script_results kcuc/badinput $? "$out" "see $out"
    if wait "$load"; then
      pass kcuc/badinput/load-unaffected
    else
      fail kcuc/badinput/load-unaffected "the load beside the bad input failed: $(tail -1 "$LOGS/net-kcuc-badinput-load.client.log") (see $LOGS/net-kcuc-badinput-load.client.log)"
    fi
    idle_check kcuc/idle-after-badinput "$n"

    # The flood: 1,000 connections at once (some may be refused), one request a second.
    n=$(lines idle)
    client kcuc/flood-1000 -c 1000 -d 3 --allow-refused -i 1000
    if [ -n "$(trouble)" ] || ! kill -0 "$QPID" 2> /dev/null; then
      fail kcuc/flood-alive "after the flood: $(trouble) (QEMU running: $(kill -0 "$QPID" 2> /dev/null && echo yes || echo no)) (see $LOG)"
    else
      pass kcuc/flood-alive
    fi
    idle_check kcuc/idle-after-flood "$n"
    n=$(lines idle)
    client kcuc/after-flood -c 16 -d 3
    idle_check kcuc/idle-after-flood-client "$n"
  fi
  t=$(trouble)
  [ -z "$t" ] || fail "$model/log" "$t (see $LOG)"
  halt_qemu
done

# Limits: a connection over a limit is refused at once (a reset, or a close
# before the handshake is answered), never left waiting unanswered. Two boots
# with small limits, each with `served` connections that fit and 4 more:
# matrixd's own (-c 4: it accepts and closes), and the kernel's descriptor
# table (nofile=10: stdin/out/err and the listener leave 6 descriptors, and
# accept resets the connection it has none for). The client sets connections
# up one at a time (--ramp 1), so which ones are refused is fixed, and a
# connection ignored instead of refused would show as silent=1 after 10 s.
limit_check() {   # NAME BOOTARGS SERVED
  local name=$1 served=$3 total=$(($3 + 4)) out err cpid line k want n0
  LOG=$LOGS/net-$name.log
  if ! boot_matrixd "$LOG" 1 "$2"; then
    fail "$name/boot" "no 'matrixd: baseline' line (see $LOG)"
    halt_qemu
    return
  fi
  out=$LOGS/net-$name.client.log
  err=$LOGS/net-$name.client.err
  n0=$(lines idle)
  timeout 120 "$MCLIENT" -p "$PORT" -c $total --ramp 1 --requests 1 -d 100 --allow-refused \
    > "$out" 2> "$err" &
  cpid=$!
  # The event: every connection has its answer or was refused ("holding"),
  # or the client ended. 60 s is the safety net.
  for _ in $(seq 1 600); do
    grep -q "^mclient: holding" "$err" && break
    kill -0 "$cpid" 2> /dev/null || break
    sleep 0.1
  done
  kill -INT "$cpid" 2> /dev/null
  wait "$cpid"
  line=$(grep "^mclient: conns=" "$out")
  local ok=1
  for want in "connected=$served" "refused=4" "answered=$served" "wrong=0" "errors=0" "silent=0"; do
    k=${want%%=*}
    [ "$(field "$k" "$line")" = "${want#*=}" ] || ok=0
  done
  if [ $ok = 1 ]; then
    pass "$name/refused-at-once"
  else
    fail "$name/refused-at-once" "want $served served and 4 refused, none silent: '${line#mclient: }' (see $out, $err and $LOG)"
  fi
  # matrixd counts them too, in the idle line once the held ones are gone.
  for _ in $(seq 1 400); do
    [ "$(lines idle)" -gt "$n0" ] && break
    sleep 0.1
  done
  line=$(tr -d '\r' < "$LOG" | grep "^matrixd: idle " | tail -1)
  if [ "$(field refused "$line")" = 4 ] && [ "$(field conns "$line")" = "$served" ]; then
    pass "$name/server-counts"
  else
    fail "$name/server-counts" "want conns=$served refused=4 in matrixd's idle line: '${line#matrixd: }' (see $LOG)"
  fi
  t=$(trouble)
  [ -z "$t" ] || fail "$name/log" "$t (see $LOG)"
  halt_qemu
}

# Malformed frames (tests/net/framefuzz.py): the card is wired to the script
# instead of QEMU's user network (QEMU's socket backend, one UDP datagram per
# frame), and the script plays the gateway. Its checks: the guest answers before,
# during (a ping after every batch) and after, matrixd serves an old and a new
# connection; then here: no panic or killed process, memory back at the baseline.
frames_check() {   # MODEL
  local name=$1/frames qport pport out n
  qport=$(free_port udp)
  pport=$(free_port udp)
  LOG=$LOGS/net-$1-frames.log
  if ! QEMU_NETDEV="socket,id=net0,udp=127.0.0.1:$pport,localaddr=127.0.0.1:$qport" \
      boot_matrixd "$LOG" "$FRAMES_SMP" "user=matrixd,-m,$1"; then
    fail "$name/boot" "no 'matrixd: baseline' line (see $LOG)"
    halt_qemu
    return
  fi
  n=$(lines idle)
  out=$LOGS/net-$1-frames.fuzz.log
  timeout $((300 + FRAMES / 20)) python3 tests/net/framefuzz.py --qemu "$qport" --peer "$pport" \
    --seed "$FRAMES_SEED" --frames "$FRAMES" > "$out" 2>&1
  script_results "$name" $? "$out" "see $out and $LOG"
  idle_check "$name/idle" "$n"
  t=$(trouble)
  [ -z "$t" ] || fail "$name/log" "$t (see $LOG)"
  halt_qemu
}

for model in $MODELS; do
  frames_check "$model"
done
[ "$NET_PARTS" = frames ] && exit $((failed > 0))

if [[ " $MODELS " == *" kcuc "* ]]; then
  limit_check kcuc-limit-conns "user=matrixd,-m,kcuc,-c,4" 4
  limit_check kcuc-limit-nofile "nofile=10 user=matrixd,-m,kcuc,-c,100" 6
fi

[ $failed -eq 0 ]
