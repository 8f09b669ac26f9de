#!/usr/bin/env bash
# Synthesis estimates for the hw/ blocks with yosys's generic Xilinx 7-series
# flow (synth_xilinx -family xc7). These are yosys's figures, not Vivado's:
# no placement, no timing, and yosys's own LUT mapping. Prints a Markdown
# table and checks each block against hw/synth/budget.txt (exit 1 if over).
#
#   YOSYS=yosys OUT=build/hw bash hw/synth/synth.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
YOSYS=${YOSYS:-yosys}
OUT=${OUT:-build/hw}
mkdir -p "$OUT"

# block name | source | top | chparam arguments
blocks=(
  "ucsr|hw/rtl/ucsr.sv|ucsr|"
  "uintc-16x4|hw/rtl/uintc.sv|uintc|-set NRECV 16 -set NHART 4"
  "uintc-64x4|hw/rtl/uintc.sv|uintc|-set NRECV 64 -set NHART 4"
)

cell() { awk -v c="$2" '$1 == c { n += $2 } END { print n + 0 }' "$1"; }

echo "| block | FF | LUT (LUT1-6) | CARRY4 | MUXF7/F8 | INV on reset |"
echo "|---|---|---|---|---|---|"
status=0
for b in "${blocks[@]}"; do
  IFS='|' read -r name src top params <<< "$b"
  chp=""
  [ -n "$params" ] && chp="chparam $params $top;"
  stat=$OUT/synth-$name.stat
  "$YOSYS" -q -l "$OUT/synth-$name.log" -p "read_verilog -sv $src; $chp \
    synth_xilinx -family xc7 -top $top -flatten -noiopad; tee -q -o $stat stat" > /dev/null
  ff=$(( $(cell "$stat" FDCE) + $(cell "$stat" FDRE) + $(cell "$stat" FDPE) + $(cell "$stat" FDSE) ))
  lut=0
  for k in 1 2 3 4 5 6; do lut=$(( lut + $(cell "$stat" LUT$k) )); done
  carry=$(cell "$stat" CARRY4)
  mux=$(( $(cell "$stat" MUXF7) + $(cell "$stat" MUXF8) ))
  inv=$(cell "$stat" INV)
  echo "| $name | $ff | $lut | $carry | $mux | $inv |"
  read -r _ maxff maxlut < <(awk -v n="$name" '$1 == n' hw/synth/budget.txt)
  if [ -n "${maxff:-}" ] && { [ "$ff" -gt "$maxff" ] || [ "$lut" -gt "$maxlut" ]; }; then
    echo "hw-synth: $name is over budget: $ff FF / $lut LUT > $maxff / $maxlut" >&2
    status=1
  fi
done
exit $status
