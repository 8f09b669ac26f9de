# Coral — build, run and test.
#   make              build the kernel, its vDSO and user programs (what make qemu boots)
#   make qemu         boot the kernel on QEMU virt (SMP=, MEM=, ARGS= to change)
#   make test         every test: host unit tests + in-QEMU kernel tests
#   make bench        the matrix-echo server in its four models, measured by the host client
#   make bench-cost   guest instructions per matrixd request: matrix work, TCP/IP, the rest
#                     (-icount, profiler plugin) -> docs/results/cost.md
#   make bench-burst  1,000 connections at once to matrixd over loopback, in the guest
#                     -> docs/results/burst.md
#   make bench-conn   10,000 idle KCUC connections beside 128 active ones in 512 MiB -> docs/results/conn.md
#   make bench-flat   instructions per request beside 0 to 10,000 idle connections, and what
#                     the idle ones cost alone (-icount, profiler plugin, tap: root) -> docs/results/flat.md
#   make eval         the COPS paper's evaluation (section 5) with plots -> docs/results/eval.md
#                     (about 15 minutes; QUICK=1: about 5, fewer points)
#   make bench-smp    spinlock / FIFO hand-off / CES mutex at 1, 2, 4 harts (no
#                     -icount), matrixd at 1 and 2 harts, beside Linux 6.1 in issue
#                     13's loads (scripts/linux/; LINUX=0: without) -> docs/results/smp.md
#   make bench-netlock the network lock as a CES mutex against the spinlock it
#                     replaced (bootargs netlock=spin), matrixd on 1 and 2 harts,
#                     with the lock's contention counters -> docs/results/netlock.md
#   make bench-micro  in-guest microbenchmarks (QEMU -icount shift=0); with our
#                     QEMU built (make qemu-n, or NATIVE=1) also on native N; and
#                     Linux 6.1's figures on the same QEMU (LINUX=0: without)
#   make qemu NATIVE=1  boot on our QEMU with the N extension (hw/qemu)
#   make trace        a scheduler timeline of matrixd under the client -> build/trace/trace.json,
#                     docs/results/trace.png (scripts/trace.sh; docs/results/trace.md)
#   make fuzz         longer runs of user/sysfuzz.c (random system calls), 1 to 4 harts,
#                     both backends, 1 and 4 threads a child -> docs/results/sysfuzz-runs.md;
#                     and of tests/net/framefuzz.py (malformed frames) against matrixd in
#                     each model -> docs/results/framefuzz-runs.md
#   make soak         MINUTES (30) of matrixd in four models at once, 128 connections and
#                     bad input; the kernel's counters compared -> docs/results/soak.md
#   make client       the host latency client (build/host/mclient)
#   make qemu-gdb     boot halted, waiting for gdb on localhost:$(GDBPORT)
#   make deps         install what is missing (scripts/deps.sh), nothing else
#   make hw-test, hw-synth, sim, fpga ...  the hardware side: hw/README.md
# Missing tools are installed by scripts/deps.sh (Debian packages) on first use.

CROSS   ?= riscv64-unknown-elf-
CC      := $(CROSS)gcc
OBJDUMP := $(CROSS)objdump
QEMU    ?= qemu-system-riscv64
OPENSBI ?= /usr/lib/riscv64-linux-gnu/opensbi/generic/fw_dynamic.bin
BUILD   ?= build

SMP     ?= 2
MEM     ?= 256M
ARGS    ?=
GDBPORT ?= 1234
# Host port that QEMU forwards to the guest's port 80 (matrixd).
PORT    ?= 6201

KCFLAGS := -std=c11 -Wall -Wextra -Werror -O2 -g \
           -march=rv64imac_zicsr_zifencei -mabi=lp64 -mcmodel=medany \
           -ffreestanding -fno-builtin -fno-tree-loop-distribute-patterns \
           -fno-omit-frame-pointer -fno-stack-protector -fno-pie \
           -Ikernel -Ivdso -Inet -Itests/kernel -MMD -MP
KLDFLAGS := -nostdlib -static -no-pie -T linker.ld -Wl,--no-relax -Wl,--build-id=none

KERNEL := $(BUILD)/kernel.elf

# The default goal: everything `make qemu` boots (kernel, vDSO, user programs).
.PHONY: all
all: $(KERNEL)

# The kernel: its own sources, the shared executor from vdso/, and the in-kernel
# tests and benchmarks (selected at boot by the command line).
KSRC := $(wildcard kernel/*.c kernel/*.S) vdso/executor.c vdso/stackful.c vdso/switch.S vdso/ces.c \
        $(wildcard tests/kernel/*.c)
KOBJ := $(patsubst %,$(BUILD)/%.o,$(KSRC))

# The network stack: our lwIP port and socket layer (net/), and lwIP 2.1.3
# itself, fetched from Debian's source package into the build folder by
# scripts/deps.sh (third-party source is never committed), with our own
# patches from net/patches/.
LWIP_DIR := $(BUILD)/lwip-2.1.3
LWIP_FILES := core/init.c core/def.c core/inet_chksum.c core/ip.c core/mem.c core/memp.c \
              core/netif.c core/pbuf.c core/tcp.c core/tcp_in.c core/tcp_out.c core/timeouts.c \
              core/ipv4/etharp.c core/ipv4/icmp.c core/ipv4/ip4.c core/ipv4/ip4_addr.c \
              netif/ethernet.c
LWIP_OBJ := $(LWIP_FILES:%=$(BUILD)/lwip/%.o)
NET_OBJ := $(patsubst %,$(BUILD)/%.o,$(wildcard net/*.c))
NETCFLAGS := -Inet/compat -I$(LWIP_DIR)/src/include
KOBJ += $(NET_OBJ) $(LWIP_OBJ)
LWIP_STAMP := $(LWIP_DIR)/.fetched
# Our patches to lwIP (net/patches/, applied by deps.sh): a changed one
# unpacks lwIP again and rebuilds what includes it. LWIP_PATCHES= (empty, in
# another BUILD) builds lwIP without them, for comparisons.
LWIP_PATCHES ?= $(sort $(wildcard net/patches/*.patch))
$(LWIP_STAMP): $(LWIP_PATCHES) | deps
	@LWIP_PATCHES="$(LWIP_PATCHES)" bash scripts/deps.sh --lwip $(BUILD)
	@touch $@
$(NET_OBJ): KCFLAGS += $(NETCFLAGS)
$(NET_OBJ): $(LWIP_STAMP)
$(BUILD)/lwip/%.c.o: $(LWIP_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(KCFLAGS) $(NETCFLAGS) -c $(LWIP_DIR)/src/$*.c -o $@
# The network card: virtio-net on virtio-mmio, modern interface (QEMU 7.2 offers
# the legacy one unless told otherwise), behind QEMU's user-mode network with
# host port $(PORT) forwarded to the guest's port 80.
QEMUNET  = -global virtio-mmio.force-legacy=false \
           -netdev user,id=net0,hostfwd=tcp:127.0.0.1:$(PORT)-:80 \
           -device virtio-net-device,netdev=net0
QEMUOPTS = -machine virt -bios $(OPENSBI) -kernel $(KERNEL) -nographic \
           -smp $(SMP) -m $(MEM) $(QEMUNET) -append "$(ARGS)"

# NATIVE=1: our QEMU with the N extension (hw/qemu, built by make qemu-n), with
# N turned on, so the kernel picks its native user-interrupt backend.
NATIVE ?= 0
QEMU_N := $(BUILD)/qemu-n/qemu-system-riscv64
ifeq ($(NATIVE),1)
QEMU := $(QEMU_N)
QEMUOPTS += -cpu rv64,n=on
QEMU_DEP := qemu-n
endif

.PHONY: deps qemu qemu-gdb test test-host fuzz bench bench-cost bench-conn bench-flat bench-burst bench-micro bench-smp bench-netlock eval trace soak clean client

# Installs what is missing; a no-op (no apt) when everything is there.
deps:
	@bash scripts/deps.sh

# The executor is the dispatch hot path and its functions never call back into
# the kernel: build it without frame pointers (5 instructions per call). Its
# functions leave s0 alone, so backtraces pass through them to their callers.
$(BUILD)/vdso/executor.c.o: KCFLAGS += -fomit-frame-pointer
# Spinlocks likewise (taken a few dozen times per system call that waits); a
# misuse report is a cold call whose frame shows the lock function's address.
$(BUILD)/kernel/spinlock.c.o: KCFLAGS += -fomit-frame-pointer

$(BUILD)/%.c.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(KCFLAGS) -c $< -o $@

$(BUILD)/%.S.o: %.S | deps
	@mkdir -p $(dir $@)
	$(CC) $(KCFLAGS) -c $< -o $@

# User programs (user/user.mk defines UPROGS and UBINS) and the archive of them
# that the kernel image carries (scripts/mkinitrd.py, embedded by kernel/initrd.S).
include user/user.mk
INITRD := $(BUILD)/initrd.img
$(INITRD): $(UBINS) scripts/mkinitrd.py
	python3 scripts/mkinitrd.py $@ $(UBINS)
$(BUILD)/kernel/initrd.S.o: $(INITRD)
$(BUILD)/kernel/initrd.S.o: KCFLAGS += -DINITRD_PATH=\"$(INITRD)\"

# The vDSO image: the shared executor built for user space (user/exec_arch.h),
# linked at USER_VDSO, flattened, and embedded by kernel/vdso_image.S.
VDSO_SRC := vdso/vdso_table.c vdso/executor.c vdso/stackful.c vdso/switch.S vdso/ces.c
VDSO_OBJ := $(patsubst %,$(BUILD)/vdso-image/%.o,$(VDSO_SRC))
VCFLAGS := $(filter-out -Ikernel -Ivdso -Itests/kernel,$(KCFLAGS)) -Iuser -Ivdso -Ikernel
# (the user processes' copy of the executor too: their switch hot path)
$(BUILD)/vdso-image/vdso/executor.c.o: VCFLAGS += -fomit-frame-pointer
$(BUILD)/vdso-image/%.c.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(VCFLAGS) -c $< -o $@
$(BUILD)/vdso-image/%.S.o: %.S | deps
	@mkdir -p $(dir $@)
	$(CC) $(VCFLAGS) -c $< -o $@
$(BUILD)/vdso.elf: $(VDSO_OBJ) vdso/vdso.ld
	$(CC) $(VCFLAGS) -nostdlib -static -no-pie -T vdso/vdso.ld -Wl,--no-relax -Wl,--build-id=none $(VDSO_OBJ) -o $@
$(BUILD)/vdso.bin: $(BUILD)/vdso.elf
	$(CROSS)objcopy -O binary $< $@
$(BUILD)/kernel/vdso_image.S.o: $(BUILD)/vdso.bin
$(BUILD)/kernel/vdso_image.S.o: KCFLAGS += -DVDSO_PATH=\"$(BUILD)/vdso.bin\"

$(KERNEL): $(KOBJ) linker.ld
	$(CC) $(KCFLAGS) $(KLDFLAGS) $(KOBJ) -o $@ -lgcc
	$(OBJDUMP) -d $@ > $(BUILD)/kernel.asm

qemu: $(KERNEL) $(QEMU_DEP)
	@echo "Coral on QEMU: $(SMP) harts, $(MEM). Leave with Ctrl-A X."
	$(QEMU) $(QEMUOPTS)

qemu-gdb: $(KERNEL) $(QEMU_DEP)
	@echo "Waiting for gdb: gdb-multiarch $(KERNEL) -ex 'target remote localhost:$(GDBPORT)'"
	$(QEMU) $(QEMUOPTS) -S -gdb tcp::$(GDBPORT)

test: deps
	@bash scripts/test.sh

test-host: deps
	@bash scripts/test.sh --host-only

bench-micro: $(KERNEL) $(QEMU_DEP)
	@bash scripts/bench-micro.sh

bench-smp: $(KERNEL)
	@bash scripts/bench-smp.sh

bench-netlock: $(KERNEL)
	@bash scripts/bench-netlock.sh

bench: $(KERNEL) client
	@bash scripts/bench-net.sh

# Instructions per matrixd request by category (needs the QEMU source for the
# profiler plugin: make qemu-n) -> docs/results/cost.md
bench-cost: $(KERNEL) client qemu-n
	@bash scripts/bench-cost.sh
# 10,000 idle connections beside 128 active ones in 512 MiB (long: the set-up
# through QEMU's user network takes minutes) -> docs/results/conn.md
bench-conn: $(KERNEL) client
	@bash scripts/bench-conn.sh
# Is the cost of a request flat in the number of open connections? One boot per
# N idle connections (0, 100, 1000, 10000) on a tap device in a network namespace
# of its own (root), profiled like bench-cost -> docs/results/flat.md
bench-flat: $(KERNEL) client qemu-n
	@bash scripts/bench-flat.sh

# N connections at once to matrixd over loopback, inside the guest -> docs/results/burst.md
bench-burst: $(KERNEL)
	@bash scripts/bench-burst.sh

QUICK ?= 0
eval: $(KERNEL) client
	@QUICK=$(QUICK) bash scripts/eval.sh

trace: $(KERNEL) client
	@bash scripts/trace.sh

# MINUTES (30 by default) of matrixd in four models at once under 128
# connections and bad input; counters compared at the end -> docs/results/soak.md
soak: $(KERNEL) client
	@MINUTES=$(or $(MINUTES),30) bash scripts/soak.sh

# Longer runs of user/sysfuzz.c and tests/net/framefuzz.py than make test's, in
# several configurations (scripts/fuzz.sh): docs/results/sysfuzz-runs.md and
# docs/results/framefuzz-runs.md.
fuzz: $(KERNEL) qemu-n client
	@bash scripts/fuzz.sh

clean:
	rm -rf $(BUILD)

# Host tools: the latency client and a host server (make client).
include scripts/host/host.mk
include hw/qemu/qemu.mk

-include $(KOBJ:.o=.d) $(VDSO_OBJ:.o=.d)
include hw/hw.mk
include hw/soc/soc.mk
