# Shared by the scripts that boot Coral under QEMU (test.sh, nettest.sh,
# bench-net.sh, eval.sh): the board's command line, in one place, and starting matrixd
# behind a host port. Sourced, not run. The Makefile's QEMUOPTS is the same board.
BUILD=${BUILD:-build}
QEMU=${QEMU:-qemu-system-riscv64}
# -cpu for every run, if set: e.g. QEMU_CPU=rv64,n=on with hw/qemu's QEMU.
QEMU_CPU=${QEMU_CPU:-}
OPENSBI=${OPENSBI:-/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_dynamic.bin}
# Wall-clock limit of one QEMU run: a safety net only. Runs end through SBI
# system reset; a run that hits this limit has hung and counts as a failure.
QEMU_LIMIT=${QEMU_LIMIT:-600}

# Every process these scripts start carries CORAL_RUN_TAG in its environment,
# so that whatever is still alive at the end can be found (leftover_check).
export CORAL_RUN_TAG=${CORAL_RUN_TAG:-coral-run-$$-$RANDOM}

# qemu_cmd SMP MEM ARGS [HOSTPORT]: set QEMU_CMD to the command that boots the
# kernel with kernel command line ARGS; the virtio-net card (modern
# virtio-mmio) sits on QEMU's user network, with HOSTPORT on 127.0.0.1
# forwarded to the guest's port 80 if given. QEMU_CPU sets -cpu (e.g.
# rv64,n=on with hw/qemu's QEMU); QEMU_EXTRA adds options (e.g.
# "-icount shift=0,sleep=off"). QEMU_NETDEV replaces the user network (e.g. a
# tap: scripts/bench-conn.sh NET=tap); QEMU_HOSTFWD adds forwards, as
# "HOSTPORT:GUESTPORT ..." (make soak: one per matrixd). The command is
# scripts/qemu-watchdog.py running QEMU, which stops it after QEMU_LIMIT
# seconds as timeout(1) would, but first prints every hart's backtrace,
# taken through QEMU's gdb stub on QEMU_GDB_PORT (set here), into the run's
# log. Started as a simple command with `&`, $! is the watchdog's pid, and
# killing it ends QEMU too (it passes the signal on).
QEMU_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
qemu_cmd() {
  local fwd=${4:+,hostfwd=tcp:127.0.0.1:$4-:80} f
  for f in ${QEMU_HOSTFWD:-}; do
    fwd+=",hostfwd=tcp:127.0.0.1:${f%%:*}-:${f#*:}"
  done
  QEMU_GDB_PORT=$(free_port)
  # shellcheck disable=SC2206 # QEMU_EXTRA is a list of options
  QEMU_CMD=(python3 "$QEMU_LIB_DIR/qemu-watchdog.py" "$QEMU_LIMIT" "$QEMU_GDB_PORT"
    "${KERNEL_IMAGE:-$BUILD/kernel.elf}" --
    "$QEMU" -machine virt ${QEMU_CPU:+-cpu "$QEMU_CPU"}
    -bios "$OPENSBI" -kernel "${KERNEL_IMAGE:-$BUILD/kernel.elf}"
    -nographic -smp "$1" -m "$2" -global virtio-mmio.force-legacy=false
    -netdev "${QEMU_NETDEV:-user,id=net0$fwd}" -device virtio-net-device,netdev=net0 ${QEMU_EXTRA:-} -append "$3")
}

# coral_qemu SMP MEM ARGS [HOSTPORT]: run that command in the foreground. Its
# exit status is the kernel's verdict (kernel/poweroff.c): 0 = success, 124 =
# the safety-net limit was hit.
coral_qemu() {
  qemu_cmd "$@"
  "${QEMU_CMD[@]}"
}

# The processes other than this script and its ancestors that carry
# CORAL_RUN_TAG, one "pid command" per line: what a run left behind.
leftover_processes() {
  python3 - "$CORAL_RUN_TAG" <<'PY'
import os, sys
tag = ("CORAL_RUN_TAG=" + sys.argv[1]).encode()
mine, pid = set(), os.getpid()
while pid > 1:                      # this helper and every ancestor
    mine.add(pid)
    try:
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        break
for p in os.listdir("/proc"):
    if not p.isdigit() or int(p) in mine:
        continue
    try:
        with open(f"/proc/{p}/environ", "rb") as f:
            env = f.read().split(b"\0")
        with open(f"/proc/{p}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        continue
    if tag in env:
        print(p, cmd[:120])
PY
}

# kill_leftovers: end whatever leftover_processes lists (TERM, then KILL).
kill_leftovers() {
  local pids
  pids=$(leftover_processes | awk '{print $1}')
  [ -n "$pids" ] || return 0
  # shellcheck disable=SC2086
  kill $pids 2> /dev/null
  sleep 1
  # shellcheck disable=SC2086
  kill -9 $pids 2> /dev/null
  return 0
}

# no_leftovers NAME: nothing this run started is still alive (status 0); or
# say what was, as NAME, end it, and return 1. A benchmark's last step.
no_leftovers() {
  local left
  left=$(leftover_processes)
  [ -z "$left" ] && return 0
  echo "$1: processes left running (now stopped): $left" >&2
  kill_leftovers
  return 1
}

free_port() {   # free_port [udp]: a free TCP (or UDP) port on 127.0.0.1
  python3 -c 'import socket, sys; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM if sys.argv[1:] == ["udp"] else socket.SOCK_STREAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' "$@"
}

# boot_matrixd LOG SMP ARGS [MEM]: boot in the background (MEM: 256M unless
# given) with a free host port (PORT) forwarded to guest port 80, QEMU's pid
# in QPID. Returns 0 once matrixd has printed its baseline line (it listens
# then), 1 if it never does.
QPID=
PORT=
boot_matrixd() {
  local log=$1
  PORT=$(free_port)
  qemu_cmd "$2" "${4:-256M}" "$3" "$PORT"
  # Empty the log first: the loop below must not find a previous run's lines
  # before the background QEMU has opened (and truncated) the file.
  : > "$log"
  "${QEMU_CMD[@]}" < /dev/null >> "$log" 2>&1 &
  QPID=$!
  for _ in $(seq 1 600); do
    tr -d '\r' < "$log" | grep -q "^matrixd: baseline " && return 0
    kill -0 "$QPID" 2> /dev/null || return 1
    sleep 0.1
  done
  return 1
}

halt_qemu() {
  [ -n "$QPID" ] && kill "$QPID" 2> /dev/null
  [ -n "$QPID" ] && wait "$QPID" 2> /dev/null
  QPID=
}

# build_insnprof: build the instruction-counting plugin (scripts/host/insnprof.c)
# if it is missing or older than its source, and print its path. It compiles
# against qemu-plugin.h from the QEMU source that `make qemu-n` fetches; fails
# (status 1, a message on stderr) without it.
build_insnprof() {
  local plugin=$BUILD/host/insnprof.so
  local header=$BUILD/qemu-n/src/include/qemu/qemu-plugin.h
  if [ ! -f "$header" ]; then
    echo "insnprof: no $header: run 'make qemu-n' first (it fetches the QEMU source)" >&2
    return 1
  fi
  if [ ! -f "$plugin" ] || [ scripts/host/insnprof.c -nt "$plugin" ]; then
    mkdir -p "$BUILD/host"
    # shellcheck disable=SC2046 # pkg-config prints several options
    gcc -shared -fPIC -O2 -Wall -Wextra -Werror $(pkg-config --cflags glib-2.0) \
      -I"$(dirname "$header")" scripts/host/insnprof.c -o "$plugin" $(pkg-config --libs glib-2.0) >&2 ||
      return 1
  fi
  echo "$plugin"
}

# insnprof_snap REQ FILE: have the insnprof plugin (given snap=REQ) write its
# counters so far to FILE. The request is the file REQ naming FILE; the plugin
# deletes it once FILE is complete. Returns 1 (with a message) if that does
# not happen within a minute.
insnprof_snap() {
  echo "$2" > "$1.new" && mv "$1.new" "$1"
  local _
  for _ in $(seq 1 600); do
    [ -e "$1" ] || break
    sleep 0.1
  done
  [ ! -e "$1" ] && [ -s "$2" ] || { echo "insnprof: no snapshot $2" >&2; return 1; }
}

# build_kernel_and_client NAME DIR: build the kernel and the host client (the
# log in DIR/build.log); or say so, as NAME, and return 1.
build_kernel_and_client() {
  if ! make -s BUILD="$BUILD" all client > "$2/build.log" 2>&1 || [ ! -x "$BUILD/host/mclient" ]; then
    echo "$1: the kernel or the host client does not build (see $2/build.log)" >&2
    return 1
  fi
}

# field NAME LINE: the number after " NAME=" in LINE (an mclient summary, a
# BENCH line), or nothing.
field() { sed -n "s/.* $1=\([0-9.-]*\).*/\1/p" <<< "$2"; }

# build_for_profile NAME DIR: build the kernel and the host client (the log in
# DIR/build.log) and the insnprof plugin, whose path goes to PLUGIN; or say
# what is missing, as NAME, and return 1.
build_for_profile() {
  build_kernel_and_client "$1" "$2" || return 1
  if ! PLUGIN=$(build_insnprof); then
    echo "$1: no insnprof plugin (it needs the QEMU source: make qemu-n)" >&2
    return 1
  fi
}

# drive_matrixd_stats LOG SMP MODEL EXTRA RUN...: boot matrixd (MODEL, -q)
# with the console monitor beside it and bootargs EXTRA (" netlock=spin"...),
# run each RUN on the host in turn once matrixd is up (a shell command; PORT,
# exported, is the host port forwarded to it), then have the monitor print
# `stats` into LOG. QEMU's errors go to LOG.err. 0 if every step was met
# (bench-netlock.sh, bench-ab.sh).
drive_matrixd_stats() {
  local log=$1 smp=$2 model=$3 extra=$4 r
  shift 4
  local runs=()
  for r in "$@"; do runs+=(--run "$r"); done
  PORT=$(free_port)
  export PORT
  qemu_cmd "$smp" 256M "user=matrixd,-m,$model,-q monitor$extra" "$PORT"
  python3 scripts/console-drive.py "$log" --timeout 300 --end kill \
    --expect "matrixd: baseline" --send '\r' --expect "coral> " "${runs[@]}" \
    --send 'stats\r' --expect "handed over" --expect "coral> " \
    -- "${QEMU_CMD[@]}" 2> "$log.err"
}

# drive_linux_stats LOG SMP IMAGE [RUN...]: boot the Linux baseline IMAGE
# (scripts/linux/build.sh) on SMP harts behind a host port (PORT, exported),
# wait until each hart's mserver listens, run the RUN host commands in turn,
# and stop it: drive_matrixd_stats's part for Linux. The kernel configures
# the guest's address itself (ip=), the one Coral uses.
drive_linux_stats() {
  local log=$1 smp=$2 image=$3 r i
  shift 3
  local steps=(--expect "linuxinit: ")
  for i in $(seq "$smp"); do steps+=(--expect "mserver: listening"); done
  for r in "$@"; do steps+=(--run "$r"); done
  PORT=$(free_port)
  export PORT
  KERNEL_IMAGE=$image qemu_cmd "$smp" 256M "console=ttyS0 quiet ip=10.0.2.15::10.0.2.2:255.255.255.0::eth0:off" "$PORT"
  python3 scripts/console-drive.py "$log" --timeout 300 --end kill "${steps[@]}" \
    -- "${QEMU_CMD[@]}" 2> "$log.err"
}

# The median of numbers on standard input, one per word (of an even count,
# the mean of the middle two; nothing for none).
median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { if (NR) print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }

# raise_nofile NEED NAME: raise this shell's open-file limit (which QEMU and
# mclient inherit: each holds a host descriptor per connection) to at least
# NEED, the hard limit too if root; or say so as NAME and return 1.
raise_nofile() {
  local hard
  hard=$(ulimit -Hn)
  if [ "$hard" != unlimited ] && [ "$hard" -lt "$1" ]; then
    ulimit -Hn "$1" 2> /dev/null && hard=$1
  fi
  if [ "$hard" != unlimited ] && [ "$hard" -lt "$1" ]; then
    echo "$2: the hard open-file limit is $hard; $1 are needed: raise it" >&2
    return 1
  fi
  ulimit -n "$hard"
}

# tap_up NAME: put the guest on tap device NAME instead of QEMU's user network
# (slirp walks all its sockets on each turn of QEMU's loop and cannot carry
# thousands of connections). The guest keeps its address, 10.0.2.15; the host
# reaches it from 10.0.2.2 through a route to that one address. Needs root
# (CAP_NET_ADMIN). Sets QEMU_NETDEV and GUEST_HOST (the client's -H).
tap_up() {
  ip tuntap add dev "$1" mode tap && ip link set "$1" up &&
    ip addr add 10.0.2.2/32 dev "$1" && ip route add 10.0.2.15/32 dev "$1" src 10.0.2.2 || return 1
  export QEMU_NETDEV="tap,id=net0,ifname=$1,script=no,downscript=no"
  GUEST_HOST=10.0.2.15
}

# hold_requests ERRBASE CLIENT_ARGS...: run mclient (MCLIENT) in a closed loop
# (-i 0) on CONNS connections, each sending K requests (--requests K, K given
# in HOLD_K) of SIZE x SIZE; once all have their answers ("mclient: holding"),
# end it with SIGINT, which closes the connections. Output in ERRBASE.out and
# .err. Status 0 only if every request got its correct answer; the client's
# summary line is in HOLD_LAST. A long -d: the run ends on the event, not at a
# time.
hold_requests() {
  local base=$1
  shift
  : > "$base.err"
  timeout 3600 "$MCLIENT" "$@" -c "$CONNS" -i 0 -d 600 -n "$SIZE" --requests "$HOLD_K" \
    > "$base.out" 2> "$base.err" &
  local mpid=$! _
  for _ in $(seq 1 6000); do
    grep -q "^mclient: holding" "$base.err" && break
    kill -0 $mpid 2> /dev/null || break
    sleep 0.1
  done
  kill -INT $mpid 2> /dev/null
  wait $mpid
  HOLD_LAST=$(grep "^mclient: conns=" "$base.out" | tail -1)
  [ "$(sed -n 's/.* answered=\([0-9]*\).*/\1/p' <<< "$HOLD_LAST")" = $((CONNS * HOLD_K)) ] &&
    [ "$(sed -n 's/.* wrong=\([0-9]*\).*/\1/p' <<< "$HOLD_LAST")" = 0 ]
}
