#!/usr/bin/env python3
# The same Rocket SoC for an FPGA board: the AMD ZCU102 (Zynq UltraScale+
# XCZU9EG, 274k LUTs; the COPS paper used an XCZU15EG of the same family).
# Why this board: it has DDR4 wired to the programmable logic (a 512 MiB
# component bank), so the whole SoC (Rocket, LiteDRAM, UART) lives in the PL
# and needs nothing from the Arm side; its USB-UART has a channel on PL pins;
# openFPGALoader knows it ("-b zcu102", JTAG load of the PL); and its pins
# come from an openly licensed file, LiteX-Boards' platform (BSD-2-Clause,
# PyPI litex-boards 2023.12, imported, not copied). The smaller Zynq-7000
# boards (ZedBoard, PYNQ-Z2) have no PL-side DRAM: Coral's 22 MiB image would
# need the PS DDR and the Arm side's boot firmware.
#
#   zcu102.py --out DIR [--bootargs ...]   Verilog, XDC and Vivado TCL in DIR/gateware,
#                                          LiteX's BIOS, the board's DTS/DTB and boot.json
#
# On the board, LiteX's BIOS (in the SoC's ROM) trains the DDR4 and waits for
# images over the serial line: `litex_term --images DIR/boot.json /dev/ttyUSBn`
# sends OpenSBI, Coral, the DTB and the boot stub, and the BIOS jumps to the
# stub (the last image), which enters OpenSBI with the DTB in a1.
import argparse
import json
import os
import subprocess
import sys

import litex_fixes  # noqa: F401
import litex.build.xilinx as litex_xilinx
from litex.build.xilinx.platform import XilinxPlatform

from migen import ClockDomain, Instance, Module, Signal
from litex.soc.cores.clock import USPMMCM, USPIDELAYCTRL
from litex.soc.integration.builder import Builder
from litex.soc.integration.soc_core import SoCCore
from litedram.modules import MT40A256M16
from litedram.phy import usddrphy

from coral_soc import SDRAM_BASE, dts


# LiteX-Boards 2023.12 names the UltraScale+ platform class, which LiteX
# 2022.12 has under its generic name.
class XilinxUSPPlatform(XilinxPlatform):
    device_family = "usp"


litex_xilinx.XilinxUSPPlatform = XilinxUSPPlatform
from litex_boards.platforms import xilinx_zcu102  # noqa: E402

SYS_CLK_HZ = 125_000_000   # LiteX's DDR4 PHY runs the memory at 4x this
DDR_SIZE = 512 << 20       # the PL DDR4 component bank (4 x MT40A256M16)
KERNEL_BASE = 0x8020_0000
DTB_ADDR = 0x8060_0000     # as in make sim (soc.mk SOC_DTB_ADDR)
STUB_ADDR = 0x8070_0000


class CRG(Module):
    """125 MHz board clock -> sys (125 MHz) and sys4x (500 MHz) for the DDR4
    PHY, plus the 500 MHz IDELAY reference."""
    def __init__(self, platform, sys_clk_freq):
        self.rst = Signal()
        self.clock_domains.cd_sys = ClockDomain()
        self.clock_domains.cd_sys4x = ClockDomain()
        self.clock_domains.cd_pll4x = ClockDomain()
        self.clock_domains.cd_idelay = ClockDomain()
        self.submodules.pll = pll = USPMMCM(speedgrade=-2)
        self.comb += pll.reset.eq(self.rst)
        pll.register_clkin(platform.request("clk125"), 125e6)
        pll.create_clkout(self.cd_pll4x, sys_clk_freq * 4, buf=None, with_reset=False)
        pll.create_clkout(self.cd_idelay, 500e6)
        platform.add_false_path_constraints(self.cd_sys.clk, pll.clkin)
        self.specials += [
            Instance("BUFGCE_DIV", p_BUFGCE_DIVIDE=4, i_CE=1, i_I=self.cd_pll4x.clk, o_O=self.cd_sys.clk),
            Instance("BUFGCE", i_CE=1, i_I=self.cd_pll4x.clk, o_O=self.cd_sys4x.clk),
        ]
        self.submodules.idelayctrl = USPIDELAYCTRL(cd_ref=self.cd_idelay, cd_sys=self.cd_sys)


class CoralZCU102(SoCCore):
    def __init__(self, variant="linux"):
        platform = xilinx_zcu102.Platform()
        self.submodules.crg = CRG(platform, SYS_CLK_HZ)
        SoCCore.__init__(self, platform, SYS_CLK_HZ, ident="Coral on Rocket, ZCU102",
                         cpu_type="rocket", cpu_variant=variant,
                         integrated_rom_size=0x1_0000, integrated_sram_size=0x2000,
                         uart_name="serial", uart_baudrate=115200)
        self.submodules.ddrphy = usddrphy.USPDDRPHY(platform.request("ddram"), memtype="DDR4",
                                                    sys_clk_freq=SYS_CLK_HZ, iodelay_clk_freq=500e6)
        self.add_sdram("sdram", phy=self.ddrphy, module=MT40A256M16(SYS_CLK_HZ, "1:4"),
                       size=DDR_SIZE, l2_cache_size=8192)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--bootargs", default="")
    ap.add_argument("--opensbi", required=True)
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--stub", required=True)
    ap.add_argument("--no-bios", action="store_true", help="skip compiling LiteX's BIOS")
    a = ap.parse_args()
    # The BIOS build runs "python3 -m litex...": it must find this venv's LiteX.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]

    soc = CoralZCU102()
    builder = Builder(soc, output_dir=a.out, compile_software=not a.no_bios,
                      csr_json=os.path.join(a.out, "csr.json"))
    # run=False: write the Verilog, the XDC and the Vivado script only.
    builder.build(run=False, build_name="coral_zcu102")

    with open(os.path.join(a.out, "csr.json")) as f:
        csr = json.load(f)
    dts_file = os.path.join(a.out, "coral.dts")
    dtb_file = os.path.join(a.out, "coral.dtb")
    with open(dts_file, "w") as f:
        f.write(dts(csr, a.bootargs, 1, sys_clk_hz=SYS_CLK_HZ, mem_size=DDR_SIZE))
    subprocess.check_call(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", dtb_file, dts_file])
    # litex_term's boot list: the BIOS jumps to the last image (the stub).
    boot = {os.path.abspath(a.opensbi): hex(SDRAM_BASE), os.path.abspath(a.kernel): hex(KERNEL_BASE),
            os.path.abspath(dtb_file): hex(DTB_ADDR), os.path.abspath(a.stub): hex(STUB_ADDR)}
    with open(os.path.join(a.out, "boot.json"), "w") as f:
        json.dump(boot, f, indent=2)
    print(f"zcu102: Vivado inputs in {os.path.join(a.out, 'gateware')}")


if __name__ == "__main__":
    sys.exit(main())
