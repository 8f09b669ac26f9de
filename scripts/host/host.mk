# Host tools for the network benchmark: included by the top-level Makefile,
# which defines BUILD.
#   make client   $(BUILD)/host/mclient (the latency client) and
#                 $(BUILD)/host/mserver (a host server on the same protocol
#                 engine as the guest's matrixd, to test without QEMU)
# Both link user/matrix_proto.c, the portable protocol engine, built natively.

HOSTCC ?= gcc
HOST_TOOL_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -Iuser
HOST_TOOLS := $(BUILD)/host/mclient $(BUILD)/host/mserver

# Including this file must not change the including Makefile's default goal.
host_saved_goal := $(.DEFAULT_GOAL)

.PHONY: client
client: $(HOST_TOOLS)

$(HOST_TOOLS): $(BUILD)/host/%: scripts/host/%.c user/matrix_proto.c user/matrix_proto.h scripts/host/host.mk
	@mkdir -p $(dir $@)
	$(HOSTCC) $(HOST_TOOL_CFLAGS) scripts/host/$*.c user/matrix_proto.c -lm -o $@

.DEFAULT_GOAL := $(host_saved_goal)
