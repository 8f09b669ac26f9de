#!/usr/bin/env bash
# Tests of Coral's patched QEMU (hw/qemu/build.sh builds it, if needed):
#   1. ntest, a bare-metal payload (hw/qemu/tests/), on -cpu rv64,n=on, again
#      under -icount shift=0 (uret's icount path), and on the default CPU,
#      where it checks that no N state and no UINTC exist (the patches leave
#      a stock board alone)
#   2. the device tree: riscv,isa has 'n' on every hart with n=on, not without;
#      the UINTC node is there with n=on only
#   3. the unchanged Coral kernel on the patched QEMU, N off: asynctest on 1
#      and 2 harts (every "asynctest: PASS" line, exit status 0)
#   4. Coral boots with n=on: OpenSBI 1.1 reports MIDELEG with the U bits
#      set (0x111), and a user program runs to exit status 0
# Every check prints "PASS name" or "FAIL name: why"; the last line is
# "N passed, N failed" and the exit status is non-zero if anything failed.
# Logs go to build/qemu-n/test-logs/.
set -uo pipefail
cd "$(dirname "$0")/../.."

QEMU=build/qemu-n/qemu-system-riscv64
QEMU_LIMIT=300                   # safety net for one Coral run
source scripts/qemu-lib.sh       # OPENSBI, coral_qemu (Coral's board)
LOGS=build/qemu-n/test-logs
CROSS=${CROSS:-riscv64-unknown-elf-}
mkdir -p "$LOGS"

source scripts/check-lib.sh    # passed, failed, pass, fail, tally
finish() { echo "$passed passed, $failed failed"; [ $failed -eq 0 ]; exit; }

if ! bash hw/qemu/build.sh > "$LOGS/build.log" 2>&1; then
  fail "qemu-n/build" "see $LOGS/build.log"
  finish
fi

# ---- 1. the bare-metal payload ----
ELF=build/qemu-n/tests/ntest.elf
mkdir -p "$(dirname "$ELF")"
if ! "${CROSS}gcc" -std=gnu11 -Wall -Wextra -Werror -O2 -march=rv64imac_zicsr -mabi=lp64 \
     -mcmodel=medany -ffreestanding -fno-builtin -nostdlib -static -no-pie -fno-pie \
     -T hw/qemu/tests/ntest.ld -Wl,--no-relax,--no-warn-rwx-segments -Ihw/model -o "$ELF" \
     hw/qemu/tests/ntest.S hw/qemu/tests/ntest.c hw/model/uintc_model.c hw/model/uintc_vectors.c > "$LOGS/ntest.build.log" 2>&1; then
  fail "ntest/build" "see $LOGS/ntest.build.log"
  finish
fi
for run in "n-on:rv64,n=on:" "n-on-icount:rv64,n=on:-icount shift=0" "n-off:rv64:"; do
  IFS=: read -r name cpu extra <<< "$run"
  log=$LOGS/ntest-$name.log
  # shellcheck disable=SC2086  # $extra is a list of options
  timeout 60 "$QEMU" -machine virt -cpu "$cpu" $extra -bios none -kernel "$ELF" \
    -nographic -smp 2 -m 64M < /dev/null > "$log" 2>&1
  rc=$?
  tally "ntest/$name/" "$log" "PASS " "FAIL "
  if ! grep -q "^ntest: [0-9]* passed, 0 failed" "$log" || [ $rc -ne 0 ]; then
    fail "ntest/$name/run" "exit status $rc, no clean summary line (see $log)"
  fi
done

# ---- 2. the device tree's riscv,isa ----
for run in "n-on:rv64,n=on:yes" "n-off:rv64:no"; do
  IFS=: read -r name cpu want <<< "$run"
  dtb=$LOGS/virt-$name.dtb
  "$QEMU" -machine "virt,dumpdtb=$dtb" -cpu "$cpu" -smp 2 -bios none -nographic > /dev/null 2>&1
  dts=$(dtc -I dtb -O dts "$dtb" 2> /dev/null)
  isa=$(echo "$dts" | grep 'riscv,isa' | sed 's/.*"\(.*\)".*/\1/')
  harts=$(echo "$isa" | grep -c .)
  with_n=$(echo "$isa" | grep -c '^rv64[a-z]*n')
  [ "$want" = yes ] && expect=2 || expect=0
  if [ "$harts" -eq 2 ] && [ "$with_n" -eq "$expect" ]; then
    pass "dtb/$name/riscv,isa ($(echo "$isa" | head -1 | cut -d_ -f1))"
  else
    fail "dtb/$name/riscv,isa" "$harts harts, $with_n with n, want $expect: $(echo "$isa" | head -1)"
  fi
  uintc=$(echo "$dts" | grep -c 'compatible = "coral,uintc"')
  if [ "$uintc" -eq $((expect / 2)) ]; then
    pass "dtb/$name/uintc-node ($uintc)"
  else
    fail "dtb/$name/uintc-node" "$uintc coral,uintc nodes, want $((expect / 2))"
  fi
done

# ---- 3 and 4. the Coral kernel ----
if ! make -s all > "$LOGS/kernel.build.log" 2>&1; then
  fail "kernel/build" "see $LOGS/kernel.build.log"
  finish
fi
coral() {   # coral LOG CPU SMP ARGS: Coral's board on the patched QEMU
  QEMU_CPU=$2 coral_qemu "$3" 256M "$4" < /dev/null > "$1" 2>&1
}
for smp in 1 2; do
  log=$LOGS/coral-n-off-asynctest-smp$smp.log
  coral "$log" rv64 "$smp" user=asynctest
  tally "coral/n-off/asynctest-smp$smp/" "$log" "asynctest: PASS " "asynctest: FAIL "
  grep -q "coral: init (pid 1) exited with status 0" "$log" ||
    fail "coral/n-off/asynctest-smp$smp/run" "asynctest did not end with status 0 (see $log)"
done
log=$LOGS/coral-n-on-hello.log
coral "$log" rv64,n=on 2 user=hello
mideleg=$(tr -d '\r' < "$log" | sed -n 's/^Boot HART MIDELEG *: *\(0x[0-9a-f]*\).*/\1/p')
if [ -n "$mideleg" ] && [ $((mideleg & 0x111)) -eq $((0x111)) ]; then
  pass "coral/n-on/opensbi-mideleg-U-bits ($mideleg)"
else
  fail "coral/n-on/opensbi-mideleg-U-bits" "MIDELEG '${mideleg:-missing}' (see $log)"
fi
if grep -q "coral: init (pid 1) exited with status 0" "$log"; then
  pass "coral/n-on/boot-hello"
else
  fail "coral/n-on/boot-hello" "no exit status 0 (see $log)"
fi
finish
