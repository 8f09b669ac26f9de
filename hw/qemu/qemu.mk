# hw/qemu: Coral's own QEMU, Debian's 7.2 plus our N-extension patch
# (hw/qemu/README.md). Included from the top Makefile.
#   make qemu-n        build build/qemu-n/qemu-system-riscv64 (cached by a stamp)
#   make test-qemu-n   its tests (hw/qemu/test.sh): PASS/FAIL lines, a summary
.PHONY: qemu-n test-qemu-n
qemu-n:
	@bash hw/qemu/build.sh
test-qemu-n:
	@bash hw/qemu/test.sh
