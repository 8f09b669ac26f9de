# Shared by the scripts that boot Coral under QEMU (test.sh, nettest.sh,
# bench-net.sh): the board's command line, in one place, and starting matrixd
# behind a host port. Sourced, not run. The Makefile's QEMUOPTS is the same board.
BUILD=${BUILD:-build}
QEMU=${QEMU:-qemu-system-riscv64}
# -cpu for every run, if set: e.g. QEMU_CPU=rv64,n=on with hw/qemu's QEMU.
QEMU_CPU=${QEMU_CPU:-}
OPENSBI=${OPENSBI:-/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_dynamic.bin}
# Wall-clock limit of one QEMU run: a safety net only. Runs end through SBI
# system reset; a run that hits this limit has hung and counts as a failure.
QEMU_LIMIT=${QEMU_LIMIT:-600}

# coral_qemu SMP MEM ARGS [HOSTPORT]: boot the kernel with kernel command line
# ARGS; the virtio-net card (modern virtio-mmio) sits on QEMU's user network,
# with HOSTPORT on 127.0.0.1 forwarded to the guest's port 80 if given.
coral_qemu() {
  local fwd=${4:+,hostfwd=tcp:127.0.0.1:$4-:80}
  timeout "$QEMU_LIMIT" "$QEMU" -machine virt ${QEMU_CPU:+-cpu "$QEMU_CPU"} \
    -bios "$OPENSBI" -kernel "$BUILD/kernel.elf" -nographic -smp "$1" -m "$2" \
    -global virtio-mmio.force-legacy=false \
    -netdev "user,id=net0$fwd" -device virtio-net-device,netdev=net0 -append "$3"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# boot_matrixd LOG SMP ARGS: boot in the background with a free host port
# (PORT) forwarded to guest port 80, QEMU's pid in QPID. Returns 0 once
# matrixd has printed its baseline line (it listens then), 1 if it never does.
QPID=
PORT=
boot_matrixd() {
  local log=$1
  PORT=$(free_port)
  coral_qemu "$2" 256M "$3" "$PORT" < /dev/null > "$log" 2>&1 &
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
