# Coral on the Rocket core: LiteX SoC under Verilator (make sim, make
# test-sim) and the same SoC for a Zynq board (make fpga, make flash).
# Included from the top Makefile. See hw/soc/README.md.
#   make sim [ARGS=...] [TRACE=1 [TRACE_START=c TRACE_END=c]]   boot Coral on the Rocket
#   make sim-build      only build (or reuse) the Verilator model
#   make test-sim       user programs on the Rocket: PASS/FAIL lines (minutes per program)
#   make fpga / flash   Vivado inputs for the board / load the bitstream over JTAG
#   make fpga-synth     a yosys size estimate of the board's SoC -> docs/results/hw-soc.md

SOC_DIR   := $(BUILD)/soc
SOC_VENV  := $(BUILD)/venv
SOC_PY    := $(SOC_VENV)/bin/python
SOC_STUB  := $(SOC_DIR)/bootstub.bin
SOC_KBIN  := $(SOC_DIR)/kernel.bin
# Debian's fw_jump: enters the kernel at 0x8020_0000 with the device tree it
# was given in a1 (copied to 0x8220_0000).
SOC_SBI   ?= /usr/lib/riscv64-linux-gnu/opensbi/generic/fw_jump.bin
SOC_DTB_ADDR := 0x80600000
TRACE     ?=
# The core clock the device tree declares (empty: coral_soc.py's 100 MHz);
# timebase = CORE_HZ / 100, Coral's tick every CORE_HZ / 100 cycles.
CORE_HZ   ?=
# Trace window in simulated cycles (TRACE_END=-1: to the end; a whole boot
# would be tens of GB). The window is compiled in: changing it rebuilds.
TRACE_START ?= 0
TRACE_END   ?= 20000
SOC_SIM   = $(SOC_PY) hw/soc/sim.py --build $(SOC_DIR) --stub $(SOC_STUB) \
            --kernel $(SOC_KBIN) --opensbi $(SOC_SBI) --dtb-addr $(SOC_DTB_ADDR) --jobs 2 \
            $(if $(CORE_HZ),--core-hz $(CORE_HZ)) \
            $(if $(TRACE),--trace --trace-start $$(( $(TRACE_START) * 1000000 )) \
              --trace-end $$(( $(TRACE_END) < 0 ? -1 : $(TRACE_END) * 1000000 )))

.PHONY: sim sim-build sim-deps test-sim fpga fpga-synth flash

$(SOC_VENV)/.pinned: scripts/deps.sh
	@bash scripts/deps.sh --sim $(SOC_VENV)
	@touch $@
sim-deps: $(SOC_VENV)/.pinned

$(SOC_STUB): hw/soc/bootstub.S
	@mkdir -p $(dir $@)
	$(CC) -nostdlib -march=rv64imac_zicsr -mabi=lp64 -DDTB_ADDR=$(SOC_DTB_ADDR) \
	  -DRAM_BASE=0x80000000 -Wl,-Ttext=0x10000000 -Wl,--build-id=none $< -o $(SOC_DIR)/bootstub.elf
	$(CROSS)objcopy -O binary $(SOC_DIR)/bootstub.elf $@

# The same kernel image as make qemu, as raw bytes from its load address.
$(SOC_KBIN): $(KERNEL)
	@mkdir -p $(dir $@)
	$(CROSS)objcopy -O binary $< $@
	@size=$$(stat -c %s $@); max=$$(( $(SOC_DTB_ADDR) - 0x80200000 )); \
	  [ $$size -le $$max ] || { echo "soc: kernel.bin ($$size bytes) overlaps the DTB at $(SOC_DTB_ADDR)"; exit 1; }

sim-build: $(SOC_VENV)/.pinned $(SOC_STUB) $(SOC_KBIN)
	$(SOC_SIM) --build-only

sim: $(SOC_VENV)/.pinned $(SOC_STUB) $(SOC_KBIN)
	$(SOC_SIM) --args "$(ARGS)"

test-sim: $(SOC_VENV)/.pinned $(SOC_STUB) $(SOC_KBIN)
	@SOC_SIM="$(SOC_SIM)" BUILD=$(BUILD) bash hw/soc/test-sim.sh

# ---- the same SoC on a board: AMD ZCU102 (Zynq UltraScale+ XCZU9EG) ----
FPGA_DIR := $(SOC_DIR)/zcu102
FPGA_BIT := $(FPGA_DIR)/gateware/coral_zcu102.bit
FPGA_CABLE ?=

# Vivado's inputs (Verilog, XDC, TCL), LiteX's BIOS in the ROM, the board's
# DTB and litex_term's boot.json; then the bitstream if Vivado is installed.
fpga: $(SOC_VENV)/.pinned $(SOC_STUB) $(SOC_KBIN)
	$(SOC_PY) hw/soc/zcu102.py --out $(FPGA_DIR) --opensbi $(SOC_SBI) --kernel $(SOC_KBIN) \
	  --stub $(SOC_STUB) --bootargs "$(ARGS)"
	@if command -v vivado > /dev/null; then \
	  cd $(FPGA_DIR)/gateware && nice -n 10 bash build_coral_zcu102.sh; \
	else \
	  echo "fpga: SKIP bitstream: vivado is not on PATH (AMD Vivado is not in Debian)."; \
	  echo "fpga: its inputs are in $(FPGA_DIR)/gateware; with Vivado: cd there && bash build_coral_zcu102.sh"; \
	fi

# A yosys size estimate of that SoC for the board's part (no Vivado needed):
# docs/results/hw-soc.md.
fpga-synth: fpga
	@bash scripts/deps.sh --hw
	@bash hw/soc/soc-synth.sh $(FPGA_DIR)/gateware

# Load the bitstream into the PL over JTAG, then send OpenSBI + Coral + DTB
# to the BIOS over the serial line.
flash:
	@if ! command -v openFPGALoader > /dev/null; then \
	  echo "flash: SKIP: openFPGALoader is not installed (apt-get install openfpgaloader)"; \
	elif [ ! -f $(FPGA_BIT) ]; then \
	  echo "flash: SKIP: no bitstream $(FPGA_BIT) (make fpga needs Vivado for it)"; \
	elif ! openFPGALoader --detect $(if $(FPGA_CABLE),-c $(FPGA_CABLE)) > /dev/null 2>&1; then \
	  echo "flash: SKIP: no JTAG cable/board found (openFPGALoader --detect)"; \
	else \
	  openFPGALoader -b zcu102 $(FPGA_BIT) && \
	  echo "flash: loaded. Now: $(SOC_VENV)/bin/litex_term --images $(FPGA_DIR)/boot.json /dev/ttyUSB<n>" \
	       "(the ZCU102's PL UART channel), then reset the SoC (CPU_RESET button)"; \
	fi

# ---- what a timer tick costs on this SoC (docs/results/rtl.md) ----
SOC_PROBE := $(SOC_DIR)/probe.bin
$(SOC_PROBE): hw/soc/probe.S
	@mkdir -p $(dir $@)
	$(CC) -nostdlib -march=rv64imac_zicsr -mabi=lp64 -Wl,-Ttext=0x80200000 \
	  -Wl,--build-id=none $< -o $(SOC_DIR)/probe.elf
	$(CROSS)objcopy -O binary $(SOC_DIR)/probe.elf $@
.PHONY: sim-probe
sim-probe: $(SOC_VENV)/.pinned $(SOC_STUB) $(SOC_PROBE)
	$(SOC_PY) hw/soc/sim.py --build $(SOC_DIR) --stub $(SOC_STUB) --kernel $(SOC_PROBE) \
	  --opensbi $(SOC_SBI) --dtb-addr $(SOC_DTB_ADDR) --until '@@' --log $(SOC_DIR)/probe.log --echo
