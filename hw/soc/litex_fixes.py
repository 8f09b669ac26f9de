# Fixes to LiteX 2022.12 / migen 0.9.2 that Coral's SoC needs, applied at
# import time to the installed packages' objects (never to copies of their
# files). Import this module before any migen signal is created.
#
# 1. migen 0.9.2 names signals after the variable they are assigned to by
#    reading the caller's bytecode (migen/fhdl/tracer.py). It knows the opcodes
#    of Python <= 3.10 only: on 3.11 (CALL, PRECALL, inline CACHE entries) it
#    finds no name and LiteX fails with "Cannot extract clock domain name from
#    code". get_var_name below does the same job with the dis module, which
#    hides those details.
# 2. LiteX's Rocket wrapper compiles software with -march=rv64imac, which
#    binutils 2.40 rejects for csrr ("extension zicsr required"). Coral's SoC
#    builds no LiteX software (no BIOS), but the flags are fixed anyway so that
#    anything that does is built right.
# (3. LiteX runs "make -j" unbounded unless told: the build passes jobs=2.)
import dis

import migen.fhdl.tracer as tracer
from litex.soc.cores.cpu.rocket import core as rocket_core

_CALLS = {"CALL", "CALL_FUNCTION", "CALL_FUNCTION_KW", "CALL_FUNCTION_EX",
          "CALL_METHOD", "CALL_FUNCTION_VAR", "CALL_FUNCTION_VAR_KW"}
# What may come between the call and the store: loading the object an
# attribute is stored on, or copying the value for a chained assignment.
_PASS = {"LOAD_GLOBAL", "LOAD_ATTR", "LOAD_FAST", "LOAD_DEREF", "LOAD_NAME",
         "DUP_TOP", "COPY", "BUILD_LIST", "EXTENDED_ARG", "CACHE", "PRECALL"}
_STORES = {"STORE_NAME", "STORE_ATTR", "STORE_FAST", "STORE_DEREF", "STORE_GLOBAL"}
_code_cache = {}


def _instructions(code):
    got = _code_cache.get(code)
    if got is None:
        ins = list(dis.get_instructions(code))
        got = ({i.offset: n for n, i in enumerate(ins)}, ins)
        _code_cache[code] = got
    return got


def get_var_name(frame):
    """Name of the variable that the call being made in frame stores into."""
    index, ins = _instructions(frame.f_code)
    n = index.get(frame.f_lasti)
    if n is None or ins[n].opname not in _CALLS:
        return None
    for i in ins[n + 1:]:
        if i.opname in _STORES:
            return i.argval
        if i.opname not in _PASS:
            return None
    return None


tracer.get_var_name = get_var_name

for _variant, _flags in rocket_core.GCC_FLAGS.items():
    rocket_core.GCC_FLAGS[_variant] = _flags.replace("-march=rv64imac ", "-march=rv64imac_zicsr_zifencei ") \
                                            .replace("-march=rv64imafdc ", "-march=rv64imafdc_zicsr_zifencei ")
