#!/usr/bin/env python3
"""fp4_prescale_tradeoff.py — what MXFP4's 3/4 pre-scale (mxfp4.sr_prescale, docs/fp4.md) trades:
the clipping bias of stochastic rounding against its variance, in exact expectation.

An MX block's scale X = 2^(floor(log2 amax) - 2) puts its largest |x|/X in [4, 8); E2M1 stops at 6,
so without the pre-scale the elements above 6 clip (E[q] != x: a bias), and with it every element
is rounded at 3/4 of that (nothing clips: E[q] = x) on a grid that is coarser relative to the
values. For 32-element blocks of Gaussian and Student-t(3) values this prints, relative to the
elements' mean square, the stochastic rounding's variance and the squared clipping bias.

An illustration in numpy (reference tooling; numpy from PyPI or Debian's python3-numpy), not
farthing's code: farthing's encoder is kernels/numerics/fp4_block.h, and test_fp4_cpu shows the
bias going away there. usage: python3 tools/fp4_prescale_tradeoff.py
"""
import numpy as np

E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])  # non-negative E2M1 values


def sr_variance_and_bias(x, prescale):
    amax = np.abs(x).max(axis=1, keepdims=True)
    scale = 2.0 ** (np.floor(np.log2(amax)) - 2)
    multiplier = 0.75 if prescale else 1.0
    v = np.abs(x) / scale * multiplier             # what is rounded
    c = np.minimum(v, 6.0)                          # saturation at E2M1's largest value
    i = np.minimum(np.searchsorted(E2M1, c, side="right") - 1, len(E2M1) - 2)
    lo, hi = E2M1[i], E2M1[i + 1]
    decode = scale / multiplier
    variance = (c - lo) * (hi - c) * decode ** 2    # stochastic rounding between lo and hi
    bias = (c - v) * decode                         # E[q] - |x|: clipping only
    mean_square = (x ** 2).mean()
    return variance.mean() / mean_square, (bias ** 2).mean() / mean_square, np.mean(v > 6.0)


def main():
    rng = np.random.default_rng(0)
    blocks = 400_000
    print("values        pre-scale  SR variance  squared clipping bias  elements clipped")
    for name, x in (("Gaussian", rng.standard_normal((blocks, 32))),
                    ("Student-t(3)", rng.standard_t(3, (blocks, 32)))):
        for prescale in (False, True):
            variance, bias2, clipped = sr_variance_and_bias(x, prescale)
            print(f"{name:13s} {'3/4' if prescale else 'none':9s}  {variance:.4f}       {bias2:.5f}"
                  f"                {100 * clipped:.2f}%")


if __name__ == "__main__":
    main()
