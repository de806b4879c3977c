#!/usr/bin/env python3
"""gen_adamw_golden.py — golden trajectory of torch.optim.AdamW for farthing's optimizer.

What: 3,072 fp32 parameters in four tensors and two parameter groups (one with weight decay,
one without, different lr/betas/eps), stepped 100 times by torch.optim.AdamW(foreach=False)
on random gradients; the parameters, exp_avg and exp_avg_sq after steps 1, 10 and 100 are
written to tests/data/optim/. Before writing, the script replays the same steps with numpy
using the exact formula of kernels/numerics/adamw_update.h and reports how many elements
differ from torch: exp_avg and exp_avg_sq match bitwise; a few parameters differ by an ulp
of their update because torch's CPU sqrt (MKL vector maths) is not correctly rounded. It fails
unless the replay stays within the C++ test's bound: |a - b| <= 1e-6 * max(|b|, rms(b)).
Read by: tests/optim/test_adamw_golden.cpp.

Regenerate (deterministic; needs torch and numpy, e.g. `pip install torch numpy`):

    python3 tools/goldens/gen_adamw_golden.py

Random inputs (only the initial parameters and step 1's gradient are stored; the C++ test
regenerates the rest): SplitMix64 as in tests/support/test_support.h, normal() by Box-Muller
in double from two consecutive outputs: u1 = ((r1 >> 11) + 1) * 2^-53,
u2 = (r2 >> 11) * 2^-53, z = sqrt(-2 log u1) * cos(2 pi u2), then rounded to fp32.
    initial parameter i        = fp32(0.02 * z_i),                  stream SEED_INIT
    gradient of step t, elem i = fp32(grad_scale(t) * z),            stream SEED_GRAD, drawn
                                 step by step, element by element in flat order;
                                 grad_scale(t) = 1e-3 * (1 + t % 5)

Layout: flat order t0 (1024, group 0), t1 (300, group 1), t2 (1536, group 0), t3 (212, group 1).
    group 0: lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 0.1
    group 1: lr 3e-3, betas (0.8, 0.99),  eps 1e-6, weight_decay 0
Files, little-endian float32, 3,072 values each, no header:
    adamw_init.f32, adamw_grad_step001.f32,
    adamw_step{001,010,100}_{param,exp_avg,exp_avg_sq}.f32
"""

import math
import pathlib
import sys

import numpy as np
import torch

SEED_INIT = 0x61646177696E6974  # "adawinit"
SEED_GRAD = 0x6164617767726164  # "adawgrad"
TENSORS = [(1024, 0), (300, 1), (1536, 0), (212, 1)]
GROUPS = [
    dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1),
    dict(lr=3e-3, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.0),
]
STEPS = 100
SNAPSHOTS = (1, 10, 100)
OUT_DIR = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "optim"
MASK64 = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def normal(self):
        # math.log/math.cos are the C library's, as std::log/std::cos in the C++ test.
        u1 = ((self.next() >> 11) + 1) * 2.0**-53
        u2 = (self.next() >> 11) * 2.0**-53
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * 3.14159265358979323846 * u2)


def normals_f32(rng, n, scale):
    return np.array([scale * rng.normal() for _ in range(n)], dtype=np.float64).astype(np.float32)


def grad_scale(t):
    return 1e-3 * (1 + t % 5)


def fma_f32(a, b, c):
    # a*b of two fp32 values is exact in double; the sum then rounds twice (double, fp32),
    # which differs from a true fma only in rare double-rounding cases: good enough to check.
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)


def numpy_adamw(p, m, v, g, hyper, t):
    """kernels/numerics/adamw_update.h in numpy fp32 (scalars from double, as the C++ host)."""
    f = np.float32
    lr, (b1, b2), eps, wd = hyper["lr"], hyper["betas"], hyper["eps"], hyper["weight_decay"]
    bc1 = 1.0 - b1**t
    bc2 = 1.0 - b2**t
    p = p * f(1.0 - lr * wd)
    w = f(1.0 - b1)
    diff = g - m
    m = fma_f32(np.full_like(m, w), diff, m) if w < 0.5 else fma_f32(np.full_like(m, w - f(1)), diff, g)
    v = fma_f32(f(1.0 - b2) * g, g, v * f(b2))
    denom = np.sqrt(v) / f(math.sqrt(bc2)) + f(eps)
    p = p + (f(-(lr / bc1)) * m) / denom
    return p, m, v


def main():
    torch.set_num_threads(1)
    n = sum(size for size, _ in TENSORS)
    init = normals_f32(SplitMix64(SEED_INIT), n, 0.02)
    offsets = np.cumsum([0] + [size for size, _ in TENSORS])
    params = [torch.nn.Parameter(torch.from_numpy(init[offsets[k]:offsets[k + 1]].copy())) for k in range(len(TENSORS))]
    groups = [dict(params=[params[k] for k, (_, g) in enumerate(TENSORS) if g == gi], **GROUPS[gi]) for gi in range(len(GROUPS))]
    opt = torch.optim.AdamW(groups, foreach=False)

    np_p = init.copy()
    np_m = np.zeros(n, np.float32)
    np_v = np.zeros(n, np.float32)
    group_of = np.concatenate([np.full(size, g) for size, g in TENSORS])

    rng = SplitMix64(SEED_GRAD)
    out = {}
    worst = 0.0
    for t in range(1, STEPS + 1):
        grad = normals_f32(rng, n, grad_scale(t))
        if t == 1:
            out["adamw_grad_step001.f32"] = grad
        for k, p in enumerate(params):
            p.grad = torch.from_numpy(grad[offsets[k]:offsets[k + 1]].copy())
        opt.step()
        for gi, hyper in enumerate(GROUPS):
            sel = group_of == gi
            np_p[sel], np_m[sel], np_v[sel] = numpy_adamw(np_p[sel], np_m[sel], np_v[sel], grad[sel], hyper, t)
        tp = np.concatenate([p.detach().numpy() for p in params])
        tm = np.concatenate([opt.state[p]["exp_avg"].numpy() for p in params])
        tv = np.concatenate([opt.state[p]["exp_avg_sq"].numpy() for p in params])
        rel = float(np.max(np.abs(np_p - tp) / np.maximum(np.abs(tp), np.sqrt(np.mean(tp.astype(np.float64) ** 2)))))
        worst = max(worst, rel)
        if t in SNAPSHOTS:
            tag = f"adamw_step{t:03d}"
            out[f"{tag}_param.f32"] = tp.copy()
            out[f"{tag}_exp_avg.f32"] = tm.copy()
            out[f"{tag}_exp_avg_sq.f32"] = tv.copy()
            print(f"step {t:3d}: numpy replay of adamw_update.h vs torch: params differ in "
                  f"{int(np.sum(np_p != tp))}/{n}, exp_avg in {int(np.sum(np_m != tm))}, exp_avg_sq in "
                  f"{int(np.sum(np_v != tv))}; params' max error relative to max(|p|, rms(p)) {rel:.3g}")
    if worst > 1e-6:
        sys.exit(f"the numpy replay drifted from torch by {worst:.3g} (> 1e-6): adamw_update.h no longer "
                 f"matches torch {torch.__version__}; investigate before writing a golden")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out["adamw_init.f32"] = init
    for name, values in out.items():
        (OUT_DIR / name).write_bytes(values.astype("<f4").tobytes())
    print(f"wrote {len(out)} files to {OUT_DIR} (torch {torch.__version__}); max rel error of the "
          f"replay over {STEPS} steps {worst:.3g}")


if __name__ == "__main__":
    main()
