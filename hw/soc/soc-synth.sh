#!/usr/bin/env bash
# make fpga-synth: a yosys size estimate of the whole ZCU102 SoC (the Rocket
# core, its caches, LiteDRAM and the DDR4 PHY, UART, BIOS ROM) for the board's
# part, from exactly the sources `make fpga` hands Vivado (the read_verilog
# lines of its TCL). yosys 0.23's synth_xilinx for UltraScale+ (-family xcup):
# its own technology mapping, no placement and no timing, so an estimate, not
# what Vivado would report. -nolutram: yosys 0.23 stops with "invalid
# OPTION_ABITS/WIDTH combination" mapping one of the SoC's memories to LUT
# RAM, so memories go to block RAM or flip-flops instead, which overstates the
# flip-flops a little. Writes docs/results/hw-soc.md.
#
#   hw/soc/soc-synth.sh GATEWARE_DIR      (from hw/soc/soc.mk)
#   REUSE=1 ...                           only write the page again from the last run
set -euo pipefail
cd "$(dirname "$0")/../.."
gw=${1:?usage: hw/soc/soc-synth.sh GATEWARE_DIR}
tcl=$gw/coral_zcu102.tcl
out=docs/results/hw-soc.md
[ -f "$tcl" ] || { echo "fpga-synth: no $tcl (make fpga writes it)" >&2; exit 1; }
ys=$gw/coral_zcu102.ys
log=$gw/yosys-synth.log
{
  sed -n 's/^read_verilog {\(.*\)}$/read_verilog -defer \1/p' "$tcl"
  echo "synth_xilinx -family xcup -top coral_zcu102 -flatten -noiopad -nolutram"
  echo "tee -o $gw/yosys-stat.txt stat"
} > "$ys"
stat=$gw/yosys-stat.txt
if [ "${REUSE:-0}" != 1 ] || [ ! -f "$stat" ]; then
  echo "fpga-synth: yosys on the SoC (about 10 minutes and 3.5 GB; log: $log)" >&2
  start=$SECONDS
  # (run where the TCL is: the SoC's ROM and RAM contents are read from there)
  (cd "$gw" && nice -n 10 yosys -q -l "$(basename "$log")" -s "$(basename "$ys")" > /dev/null)
  echo $((SECONDS - start)) > "$gw/yosys-took.txt"
fi
took=$(cat "$gw/yosys-took.txt" 2> /dev/null || echo "?")
# yosys's own last line: CPU time and peak memory
cpu=$(grep -o 'CPU: user [0-9.]*s' "$log" | tail -1 | sed 's/CPU: user //')
mem=$(grep -o 'MEM: [0-9.]* MB peak' "$log" | tail -1 | sed 's/MEM: //; s/ peak//')
# The cell counts of the top module's stat, by cell type.
count() { awk -v re="$1" 'NF == 2 && $1 ~ re && $2 ~ /^[0-9]+$/ { n += $2 } END { print n + 0 }' "$stat"; }
lut=$(count '^LUT[1-6]$')
ff=$(count '^FD[CPRS]E$')
carry=$(count '^CARRY[48]$')
bram=$(count '^RAMB(18|36)E2$')
dsp=$(count '^DSP48E2$')
{
  echo "# Size estimate of the ZCU102 SoC (make fpga-synth)"
  echo
  echo "Produced by \`make fpga-synth\` (hw/soc/soc-synth.sh) on $(date -u +%F) with"
  echo "$(yosys -V | cut -d' ' -f1-2), \`synth_xilinx -family xcup -flatten -noiopad -nolutram\`,"
  echo "in ${took} s (yosys: ${cpu:-?} of CPU, ${mem:-?} at most), from the sources \`make fpga\` gives Vivado: the Rocket core"
  echo "(pythondata-cpu-rocket LitexLinuxConfig, its 4 KiB L1 caches), LiteX 2022.12's SoC"
  echo "around it (LiteDRAM and the DDR4 PHY, UART, BIOS ROM, SRAM). **Estimates, not"
  echo "Vivado results**: yosys's own mapping, no placement, no timing; -nolutram (yosys"
  echo "0.23 fails to map one memory to LUT RAM) puts small memories in flip-flops or"
  echo "block RAM. The part, XCZU9EG, has 274,080 LUTs, 548,160 flip-flops, 912"
  echo "RAMB36 (1,824 RAMB18) and 2,520 DSP slices. Not run: Vivado (not on this"
  echo "machine), so no bitstream and no timing report."
  echo
  echo "| cells | count | of the XCZU9EG |"
  echo "|---|---|---|"
  echo "| LUT (LUT1-6) | $lut | $(awk -v n="$lut" 'BEGIN { printf "%.1f%%", 100 * n / 274080 }') |"
  echo "| flip-flops (FD*E) | $ff | $(awk -v n="$ff" 'BEGIN { printf "%.1f%%", 100 * n / 548160 }') |"
  echo "| CARRY4/CARRY8 | $carry | |"
  echo "| block RAM (RAMB18E2/RAMB36E2 cells) | $bram | |"
  echo "| DSP48E2 | $dsp | $(awk -v n="$dsp" 'BEGIN { printf "%.1f%%", 100 * n / 2520 }') |"
  echo
  echo "Every cell type yosys used, from its \`stat\` of the top module:"
  echo
  echo '```'
  awk 'NF == 2 && $2 ~ /^[0-9]+$/ && $1 !~ /:$/' "$stat"
  echo '```'
} > "$out"
echo "fpga-synth: wrote $out" >&2
