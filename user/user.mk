# User programs: included by the top-level Makefile, which defines CC (the
# cross gcc) and BUILD. Each program is user/NAME.c linked with the runtime
# (ULIB below) into $(BUILD)/user/bin/NAME, a static ELF at
# USER_BASE (MULTI_BINS link more objects; see MATRIXD_OBJS). The kernel build
# embeds the binaries listed in UBINS.

# Including this file must not change the including Makefile's default goal:
# remember it and restore it at the end (if it was still unset, clearing it
# again lets the next rule the Makefile defines become the default, as usual).
user_saved_goal := $(.DEFAULT_GOAL)

UPROGS := hello echo sh init usertests fault spin sleeper pipetest coptest asynctest prodcons asyncread ubench priotest threadtest cputest matrixd socktest utrace cestest conntest burst kstats fencecost sysfuzz insnfuzz wakestress
UBINS := $(UPROGS:%=$(BUILD)/user/bin/%)

# Programs built from more than user/NAME.c: their extra objects. matrixd is the
# matrix-echo server (main + the coroutine and thread models + their shared
# core + the protocol).
MATRIXD_OBJS := $(BUILD)/user/matrixd_uc.o $(BUILD)/user/matrixd_ut.o $(BUILD)/user/matrixd_core.o \
                $(BUILD)/user/matrix_proto.o
# insnfuzz runs instructions made at build time (scripts/insnfuzz-gen.py:
# INSNFUZZ_N of them from INSNFUZZ_SEED), as slots in its text.
INSNFUZZ_SEED ?= 1
INSNFUZZ_N ?= 1500
MULTI_BINS := $(BUILD)/user/bin/matrixd $(BUILD)/user/bin/burst $(BUILD)/user/bin/insnfuzz
SIMPLE_BINS := $(filter-out $(MULTI_BINS),$(UBINS))

# User code has no frame pointers (-fomit-frame-pointer, GCC's -O2 default,
# said outright): nothing walks a user frame chain (the kernel reports a
# user fault as one line, pc and stval: docs/ABI.md, "Faults"), and a
# debugger unwinds user code by the DWARF call-frame information that -g
# emits. A frame costs 5 instructions in every function that has one, a
# leaf included (GCC 12 has no -momit-leaf-frame-pointer for RISC-V), and
# user code is where the runtime's loop calls poll functions in a tight loop.
UCFLAGS := -std=c11 -Wall -Wextra -Werror -O2 -g \
           -march=rv64imac_zicsr_zifencei -mabi=lp64 -mcmodel=medany \
           -ffreestanding -fno-builtin -nostdlib -static -fno-pie -no-pie \
           -fomit-frame-pointer -fno-stack-protector \
           -Iuser -Ikernel -Ivdso -T user/user.ld

# The runtime every program links: the entry (crt0.S), the system calls
# (usys.S), the user library (ulib.c: strings, processes, console input;
# printf.c: formatted output; umalloc.c: the heap; uthread.c: threads), and the
# COPS runtime (cops.c, cops_ces.c: CES mutexes, cops_switch.S,
# uintr_entry.S). Also the headers every object depends on.
ULIBC := ulib printf umalloc uthread cops cops_ces
ULIB := $(BUILD)/user/crt0.o $(BUILD)/user/usys.o $(BUILD)/user/cops_switch.o $(BUILD)/user/uintr_entry.o \
        $(ULIBC:%=$(BUILD)/user/%.o)
UHDRS := user/ulib.h user/cops.h user/exec_arch.h kernel/abi.h vdso/executor.h vdso/stackful.h vdso/vdso.h vdso/ces.h tests/ces_check.h
UOBJS := $(UPROGS:%=$(BUILD)/user/%.o) $(ULIBC:%=$(BUILD)/user/%.o) $(MATRIXD_OBJS)

# Static pattern rules: they apply only to these targets, so they can never
# compete with the kernel's $(BUILD)/%.c.o rules.
$(UOBJS): $(BUILD)/user/%.o: user/%.c $(UHDRS)
	@mkdir -p $(dir $@)
	$(CC) $(UCFLAGS) -c $< -o $@

$(BUILD)/user/crt0.o $(BUILD)/user/usys.o $(BUILD)/user/cops_switch.o $(BUILD)/user/uintr_entry.o: $(BUILD)/user/%.o: user/%.S kernel/abi.h
	@mkdir -p $(dir $@)
	$(CC) $(UCFLAGS) -c $< -o $@

$(SIMPLE_BINS): $(BUILD)/user/bin/%: $(BUILD)/user/%.o $(ULIB) user/user.ld
	@mkdir -p $(dir $@)
	$(CC) $(UCFLAGS) $(ULIB) $< -o $@

$(BUILD)/user/matrixd.o $(MATRIXD_OBJS): user/matrixd.h user/matrix_proto.h
$(BUILD)/user/bin/matrixd: $(BUILD)/user/matrixd.o $(MATRIXD_OBJS) $(ULIB) user/user.ld
	@mkdir -p $(dir $@)
	$(CC) $(UCFLAGS) $(ULIB) $(BUILD)/user/matrixd.o $(MATRIXD_OBJS) -o $@

# burst (the loopback burst client) checks answers with the protocol engine.
$(BUILD)/user/burst.o: user/matrix_proto.h
$(BUILD)/user/bin/burst: $(BUILD)/user/burst.o $(BUILD)/user/matrix_proto.o $(ULIB) user/user.ld
	@mkdir -p $(dir $@)
	$(CC) $(UCFLAGS) $(ULIB) $(BUILD)/user/burst.o $(BUILD)/user/matrix_proto.o -o $@

# (The generated file's name carries the seed and count, so that changing
# either remakes it.)
INSNFUZZ_CODE := $(BUILD)/user/insnfuzz_code-$(INSNFUZZ_SEED)-$(INSNFUZZ_N)
$(INSNFUZZ_CODE).S: scripts/insnfuzz-gen.py
	@mkdir -p $(dir $@)
	python3 scripts/insnfuzz-gen.py $(INSNFUZZ_SEED) $(INSNFUZZ_N) > $@
$(INSNFUZZ_CODE).o: $(INSNFUZZ_CODE).S
	$(CC) $(UCFLAGS) -c $< -o $@
$(BUILD)/user/bin/insnfuzz: $(BUILD)/user/insnfuzz.o $(INSNFUZZ_CODE).o $(ULIB) user/user.ld
	@mkdir -p $(dir $@)
	$(CC) $(UCFLAGS) $(ULIB) $(BUILD)/user/insnfuzz.o $(INSNFUZZ_CODE).o -o $@

.PHONY: uprogs
uprogs: $(UBINS)

.DEFAULT_GOAL := $(user_saved_goal)
