#!/usr/bin/env python3
"""gen_fp4_goldens.py — golden files for farthing's FP4 formats (kernels/numerics/fp4_*.h).

What: expected E2M1 codes of fp32 inputs (round to nearest even, saturating), the decode of every
E2M1 and E8M0 code, MXFP4 block scales (E8M0) from amaxes, and whole MXFP4 and NVFP4 blocks
(scale code and element codes), written to tests/data/numerics/. Read by tests/numerics/test_fp4.cpp.
Relies on: ml_dtypes (float4_e2m1fn, float8_e8m0fnu, float8_e4m3fn) as the reference for every
cast, numpy float32 arithmetic (IEEE, round to nearest even) for the scale formulas, and an
independent nearest-value search over the 8 E2M1 magnitudes that every E2M1 cast is checked against
before anything is written. The scale rules themselves (MX v1.0's floor(log2(amax)) - 2 with the
clamp at 2^-127; NVFP4's two-level formula of arXiv 2509.25149) are written out again here from
their definitions, in float64/exact integer arithmetic where the rule is exact and numpy float32
where it rounds, as kernels/numerics/fp4_scales.h documents them.

Regenerate (deterministic, byte-identical on every run; needs numpy and ml_dtypes):

    python3 tools/goldens/gen_fp4_goldens.py

NaN inputs: ml_dtypes casts NaN to a zero with the sign flipped (+NaN -> 0x8); farthing keeps the
NaN's sign (+NaN -> 0x0). The script asserts that ml_dtypes gave a zero and writes farthing's code.

Layout: all little-endian. Files with a header start with 8 magic bytes, uint32 record count,
uint32 record size, then the records.
    e2m1_to_f32.u32     16 x uint32: fp32 bits of E2M1 code c (no header)
    e8m0_to_f32.u32     256 x uint32: fp32 bits of E8M0 code c, 0xFF a NaN (no header)
    fp4_e2m1_rne.bin    "FNFP4E01", records of 8 bytes: uint32 input fp32 bits, uint8 E2M1 code,
                        3 bytes 0
    fp4_mx_scale.bin    "FNFP4S01", records of 8 bytes: uint32 amax fp32 bits, uint8 E8M0 code,
                        3 bytes 0
    fp4_mxfp4_blocks.bin "FNFP4M01", records of 164 bytes: uint8 n (elements used, 1..32),
                        uint8 E8M0 scale code, 2 bytes 0, 32 x uint32 input bits (unused ones 0),
                        32 x uint8 E2M1 codes (unused ones 0)
    fp4_nvfp4_blocks.bin "FNFP4N01", records of 92 bytes: uint8 n (1..16), uint8 E4M3 scale code,
                        2 bytes 0, uint32 tensor amax bits, uint32 global encode scale bits,
                        16 x uint32 input bits, 16 x uint8 E2M1 codes
"""

import math
import pathlib
import sys

import ml_dtypes
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gen_numerics_goldens import splitmix64  # noqa: E402  (the project's one seeded generator)

OUT_DIR = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "numerics"
SEED = 0x66703467656E  # "fp4gen"

F4 = ml_dtypes.float4_e2m1fn
E8 = ml_dtypes.float8_e8m0fnu
E4 = ml_dtypes.float8_e4m3fn
E2M1_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
FLT_MAX = float(np.finfo(np.float32).max)


def f32(values):
    return np.asarray(values, dtype=np.float32)


def bits(values):
    return f32(values).view(np.uint32)


def from_bits(b):
    return np.asarray(b, dtype=np.uint32).view(np.float32)


def rng_u64(n, stream):
    return splitmix64(SEED + stream, n)


def rng_uniform(n, stream):
    """n float64 uniforms in [0, 1) with 53 bits."""
    return (rng_u64(n, stream) >> np.uint64(11)).astype(np.float64) * 2.0**-53


# --- E2M1 ----------------------------------------------------------------------------------------

def independent_e2m1(x_f32):
    """Nearest E2M1 code by search over the 8 magnitudes: ties to the even code, |x| >= 6 and inf
    give ±6, NaN gives a zero with the NaN's sign (farthing's policy)."""
    out = np.zeros(len(x_f32), dtype=np.uint8)
    xb = x_f32.view(np.uint32)
    with np.errstate(invalid="ignore"):
        x64 = x_f32.astype(np.float64)
    for i, x in enumerate(x64):
        sign = 8 if (int(xb[i]) >> 31) else 0
        if math.isnan(x):
            out[i] = sign
            continue
        a = abs(x)
        if a >= 6.0:  # saturation (inf included); also keeps the distances below exact
            out[i] = sign | 7
            continue
        best = 0
        for k in range(1, 8):
            d_best, d_k = abs(a - E2M1_VALUES[best]), abs(a - E2M1_VALUES[k])
            if d_k < d_best or (d_k == d_best and k % 2 == 0):
                best = k
        out[i] = sign | best
    return out


def e2m1_cast(x_f32):
    """ml_dtypes' cast, NaN rows replaced by farthing's policy, checked against the search."""
    x_f32 = f32(x_f32)
    with np.errstate(invalid="ignore", over="ignore"):
        ref = x_f32.astype(F4).view(np.uint8).copy()
    nan = np.isnan(x_f32)
    assert ((ref[nan] & 7) == 0).all(), "ml_dtypes no longer casts NaN to a zero"
    sign = (x_f32.view(np.uint32) >> np.uint32(31)).astype(np.uint8) << np.uint8(3)
    ref[nan] = sign[nan]
    ind = independent_e2m1(x_f32)
    bad = np.flatnonzero(ref != ind)
    if len(bad):
        i = int(bad[0])
        sys.exit(f"e2m1: ml_dtypes and the search disagree on {len(bad)} inputs; first "
                 f"0x{int(x_f32.view(np.uint32)[i]):08X}: {int(ref[i])} vs {int(ind[i])}")
    return ref


def neighbours(b, k=2):
    """fp32 patterns within k ulps of b in magnitude, same sign."""
    out = []
    for d in range(-k, k + 1):
        m = (b & 0x7FFFFFFF) + d
        if 0 <= m <= 0x7F800000:
            out.append((b & 0x80000000) | m)
    return out


def e2m1_inputs():
    mags = set()
    points = E2M1_VALUES + [(a + b) / 2 for a, b in zip(E2M1_VALUES, E2M1_VALUES[1:])] + [7.0]
    points += [6.5, 8.0, 12.0, 100.0, 1e10, FLT_MAX, 0.1, 0.24, 0.26, 1e-30, 2.0**-126, 2.0**-149]
    for p in points:
        mags.update(neighbours(int(bits([p])[0])))
    mags.update([0x7F800000, 0x00000001, 0x007FFFFF, 0x00800000])
    inputs = sorted(mags) + sorted(m | 0x80000000 for m in mags)
    nans = [0x7FC00000, 0x7F800001, 0x7FFFFFFF, 0x7FA00000]
    inputs += nans + [n | 0x80000000 for n in nans]
    # Random: uniform in (-8, 8), any fp32 pattern, and magnitudes 2^-8 .. 2^4.
    u = rng_uniform(2048, 1)
    inputs += list(bits((u * 16.0 - 8.0).astype(np.float32)))
    r = rng_u64(1024, 2)
    inputs += [int(v >> np.uint64(32)) for v in r]
    r = rng_u64(1024, 3)
    for v in r:
        v = int(v)
        exponent = 119 + (v >> 40) % 13
        inputs.append(((v >> 23) & 1) << 31 | exponent << 23 | (v & 0x7FFFFF))
    return np.array(inputs, dtype=np.uint32)


# --- MXFP4 ---------------------------------------------------------------------------------------

def mx_shared_exp(amax):
    """MX v1.0: floor(log2(amax)) - 2, clamped below at -127; None for inf/NaN (the NaN scale)."""
    a = float(amax)
    if math.isnan(a) or math.isinf(a):
        return None
    if a == 0.0:
        return -127
    _, e = math.frexp(a)  # a = m * 2^e, m in [0.5, 1): floor(log2(a)) = e - 1, exact
    return max(e - 1 - 2, -127)


def mx_scale_code(amax):
    s = mx_shared_exp(amax)
    value = np.float32(np.nan) if s is None else np.float32(2.0**s)  # exact: 2^-127 .. 2^125
    if s is not None:
        assert float(value) == 2.0**s
    return int(f32([value]).astype(E8).view(np.uint8)[0])


def mx_block(x_f32):
    """(scale code, element codes) of one MXFP4 block."""
    with np.errstate(invalid="ignore"):
        a = np.abs(x_f32.astype(np.float64))
    amax = np.nan if np.isnan(a).any() else a.max()
    code = mx_scale_code(amax)
    s = mx_shared_exp(amax)
    if s is None:
        return code, np.zeros(len(x_f32), dtype=np.uint8)
    scaled = (x_f32.astype(np.float64) * 2.0**-s).astype(np.float32)  # one rounding, as x * 2^-s
    return code, e2m1_cast(scaled)


def mx_scale_inputs():
    vals = set()
    for e in range(-149, 128):
        vals.update(neighbours(int(bits([2.0**e])[0]), 1))
    vals.update([0, 0x7F800000, 0x7F7FFFFF, 0x00000001, 0x7FC00000, 0x7FFFFFFF])
    vals.update(int(v >> np.uint64(33)) for v in rng_u64(256, 4))  # positive patterns
    return np.array(sorted(vals), dtype=np.uint32)


def mx_blocks():
    blocks = []
    normal = lambda n, stream: np.sqrt(-2 * np.log(1 - rng_uniform(n, stream))) * np.cos(
        2 * np.pi * rng_uniform(n, stream + 1000))
    stream = 10
    # Random normal blocks over the whole exponent range, fp32 subnormals included.
    for k in list(range(-150, 128, 9)) + [-127, -126, -125, -124, 0, 1, 2, 125, 126]:
        x = normal(32, stream) * 2.0**k
        stream += 1
        blocks.append(np.clip(x, -FLT_MAX, FLT_MAX).astype(np.float32))
    # Ties: amax 4 gives X = 1, so the elements are rounded as they stand.
    ties = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.25, -0.75, -1.25, -1.75, -2.5, -3.5, -5.0]
    t = ties + [4.0] + [float(np.nextafter(np.float32(v), np.float32(0))) for v in ties] + \
        [float(np.nextafter(np.float32(v), np.float32(np.sign(v) * 9))) for v in ties[:3]]
    blocks.append(f32(t[:32]))
    blocks.append(f32([v * 2.0**-40 for v in t[:32]]))  # the same ties 40 binades down
    # amax / X in (6, 8): the largest elements saturate.
    blocks.append(f32([7.9, 6.5, 6.0, 7.0, -7.99, 5.5, 3.0] + [0.1] * 25))
    blocks.append(f32([7.0 * 2.0**100, 6.1 * 2.0**100, 1.0 * 2.0**100] + [2.0**95] * 29))
    # Zero blocks, with and without -0.
    blocks.append(f32([0.0] * 32))
    blocks.append(f32([0.0, -0.0] * 16))
    # Subnormal scales: amax below 2^-124 clamps the scale to 2^-127 (code 0).
    blocks.append(from_bits(np.arange(1, 33, dtype=np.uint32) * np.uint32(0x00012345)))
    blocks.append(f32([2.0**-125, -2.0**-126, 2.0**-127, 3 * 2.0**-129, 2.0**-149] + [2.0**-130] * 27))
    blocks.append(f32([1.5 * 2.0**-125, 2.0**-126] + [-(2.0**-128)] * 30))
    # Largest finite amax: scale 2^125 (code 252).
    blocks.append(f32([FLT_MAX, -FLT_MAX, 2.0**126, 1.0] + [2.0**124] * 28))
    # Non-finite: NaN and inf give the NaN scale and code-0 elements.
    for special in [np.nan, np.inf, -np.inf]:
        x = f32(normal(32, stream))
        stream += 1
        x[5] = special
        blocks.append(x)
    out = [(32, b) for b in blocks]
    # Short (tail) blocks.
    for n, k in [(1, 3), (5, -7), (17, 20), (31, 0)]:
        out.append((n, f32(normal(n, stream) * 2.0**k)))
        stream += 1
    return out


# --- NVFP4 ---------------------------------------------------------------------------------------

def nv_global_encode(tensor_amax):
    a = np.float32(tensor_amax)
    if a == 0 or not np.isfinite(a):
        return np.float32(1.0)
    with np.errstate(over="ignore"):
        s = np.float32(np.float32(6.0 * 448.0) / a)
    return min(s, np.float32(2.0**126))


def e4m3_sat(v):
    v = np.float32(min(v, np.float32(448.0)))  # satfinite, as TE clamps before its cast
    return int(f32([v]).astype(E4).view(np.uint8)[0])


def nv_block(x_f32, tensor_amax):
    with np.errstate(invalid="ignore"):
        a = np.abs(x_f32)
    s_enc = nv_global_encode(tensor_amax)
    if np.isnan(a).any() or np.isinf(a).any():
        return s_enc, 0x7F, np.zeros(len(x_f32), dtype=np.uint8)
    amax = np.float32(a.max())
    code = e4m3_sat(np.float32(np.float32(amax / np.float32(6.0)) * s_enc))
    d = np.float32(np.array([code], dtype=np.uint8).view(E4).astype(np.float32)[0])
    s_dec = np.float32(np.float32(1.0) / s_enc)
    if d == 0:
        m = np.float32(0.0)
    else:
        with np.errstate(divide="ignore", over="ignore"):
            m = np.float32(np.float32(1.0) / np.float32(d * s_dec))
        m = min(m, np.float32(FLT_MAX))
    with np.errstate(over="ignore"):
        scaled = (x_f32 * m).astype(np.float32)
    return s_enc, code, e2m1_cast(scaled)


def nv_blocks():
    out = []
    normal = lambda n, stream: np.sqrt(-2 * np.log(1 - rng_uniform(n, stream))) * np.cos(
        2 * np.pi * rng_uniform(n, stream + 1000))
    stream = 200
    # Random blocks at several magnitudes; the tensor amax a factor above the block's, from 1 (the
    # block holds the tensor's amax) to 1e6 (the block scale underflows E4M3 to 0) through the
    # E4M3 subnormal scales (factors around 1e3 .. 1e5).
    for k in [-100, -20, -3, 0, 5, 40, 100]:
        for factor in [1.0, 1.7, 37.0, 1e3, 3e4, 1e5, 4e5, 1e6]:
            x = f32(normal(16, stream) * 2.0**k)
            stream += 1
            amax = float(np.abs(x).max())
            out.append((16, x, np.float32(amax * factor)))
    # E4M3 ties in the block scale: tensor amax 2688 gives s_enc = 1, and amax_b = 6 m with m an
    # E4M3 midpoint makes (amax_b / 6) * s_enc = m exactly.
    e4_vals = np.arange(0, 127, dtype=np.uint8).view(E4).astype(np.float64)
    for i in list(range(0, 12)) + list(range(40, 48)) + list(range(118, 126)):
        m = (e4_vals[i] + e4_vals[i + 1]) / 2
        x = f32(normal(16, stream) * m)
        stream += 1
        x = np.clip(x, -5.9 * m, 5.9 * m).astype(np.float32)
        x[3] = np.float32(6 * m)
        assert float(x[3]) == 6 * m and float(np.float32(x[3] / np.float32(6.0))) == m
        out.append((16, x, np.float32(2688.0)))
    # Element ties: s_enc = 1 and amax_b = 6 (d = 1, m_b = 1).
    ties = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0, -0.25, -0.75, -1.25, -1.75, -2.5, -3.5, -5.0, 0.0]
    out.append((16, f32(ties), np.float32(2688.0)))
    # Block amax above the tensor's (a caller's stale amax): the block scale saturates at 448.
    out.append((16, f32(normal(16, stream) * 1e3), np.float32(1.0)))
    stream += 1
    # Zero tensor and zero block; a zero block in a non-zero tensor.
    out.append((16, f32([0.0, -0.0] * 8), np.float32(0.0)))
    out.append((16, f32([0.0] * 16), np.float32(5.0)))
    # Tensor amax 0/inf/NaN give s_enc = 1; tiny tensor amax caps s_enc at 2^126.
    for t in [np.inf, np.nan]:
        out.append((16, f32(normal(16, stream)), np.float32(t)))
        stream += 1
    tiny = f32(normal(16, stream) * 1e-39)
    stream += 1
    out.append((16, tiny, np.float32(np.abs(tiny).max())))
    # Non-finite elements: the NaN scale.
    for special in [np.nan, np.inf, -np.inf]:
        x = f32(normal(16, stream))
        stream += 1
        x[7] = special
        out.append((16, x, np.float32(special if not np.isnan(special) else 3.0)))
    # Tails.
    for n in [1, 7, 15]:
        x = f32(normal(n, stream) * 3.0)
        stream += 1
        out.append((n, x, np.float32(np.abs(x).max() * 2.5)))
    return out + formula_pin_blocks()


def formula_pin_blocks():
    """Blocks on which the rounding steps of fp4_scales.h's formula show: algebraically equal forms
    give other codes here. Found by a deterministic search over 2^20 (tensor amax, block amax) pairs:
      - the block scale as TE's kernel computes it, amax_b * fp32(s_enc * fp32(1/6)), rounds to
        another E4M3 code than (amax_b / 6) * s_enc (about one pair in 2^20);
      - the element multiplier written s_enc / d_b instead of 1 / (d_b * s_dec) moves x * m across an
        E2M1 tie (x chosen within 3 ulps of tie / m_b)."""
    n = 1 << 20
    amax_t = np.float32(2.0 ** (rng_uniform(n, 900) * 40 - 20)).astype(np.float32)
    amax_b = (amax_t * rng_uniform(n, 901).astype(np.float32)).astype(np.float32)
    with np.errstate(all="ignore"):
        s_enc = (np.float32(2688.0) / amax_t).astype(np.float32)
        paper = ((amax_b / np.float32(6.0)).astype(np.float32) * s_enc).astype(np.float32)
        folded = (amax_b * (s_enc * (np.float32(1.0) / np.float32(6.0))).astype(np.float32)).astype(np.float32)
    c_paper = np.minimum(paper, np.float32(448.0)).astype(E4).view(np.uint8)
    c_folded = np.minimum(folded, np.float32(448.0)).astype(E4).view(np.uint8)
    out = []
    scale_pins = np.flatnonzero(c_paper != c_folded)
    assert len(scale_pins) >= 1, "no pair separates the two block-scale forms"
    for i in scale_pins[:4]:
        x = f32(np.linspace(-1.0, 1.0, 16) * float(amax_b[i]))
        x[0] = amax_b[i]
        out.append((16, x, amax_t[i]))
    d = c_paper.view(E4).astype(np.float32)
    s_dec = (np.float32(1.0) / s_enc).astype(np.float32)
    with np.errstate(all="ignore"):
        m_paper = (np.float32(1.0) / (d * s_dec).astype(np.float32)).astype(np.float32)
        m_other = (s_enc / d).astype(np.float32)
    found = 0
    for i in np.flatnonzero((m_paper != m_other) & (d > 0) & (c_paper < 0x7E))[:2000]:
        xs = []
        for tie in [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]:
            base = int(f32([tie / float(m_paper[i])]).view(np.uint32)[0])
            for b in range(base - 3, base + 4):
                x = from_bits([b])
                a = e2m1_cast((x * m_paper[i]).astype(np.float32))[0]
                o = e2m1_cast((x * m_other[i]).astype(np.float32))[0]
                if a != o and abs(float(x[0])) <= float(amax_b[i]):
                    xs.append(float(x[0]))
        if xs:
            x = f32((xs + [-v for v in xs] + [0.0] * 15)[:15])
            out.append((16, np.append(x, amax_b[i]).astype(np.float32), amax_t[i]))
            found += 1
        if found == 4:
            break
    assert found >= 1, "no block separates the two multiplier forms"
    return out


# --- writing -------------------------------------------------------------------------------------

def write_bytes(name, data):
    path = OUT_DIR / name
    path.write_bytes(data)
    print(f"{path.relative_to(OUT_DIR.parents[2])}: {len(data)} bytes")


def write_records(name, magic, record_size, records):
    body = b"".join(records)
    assert all(len(r) == record_size for r in records)
    header = magic + np.array([len(records), record_size], dtype="<u4").tobytes()
    write_bytes(name, header + body)


def u32le(values):
    return np.asarray(values, dtype="<u4").tobytes()


def main():
    OUT_DIR.mkdir(parents=True, exist_ok=True)

    decoded = np.arange(16, dtype=np.uint8).view(F4).astype(np.float32)
    assert [abs(float(v)) for v in decoded[:8]] == E2M1_VALUES
    assert (e2m1_cast(decoded) == np.arange(16)).all()  # encode(decode(c)) == c, -0 included
    write_bytes("e2m1_to_f32.u32", u32le(decoded.view(np.uint32)))

    with np.errstate(invalid="ignore"):
        e8 = np.arange(256, dtype=np.uint8).view(E8).astype(np.float32)
    for c in range(255):
        assert float(e8[c]) == 2.0 ** (c - 127)
    assert np.isnan(e8[255])
    write_bytes("e8m0_to_f32.u32", u32le(e8.view(np.uint32)))

    inputs = e2m1_inputs()
    codes = e2m1_cast(from_bits(inputs))
    write_records("fp4_e2m1_rne.bin", b"FNFP4E01", 8,
                  [u32le([i]) + bytes([int(c), 0, 0, 0]) for i, c in zip(inputs, codes)])

    amaxes = mx_scale_inputs()
    write_records("fp4_mx_scale.bin", b"FNFP4S01", 8,
                  [u32le([a]) + bytes([mx_scale_code(from_bits([a])[0]), 0, 0, 0]) for a in amaxes])

    recs = []
    for n, x in mx_blocks():
        scale, el = mx_block(x)
        xb = np.zeros(32, dtype=np.uint32)
        xb[:n] = x.view(np.uint32)
        cb = np.zeros(32, dtype=np.uint8)
        cb[:n] = el
        recs.append(bytes([n, scale, 0, 0]) + u32le(xb) + cb.tobytes())
    write_records("fp4_mxfp4_blocks.bin", b"FNFP4M01", 164, recs)

    recs = []
    for n, x, tensor_amax in nv_blocks():
        s_enc, scale, el = nv_block(x, tensor_amax)
        xb = np.zeros(16, dtype=np.uint32)
        xb[:n] = x.view(np.uint32)
        cb = np.zeros(16, dtype=np.uint8)
        cb[:n] = el
        recs.append(bytes([n, scale, 0, 0]) + u32le([f32([tensor_amax]).view(np.uint32)[0]]) +
                    u32le([f32([s_enc]).view(np.uint32)[0]]) + u32le(xb) + cb.tobytes())
    write_records("fp4_nvfp4_blocks.bin", b"FNFP4N01", 92, recs)


if __name__ == "__main__":
    main()
