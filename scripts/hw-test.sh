#!/usr/bin/env bash
# hw/ tests, for make test: lint of hw/rtl/*.sv, the differential testbench
# (RTL against kernel/nmodel.c, the kernel's own N model) on fixed seeds, and
# the self-check that the testbench fails on RTL with a planted bug.
# Installs nothing itself beyond `scripts/deps.sh --hw` (verilator, yosys).
# Prints "PASS hw/<name>" / "FAIL hw/<name>: why" lines (plus the testbench's
# INFO coverage lines) and ends with "N passed, N failed"; exit 1 on failure.
#
#   scripts/hw-test.sh           (BUILD, HW_STEPS, HW_SEEDS from the environment)
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
HW_STEPS=${HW_STEPS:-200000}
HW_SEEDS=${HW_SEEDS:-1 2 3 4}
LOGS=$BUILD/test-logs
mkdir -p "$LOGS"

passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
finish() { echo "$passed passed, $failed failed"; [ $failed -eq 0 ]; exit; }

if ! bash scripts/deps.sh --hw > "$LOGS/hw-deps.log" 2>&1; then
  fail "hw/deps" "verilator/yosys not installable (see $LOGS/hw-deps.log)"
  finish
fi

if make -s BUILD="$BUILD" hw-lint > "$LOGS/hw-lint.log" 2>&1; then
  pass "hw/lint"
else
  fail "hw/lint" "verilator --lint-only -Wall warns (see $LOGS/hw-lint.log)"
fi

# The testbench on the real RTL: its own PASS/FAIL lines count.
tb=$BUILD/hw/obj/Vn_top
if ! make -s BUILD="$BUILD" "$tb" > "$LOGS/hw-build.log" 2>&1; then
  fail "hw/build" "testbench does not build (see $LOGS/hw-build.log)"
else
  # shellcheck disable=SC2086  # HW_SEEDS is a list
  "$tb" "$HW_STEPS" $HW_SEEDS > "$LOGS/hw-sim.log" 2>&1
  rc=$?
  while IFS= read -r line; do
    case "$line" in
      "PASS "*) pass "${line#PASS }" ;;
      "FAIL "*) rest=${line#FAIL }; fail "${rest%%:*}" "${rest#*: }" ;;
      "INFO "*) echo "$line" ;;
    esac
  done < "$LOGS/hw-sim.log"
  if [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$LOGS/hw-sim.log"; then
    fail "hw/sim" "testbench exited with status $rc without a FAIL line (see $LOGS/hw-sim.log)"
  fi
fi

# Each planted bug (a `define in hw/rtl/) must make the testbench fail.
for x in vector sideleg readclear; do
  log=$LOGS/hw-broken-$x.log
  if ! make -s BUILD="$BUILD" "hw-broken-$x" > "$log" 2>&1; then
    fail "hw/broken-variant-detected-$x" "broken variant does not build (see $log)"
    continue
  fi
  # shellcheck disable=SC2086
  "$BUILD/hw/obj-broken-$x/Vn_top" "$HW_STEPS" $HW_SEEDS >> "$log" 2>&1
  rc=$?
  if [ $rc -ne 0 ] && grep -q '^FAIL hw/' "$log"; then
    pass "hw/broken-variant-detected-$x"
  else
    fail "hw/broken-variant-detected-$x" "the testbench passed RTL with BROKEN_${x^^} (see $log)"
  fi
done
finish
