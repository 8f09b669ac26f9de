#!/usr/bin/env python3
# Coral's LiteX SoC around the Rocket core, for Verilator (make sim) and a
# Zynq board (make fpga, see zynq.py).
#
# The simulated SoC is LiteX's own simulation SoC (litex_sim's SimSoC) with the
# Rocket "linux" variant (LitexLinuxConfig: RV64IMAC, Sv39, one hart), 64 MiB
# of SDRAM at 0x8000_0000, and no BIOS: the ROM at the Rocket's reset address
# holds a few instructions (bootstub.S) that enter OpenSBI with the device
# tree in a1, the way QEMU's reset vector does. OpenSBI, Coral and the DTB are
# preloaded into the SDRAM model.
#
# Memory contents reach the simulation through $readmemh files (*.init) that
# the model reads when it starts, not through the Verilog itself: so a new
# kernel or a new command line only rewrites those files, and the Verilator
# build (minutes) is redone only when the hardware changes.
#
#   coral_soc.py gen --out DIR --stub BIN --opensbi BIN --kernel BIN ...
#       writes the DTS/DTB, the gateware and the simulator's sources into DIR
#       (sim.py compiles them, cached, and runs the simulation)
#
# Run with the virtual environment of scripts/deps.sh --sim (LiteX 2022.12).
import argparse
import json
import os
import subprocess
import sys

import litex_fixes  # noqa: F401  (before migen builds anything: see that file)

from litex.soc.integration.builder import Builder
from litex.soc.integration.common import get_mem_data
from litex.build.sim.config import SimConfig
from litex.tools.litex_sim import SimSoC

SIM_CLK_HZ = 1_000_000          # litex_sim's clock: only what its time stamps (and traces) count in
# This Rocket configuration advances mtime once every 100 core cycles (a fixed
# divider in the generated Verilog, meant for a 100 MHz clock and a 1 MHz
# timer), whatever its shipped .dts says.
MTIME_DIVIDER = 100
# The clock the device tree declares. Nothing in the model runs in real time:
# the guest sees only cycles and mtime (cycles / 100), so the clock rate is
# whatever the DTS says, and timebase-frequency must be that / 100. 100 MHz is
# what this Rocket configuration was made for (and the paper's Rocket ran at):
# mtime at 1 MHz, Coral's 100 Hz tick every 1,000,000 cycles. (Declaring
# litex_sim's 1 MHz instead made the tick come every 10,000 cycles, and two
# trips through OpenSBI per tick ate a third of them.)
CORE_CLK_HZ = 100_000_000
SDRAM_BASE = 0x8000_0000
SDRAM_SIZE = 64 << 20           # MT48LC16M16 x 2 (32-bit wide): 64 MiB
ROM_BASE = 0x1000_0000          # the Rocket's reset address in LiteX
KERNEL_BASE = 0x8020_0000       # where Debian's fw_jump enters the S-mode payload


def make_soc(rom_data, sdram_data, variant="linux"):
    """The SoC; rom_data/sdram_data are lists of bus words (never empty, so
    that every memory gets a $readmemh file)."""
    soc = SimSoC(
        with_sdram=True,
        sdram_module="MT48LC16M16",
        sdram_data_width=32,
        sdram_init=sdram_data,
        cpu_type="rocket",
        cpu_variant=variant,
        uart_name="sim",
        integrated_rom_size=0x1_0000,
        integrated_rom_init=rom_data,
        integrated_sram_size=0x2000,
        with_timer=False,       # Coral uses the CLINT through SBI, not LiteX's timer
    )
    return soc


def probe_csr(variant):
    """uart CSR address and irq of the SoC, from a finalized copy of it (the
    device tree must exist before the real SoC is built: it goes in its SDRAM)."""
    soc = make_soc([0], [0], variant)
    soc.finalize()
    csr = {
        "csr_bases": {"uart": soc.mem_map["csr"] + soc.csr.locs["uart"] * soc.csr.paging},
        "constants": {"uart_interrupt": soc.irq.locs["uart"]},
    }
    return csr, soc.bus.data_width, soc.cpu.endianness


def gen(args):
    """Gateware, simulator sources, DTS/DTB and the memory files, into args.out."""
    csr, width, endian = probe_csr(args.variant)
    os.makedirs(args.out, exist_ok=True)
    dts_file = os.path.join(args.out, "coral.dts")
    dtb_file = os.path.join(args.out, "coral.dtb")
    with open(dts_file, "w") as f:
        f.write(dts(csr, args.bootargs, args.harts, args.core_hz))
    subprocess.check_call(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", dtb_file, dts_file])

    rom = get_mem_data(args.stub, data_width=width, endianness=endian)
    regions = {args.opensbi: hex(SDRAM_BASE), args.kernel: hex(KERNEL_BASE),
               dtb_file: hex(args.dtb_addr)}
    sdram = get_mem_data(regions, data_width=width, endianness=endian, offset=SDRAM_BASE)
    soc = make_soc(rom, sdram, args.variant)

    sim_config = SimConfig()
    sim_config.add_clocker("sys_clk", freq_hz=SIM_CLK_HZ)
    sim_config.add_module("serial2console", "serial")
    sim_config.add_module("coralstat", "serial")   # (sys_clk is added by LiteX)
    builder = Builder(soc, output_dir=args.out, compile_software=False,
                      csr_json=os.path.join(args.out, "csr.json"))
    builder.build(
        sim_config=sim_config,
        run=False,              # compiled (cached) and run by sim.py
        jobs=args.jobs,
        opt_level="O3",         # the toolchain's default is O0: a much slower model
        trace=args.trace,
        # VCD, not FST: LiteX 2022.12's simulator never closes the trace
        # writer, and an FST that is not closed holds only its header (its
        # data waits in memory); a VCD is written as it goes.
        trace_fst=False,
        trace_start=args.trace_start,
        trace_end=args.trace_end,
        extra_mods=["coralstat"],
        extra_mods_path=os.path.abspath(args.simmod),
        interactive=False,
    )


def dts(csr, bootargs, harts=1, sys_clk_hz=CORE_CLK_HZ, mem_size=SDRAM_SIZE):
    """The device tree Coral and OpenSBI read. LiteX 2022.12's
    litex_json2dts_linux does not know the Rocket, so it is written here from
    csr.json and the facts of LitexLinuxConfig (its generated .dts)."""
    uart = csr["csr_bases"]["uart"]
    uart_irq = csr["constants"]["uart_interrupt"] + 1   # LiteX irq n is PLIC source n+1
    timebase = sys_clk_hz // MTIME_DIVIDER
    esc = bootargs.replace("\\", "\\\\").replace('"', '\\"')
    cpus, intc, plic_ctx = [], [], []
    for h in range(harts):
        cpus.append(f"""
    cpu{h}: cpu@{h} {{
      device_type = "cpu";
      compatible = "sifive,rocket0", "riscv";
      reg = <{h}>;
      status = "okay";
      riscv,isa = "rv64imac";
      mmu-type = "riscv,sv39";
      clock-frequency = <{sys_clk_hz}>;
      cpu{h}_intc: interrupt-controller {{
        #interrupt-cells = <1>;
        compatible = "riscv,cpu-intc";
        interrupt-controller;
      }};
    }};""")
        intc.append(f"&cpu{h}_intc 3 &cpu{h}_intc 7")
        plic_ctx.append(f"&cpu{h}_intc 11 &cpu{h}_intc 9")
    return f"""/dts-v1/;
// Generated by hw/soc/coral_soc.py: Coral's LiteX SoC with the Rocket
// LitexLinuxConfig core. timebase-frequency is the real mtime rate: the core
// clock / {MTIME_DIVIDER}.

/ {{
  #address-cells = <1>;
  #size-cells = <1>;
  compatible = "coral,litex-rocket";
  model = "Coral LiteX SoC (Rocket)";

  chosen {{
    bootargs = "{esc}";
    stdout-path = "/soc/serial@{uart:x}";
  }};

  cpus {{
    #address-cells = <1>;
    #size-cells = <0>;
    timebase-frequency = <{timebase}>;{''.join(cpus)}
  }};

  memory@{SDRAM_BASE:x} {{
    device_type = "memory";
    reg = <0x{SDRAM_BASE:x} 0x{mem_size:x}>;
  }};

  soc {{
    #address-cells = <1>;
    #size-cells = <1>;
    compatible = "simple-bus";
    ranges;

    clint@2000000 {{
      compatible = "sifive,clint0", "riscv,clint0";
      interrupts-extended = <{' '.join(intc)}>;
      reg = <0x2000000 0x10000>;
    }};

    plic: interrupt-controller@c000000 {{
      #address-cells = <0>;
      #interrupt-cells = <1>;
      compatible = "sifive,plic-1.0.0", "riscv,plic0";
      interrupt-controller;
      interrupts-extended = <{' '.join(plic_ctx)}>;
      reg = <0xc000000 0x4000000>;
      riscv,max-priority = <7>;
      riscv,ndev = <8>;
    }};

    serial@{uart:x} {{
      compatible = "litex,liteuart";
      reg = <0x{uart:x} 0x100>;
      interrupt-parent = <&plic>;
      interrupts = <{uart_irq}>;
    }};
  }};
}};
"""


def main():
    p = argparse.ArgumentParser(description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen", help="generate the gateware, simulator sources and DTS")
    g.add_argument("--out", required=True)
    g.add_argument("--stub", required=True, help="boot stub (raw binary) for the ROM")
    g.add_argument("--opensbi", required=True, help="OpenSBI fw_jump (raw binary), at 0x80000000")
    g.add_argument("--kernel", required=True, help="Coral (raw binary), at 0x80200000")
    # Where the device tree is preloaded (bootstub.S passes it in a1; fw_jump
    # copies it to 0x8220_0000 before the kernel runs, so the kernel's .bss
    # may cover this place): soc.mk's SOC_DTB_ADDR, just past the kernel.
    g.add_argument("--dtb-addr", type=lambda x: int(x, 0), required=True)
    g.add_argument("--simmod", required=True, help="folder holding our simulator module")
    g.add_argument("--bootargs", default="")
    g.add_argument("--variant", default="linux")
    g.add_argument("--harts", type=int, default=1)
    g.add_argument("--core-hz", type=int, default=CORE_CLK_HZ,
                   help="the core clock the device tree declares (timebase = this / 100)")
    g.add_argument("--jobs", default="2")
    g.add_argument("--trace", action="store_true")
    g.add_argument("--trace-start", type=int, default=0)
    g.add_argument("--trace-end", type=int, default=-1)
    args = p.parse_args()
    if args.cmd == "gen":
        gen(args)


if __name__ == "__main__":
    sys.exit(main())
