# hw/: the N extension in RTL, tested against the kernel's own model
# (kernel/nmodel.c). Included from the top Makefile. See hw/README.md.
#
#   make hw-lint     verilator --lint-only -Wall on hw/rtl/*.sv
#   make hw-sim      build the differential testbench into build/hw/ and run
#                    it with fixed seeds (HW_STEPS steps per seed, HW_SEEDS)
#   make hw-synth    yosys synth_xilinx -family xc7 estimates per block, written
#                    to docs/results/hw.md (fails if a block is over budget)
#   make hw-test     what make test runs: lint, the differential test on fixed
#                    seeds, the planted bugs (scripts/hw-test.sh)
#   make hw-broken-<x>  the testbench built against RTL with planted bug <x>
#                    (vector, sideleg, readclear); scripts/hw-test.sh runs them
HW_BUILD := $(BUILD)/hw
HW_RTL := hw/rtl/ucsr.sv hw/rtl/uintc.sv hw/rtl/n_top.sv
HW_STEPS ?= 200000
HW_SEEDS ?= 1 2 3 4
HW_CFLAGS := -std=c11 -O2 -Wall -Wextra -Werror -Ikernel -Ihw/model
HW_MODEL_OBJ := $(HW_BUILD)/nmodel.o $(HW_BUILD)/uintc_model.o $(HW_BUILD)/uintc_vectors.o
HOSTCC ?= gcc
VERILATOR ?= verilator
YOSYS ?= yosys

.PHONY: hw-lint hw-sim hw-synth hw-test
hw-lint:
	$(VERILATOR) --lint-only -Wall $(HW_RTL)

# The models are C; Verilator's generated makefile would compile a .c file as
# C++, so they are built here with cc and linked in as objects.
$(HW_BUILD)/nmodel.o: kernel/nmodel.c kernel/nmodel.h
	@mkdir -p $(@D)
	$(HOSTCC) $(HW_CFLAGS) -c $< -o $@
$(HW_BUILD)/uintc_model.o: hw/model/uintc_model.c hw/model/uintc_model.h
	@mkdir -p $(@D)
	$(HOSTCC) $(HW_CFLAGS) -c $< -o $@
$(HW_BUILD)/uintc_vectors.o: hw/model/uintc_vectors.c hw/model/uintc_vectors.h hw/model/uintc_model.h
	@mkdir -p $(@D)
	$(HOSTCC) $(HW_CFLAGS) -c $< -o $@

# hw_tb DIR, EXTRA VERILATOR FLAGS: build the testbench in DIR.
define hw_tb
	$(VERILATOR) --cc --exe --build -j 2 -Wall $(2) --top-module n_top -Mdir $(1) \
	  -CFLAGS "-O1 -I$(CURDIR)/kernel -I$(CURDIR)/hw/model" \
	  $(HW_RTL) $(CURDIR)/hw/tb/tb_diff.cpp $(addprefix $(CURDIR)/,$(HW_MODEL_OBJ)) \
	  > $(1).log 2>&1 || { tail -30 $(1).log; exit 1; }
endef

$(HW_BUILD)/obj/Vn_top: $(HW_RTL) hw/tb/tb_diff.cpp $(HW_MODEL_OBJ)
	$(call hw_tb,$(HW_BUILD)/obj,)

hw-sim: $(HW_BUILD)/obj/Vn_top
	$(HW_BUILD)/obj/Vn_top $(HW_STEPS) $(HW_SEEDS)

HW_BROKEN := vector sideleg readclear
$(HW_BUILD)/obj-broken-%/Vn_top: $(HW_RTL) hw/tb/tb_diff.cpp $(HW_MODEL_OBJ)
	$(call hw_tb,$(HW_BUILD)/obj-broken-$*,-Wno-fatal -DBROKEN_$(shell echo $* | tr a-z A-Z))
hw-broken-%: $(HW_BUILD)/obj-broken-%/Vn_top
	@:
.PRECIOUS: $(HW_BUILD)/obj-broken-%/Vn_top    # not an intermediate: keep it

HW_RESULTS := docs/results/hw.md
hw-synth:
	@mkdir -p $(HW_BUILD)
	@bash scripts/deps.sh --hw
	@{ echo "# Synthesis estimates of the hw/ blocks"; echo; \
	  echo "Produced by \`make hw-synth\` (hw/synth/synth.sh) on $$(date -u +%F) with"; \
	  echo "$$($(YOSYS) -V | cut -d' ' -f1-2), \`synth_xilinx -family xc7 -flatten -noiopad\`:"; \
	  echo "yosys's own mapping to Xilinx 7-series cells, **estimates, not Vivado results**"; \
	  echo "(no placement, no timing). For scale, the Zynq-7000 xc7z020 has 53,200 LUTs and"; \
	  echo "106,400 flip-flops. Budgets: hw/synth/budget.txt. The whole Rocket SoC for the"; \
	  echo "ZCU102 board is estimated by \`make fpga-synth\`: [hw-soc.md](hw-soc.md)."; echo; } > $(HW_BUILD)/hw.md.head
	YOSYS=$(YOSYS) OUT=$(HW_BUILD) bash hw/synth/synth.sh > $(HW_BUILD)/hw.md.table
	@cat $(HW_BUILD)/hw.md.head $(HW_BUILD)/hw.md.table > $(HW_RESULTS)
	@cat $(HW_RESULTS)

hw-test:
	@BUILD=$(BUILD) bash scripts/hw-test.sh
