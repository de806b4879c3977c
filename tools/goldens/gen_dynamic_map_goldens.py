#!/usr/bin/env python3
"""gen_dynamic_map_goldens.py — bitsandbytes' 8-bit dynamic maps as today's bitsandbytes builds them.

What: bitsandbytes.functional.create_dynamic_map(signed, max_exponent_bits=7, total_bits=8) for
signed=True and False, as 256 float32 bit patterns, written to
tests/data/numerics/bnb_dynamic_map_torch2_{signed,unsigned}.txt in the format of
../shared/golden/bnb_dynamic_map_*.txt (those were made under torch 1.13: a different fp32
linspace, so 42 signed and 43 unsigned entries differ by one or two ulps). The script prints how many
entries differ from the shared goldens when it finds them.
Relies on: PyPI's bitsandbytes and torch (CPU is enough: create_dynamic_map is pure Python over
torch.linspace). Made with bitsandbytes 0.50.2 and torch 2.15.0 (`python3 -m pip install torch
bitsandbytes`). Read by: tests/numerics/test_dynamic_map.cpp (against
numerics::make_dynamic_map(sign, MapLinspace::kTorch2), bitwise).

Regenerate (deterministic):

    python3 tools/goldens/gen_dynamic_map_goldens.py
"""
import os
import struct
import sys

import bitsandbytes
import torch
from bitsandbytes.functional import create_dynamic_map

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "data", "numerics")
SHARED = os.path.join(ROOT, "..", "shared", "golden")


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def read_bits(path):
    with open(path) as f:
        return [int(line.split()[1], 16) for line in f if line.strip() and not line.startswith("#")]


def main():
    os.makedirs(OUT, exist_ok=True)
    for signed, name in ((True, "signed"), (False, "unsigned")):
        values = create_dynamic_map(signed=signed, max_exponent_bits=7, total_bits=8)
        assert values.dtype == torch.float32 and values.numel() == 256
        bits = [f32_bits(v) for v in values.tolist()]
        path = os.path.join(OUT, f"bnb_dynamic_map_torch2_{name}.txt")
        with open(path, "w") as f:
            f.write(f"# bitsandbytes create_dynamic_map(signed={signed}, max_exponent_bits=7, total_bits=8)\n")
            f.write(f"# generated with bitsandbytes {bitsandbytes.__version__}, torch {torch.__version__.split('+')[0]}"
                    "; index, float32 as hex bits, value\n")
            for i, b in enumerate(bits):
                value = struct.unpack("<f", struct.pack("<I", b))[0]
                f.write(f"{i} 0x{b:08x} {value!r}\n")
        print(f"wrote {path}")
        old = os.path.join(SHARED, f"bnb_dynamic_map_{name}.txt")
        if os.path.exists(old):
            differ = [i for i, (a, b) in enumerate(zip(read_bits(old), bits)) if a != b]
            print(f"  {len(differ)} of 256 entries differ from {os.path.normpath(old)} (torch 1.13)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
