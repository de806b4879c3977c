#!/usr/bin/env python3
"""gen_numerics_goldens.py — golden files for farthing's scalar casts (kernels/numerics).

What: expected outputs of fp32 -> bf16 / fp16 / fp8 e4m3fn / fp8 e5m2 round-to-nearest-even
(non-saturating: overflow gives inf, or NaN for e4m3fn, as ml_dtypes and PyTorch do), and the
exact decodes of every fp16 / e4m3fn / e5m2 code, written to tests/data/numerics/.
Relies on: numpy (fp16) and ml_dtypes (bf16, fp8) as the reference; every output is also checked
here against an independent nearest-value search over the format's decode table before it is
written. Read by: tests/numerics/test_bf16.cpp and tests/numerics/test_minifloat.cpp.

Regenerate (deterministic, byte-identical on every run; needs numpy and ml_dtypes):

    python3 tools/goldens/gen_numerics_goldens.py

Random inputs (not stored; the C++ tests regenerate them):
    kSeed = 0x6E756D6572696373, n = 2**20. With SplitMix64 (tests/support/test_support.h: state
    += 0x9E3779B97F4A7C15, then the two xor-shift-multiply steps), element i takes r = next(),
    the i-th output (one call per element, i = 0 .. n-1):
      i <  n/2: bits = r >> 32                                  (any fp32 pattern)
      i >= n/2: bits = sign << 31 | exponent << 23 | mantissa  where
                mantissa = r & 0x7FFFFF, sign = (r >> 23) & 1,
                exponent = 100 + ((r >> 32) % 51)               (biased, in [100, 150])

Layout: all little-endian, no headers unless stated.
    f32_to_bf16_rne.u16      n x uint16, bf16 code of random input i
    f32_to_fp16_rne.u16      n x uint16, fp16 code
    f32_to_e4m3fn_rne.u8     n x uint8, fp8 e4m3fn code (overflow -> NaN)
    f32_to_e5m2_rne.u8       n x uint8, fp8 e5m2 code (overflow -> inf)
    fp16_to_f32.u32          65536 x uint32, fp32 bit pattern of fp16 code c
    e4m3fn_to_f32.u32        256 x uint32, fp32 bit pattern of e4m3fn code c
    e5m2_to_f32.u32          256 x uint32, fp32 bit pattern of e5m2 code c
    edge_cases.bin           header: 8 bytes magic b"FNEDGE01", uint32 record count,
                             uint32 record size (12); then records of
                             uint32 input fp32 bits, uint16 bf16, uint16 fp16, uint8 e4m3fn,
                             uint8 e5m2, uint16 reserved (0)
NaN outputs are written as the reference produced them; the tests compare only NaN-ness.
"""

import math
import pathlib
import sys

import ml_dtypes
import numpy as np

SEED = 0x6E756D6572696373
N_RANDOM = 1 << 20
OUT_DIR = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "numerics"

MASK64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15


def splitmix64(seed, n):
    """The first n outputs of SplitMix64(seed), vectorised (uint64 arithmetic wraps mod 2^64)."""
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + np.arange(1, n + 1, dtype=np.uint64) * np.uint64(GOLDEN_GAMMA)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def splitmix64_scalar(seed, n):
    """Plain-integer SplitMix64, to check the vectorised one."""
    state, out = seed, []
    for _ in range(n):
        state = (state + GOLDEN_GAMMA) & MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        out.append(z ^ (z >> 31))
    return out


def random_inputs():
    """The 2^20 fp32 bit patterns described in the module docstring (uint32)."""
    r = splitmix64(SEED, N_RANDOM)
    assert [int(v) for v in r[:64]] == splitmix64_scalar(SEED, 64)
    half = N_RANDOM // 2
    bits = (r >> np.uint64(32)).astype(np.uint32)
    rb = r[half:]
    mantissa = (rb & np.uint64(0x7FFFFF)).astype(np.uint32)
    sign = ((rb >> np.uint64(23)) & np.uint64(1)).astype(np.uint32)
    exponent = (np.uint64(100) + (rb >> np.uint64(32)) % np.uint64(51)).astype(np.uint32)
    bits[half:] = (sign << np.uint32(31)) | (exponent << np.uint32(23)) | mantissa
    return bits


# --- formats --------------------------------------------------------------------------------

class Format:
    def __init__(self, name, dtype, exp_bits, man_bits, has_inf, code_dtype):
        self.name, self.dtype, self.code_dtype = name, dtype, code_dtype
        self.exp_bits, self.man_bits, self.has_inf = exp_bits, man_bits, has_inf
        self.bias = (1 << (exp_bits - 1)) - 1
        self.n_codes = 1 << (1 + exp_bits + man_bits)

    def cast(self, bits_u32):
        """Reference cast of fp32 bit patterns to this format's codes."""
        x = bits_u32.view(np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            return x.astype(self.dtype).view(self.code_dtype)

    def decode_all(self):
        """fp32 bit pattern of every code (all decodes are exact in fp32)."""
        codes = np.arange(self.n_codes, dtype=np.uint32).astype(self.code_dtype)
        return codes.view(self.dtype).astype(np.float32).view(np.uint32)

    def positive_finite(self):
        """(values as float64, codes), ascending, for all finite codes with sign bit 0."""
        codes = np.arange(self.n_codes // 2, dtype=np.uint32).astype(self.code_dtype)
        with np.errstate(invalid="ignore"):
            vals = codes.view(self.dtype).astype(np.float64)
        keep = np.isfinite(vals)
        return vals[keep], codes[keep].astype(np.uint32)

    def max_finite(self):
        return self.positive_finite()[0][-1]

    def ulp_at_max(self):
        return math.ldexp(1.0, math.frexp(self.max_finite())[1] - 1 - self.man_bits)


BF16 = Format("bf16", ml_dtypes.bfloat16, 8, 7, True, np.uint16)
FP16 = Format("fp16", np.float16, 5, 10, True, np.uint16)
E4M3 = Format("e4m3fn", ml_dtypes.float8_e4m3fn, 4, 3, False, np.uint8)
E5M2 = Format("e5m2", ml_dtypes.float8_e5m2, 5, 2, True, np.uint8)
FORMATS = [BF16, FP16, E4M3, E5M2]


def independent_cast(fmt, bits_u32):
    """Round to nearest even by searching the decode table in float64; overflow -> inf or NaN.

    An independent check on the reference libraries: it shares no code with them beyond the
    decode of each code, which is exact.
    """
    vals, codes = fmt.positive_finite()
    # A virtual next value above max finite: values at or past the midpoint to it overflow,
    # except an exact tie, which goes to whichever neighbour has an even code.
    top = fmt.max_finite() + fmt.ulp_at_max()
    vals_ext = np.append(vals, top)
    with np.errstate(invalid="ignore"):
        x = bits_u32.view(np.float32).astype(np.float64)
    sign = (bits_u32 >> np.uint32(31)).astype(np.uint32) << np.uint32(fmt.exp_bits + fmt.man_bits)
    a = np.abs(x)
    finite = np.isfinite(a)
    af = np.where(finite, a, 0.0)
    hi = np.clip(np.searchsorted(vals_ext, af, side="left"), 1, len(vals_ext) - 1)
    lo = hi - 1
    exact_hi = vals_ext[hi] == af
    d_lo, d_hi = af - vals_ext[lo], vals_ext[hi] - af
    lo_code_even = (codes[lo] & 1) == 0
    pick_hi = exact_hi | (d_hi < d_lo) | ((d_hi == d_lo) & ~lo_code_even)
    idx = np.where(pick_hi, hi, lo)
    # The code after max finite is inf where the format has one, NaN for e4m3fn (0x7F).
    inf_or_nan = int(codes[-1]) + 1
    nan_code = (1 << (fmt.exp_bits + fmt.man_bits)) - 1  # all ones: NaN in every format here
    out = np.where(idx == len(vals), inf_or_nan, codes[np.minimum(idx, len(vals) - 1)])
    out = np.where(np.isinf(a), inf_or_nan, out)
    out = np.where(np.isnan(a), nan_code, out)
    return (out.astype(np.uint32) | sign).astype(fmt.code_dtype)


def is_nan_code(fmt, codes):
    c = codes.astype(np.uint32) & np.uint32((1 << (fmt.exp_bits + fmt.man_bits)) - 1)
    if fmt.has_inf:
        return c > np.uint32(((1 << fmt.exp_bits) - 1) << fmt.man_bits)
    return c == np.uint32((1 << (fmt.exp_bits + fmt.man_bits)) - 1)


def checked_cast(fmt, bits_u32):
    """Reference cast, asserted equal to the independent one (NaN compared as NaN-ness)."""
    ref = fmt.cast(bits_u32)
    ind = independent_cast(fmt, bits_u32)
    ref_nan, ind_nan = is_nan_code(fmt, ref), is_nan_code(fmt, ind)
    bad = (ref_nan != ind_nan) | (~ref_nan & (ref != ind))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        sys.exit(f"{fmt.name}: reference and independent cast disagree on {int(bad.sum())} inputs;"
                 f" first: input 0x{int(bits_u32[i]):08X} reference 0x{int(ref[i]):X}"
                 f" independent 0x{int(ind[i]):X}")
    return ref


# --- edge inputs ----------------------------------------------------------------------------

def f32_bits(value):
    """fp32 bit pattern of a float64 value that must be exactly representable in fp32."""
    f = np.float32(value)
    assert float(f) == value, f"{value!r} is not an fp32 value"
    return int(np.array([f]).view(np.uint32)[0])


def neighbours(bits):
    """bits and the fp32 patterns one ulp below and above it in magnitude (same sign)."""
    out = [bits]
    if bits & 0x7FFFFFFF:
        out.append(bits - 1)
    if (bits & 0x7FFFFFFF) < 0x7F800000:
        out.append(bits + 1)
    return out


def edge_inputs():
    """Every edge named in docs/numerics.md §1, for every target format, both signs."""
    mags = set()
    # Zero, inf, fp32 extremes and subnormals.
    mags.update([0x00000000, 0x7F800000, 0x7F7FFFFF, 0x7F7FFFFE, 0x00800000, 0x00800001,
                 0x007FFFFF, 0x00000001, 0x00000002, 0x00000003, 0x00400000, 0x00012345])
    # Every power of two in fp32, subnormal ones included: the far-below-subnormal paths.
    mags.update(f32_bits(math.ldexp(1.0, e)) for e in range(-149, 128))
    # Explicit values from the spec and the tests' spot checks.
    for v in [1.0, 1.0 + 1e-4, 1.5, 3.0, 0.1, 1.0 / 3.0, 448.0, 464.0, 465.0, 480.0, 57344.0,
              61440.0, 65504.0, 65519.0, 65520.0, 65536.0, 3.4e38]:
        mags.add(f32_bits(float(np.float32(v))))
    for fmt in FORMATS:
        vals, codes = fmt.positive_finite()
        man_mask = (1 << fmt.man_bits) - 1
        top = fmt.max_finite() + fmt.ulp_at_max()
        # Smallest/largest subnormal and normal, max finite, the overflow midpoint and beyond:
        # each with its fp32 neighbours.
        specials = [vals[1], vals[man_mask], vals[man_mask + 1], vals[-1],
                    (vals[-1] + top) / 2, top, 2 * top]
        for v in specials:
            if v < 2.0**128:  # bf16's virtual next value is beyond fp32
                mags.update(neighbours(f32_bits(v)))
        # Ties (midpoints between adjacent values) with their fp32 neighbours. The first pair is
        # (0, smallest subnormal); the pair (largest subnormal, smallest normal) and each
        # (largest mantissa, next power of two) carry into the exponent. Small formats: every
        # pair. Wide ones: per exponent, the first four and last two pairs, both parities.
        all_pairs = len(vals) <= 256
        for k in range(len(vals) - 1):
            m = int(codes[k]) & man_mask
            if all_pairs or m < 4 or m >= man_mask - 1:
                mags.update(neighbours(f32_bits((vals[k] + vals[k + 1]) / 2)))
        # A few exact values inside each binade (they must not move).
        for k in range(0, len(vals), max(1, len(vals) // 64)):
            mags.add(f32_bits(vals[k]))
    inputs = sorted(mags) + sorted(m | 0x80000000 for m in mags)
    # NaNs: quiet and signalling, smallest and largest payloads, payloads only in the bits that
    # bf16 truncates away, both signs.
    nans = [0x7FC00000, 0x7FC00001, 0x7F800001, 0x7FBFFFFF, 0x7FFFFFFF, 0x7FA00000, 0x7F800100,
            0x7F808000, 0x7F80FFFF, 0x7F810000, 0x7FE12345]
    inputs += nans + [n | 0x80000000 for n in nans]
    return np.array(inputs, dtype=np.uint32)


# --- writing --------------------------------------------------------------------------------

def write(name, array):
    path = OUT_DIR / name
    data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
    path.write_bytes(data)
    print(f"{path.relative_to(OUT_DIR.parents[2])}: {len(data)} bytes")


def main():
    OUT_DIR.mkdir(parents=True, exist_ok=True)

    rand = random_inputs()
    write("f32_to_bf16_rne.u16", checked_cast(BF16, rand))
    write("f32_to_fp16_rne.u16", checked_cast(FP16, rand))
    write("f32_to_e4m3fn_rne.u8", checked_cast(E4M3, rand))
    write("f32_to_e5m2_rne.u8", checked_cast(E5M2, rand))

    for fmt, name in [(FP16, "fp16_to_f32.u32"), (E4M3, "e4m3fn_to_f32.u32"),
                      (E5M2, "e5m2_to_f32.u32")]:
        decoded = fmt.decode_all()
        # The decode must round-trip to the same code for every non-NaN code.
        codes = np.arange(fmt.n_codes, dtype=np.uint32).astype(fmt.code_dtype)
        keep = ~is_nan_code(fmt, codes)
        assert (fmt.cast(decoded)[keep] == codes[keep]).all(), fmt.name
        write(name, decoded)

    edges = edge_inputs()
    record = np.dtype([("input", "<u4"), ("bf16", "<u2"), ("fp16", "<u2"), ("e4m3fn", "u1"),
                       ("e5m2", "u1"), ("reserved", "<u2")])
    assert record.itemsize == 12
    recs = np.zeros(len(edges), dtype=record)
    recs["input"] = edges
    recs["bf16"] = checked_cast(BF16, edges)
    recs["fp16"] = checked_cast(FP16, edges)
    recs["e4m3fn"] = checked_cast(E4M3, edges)
    recs["e5m2"] = checked_cast(E5M2, edges)
    header = b"FNEDGE01" + np.array([len(recs), record.itemsize], dtype="<u4").tobytes()
    path = OUT_DIR / "edge_cases.bin"
    path.write_bytes(header + recs.tobytes())
    print(f"{path.relative_to(OUT_DIR.parents[2])}: {len(header) + recs.nbytes} bytes"
          f" ({len(recs)} edge inputs)")


if __name__ == "__main__":
    main()
