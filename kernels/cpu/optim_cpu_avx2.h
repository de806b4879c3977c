// optim_cpu_avx2.h — the fused AdamW chunk for 8-bit block, fp32 and bf16 moments,
// hand-vectorized (AVX2+FMA).
//
// One pass over a 256-element chunk keeps each element in registers from the loads to the
// stores: gradient and master loads, both dequantizations (gathers from the 256-entry maps),
// numerics::adamw_update_element's operations in its exact order (each fmaf an explicit
// _mm256_fmadd_ps, nothing else fused; IEEE vdivps/vsqrtps, correctly rounded like the scalar
// definition), the running block absmax of the new m and v, the diagnostics lanes, the master
// store and the bf16 weight cast (RN, SR or remainder split); then one quantization pass per
// moment (block_quant_cpu_avx2.h). fp32 and bf16 moments need neither pass: their chunk is
// the one loop, with m and v loaded and stored (bf16 rounded to nearest even) in place. The
// result is bit for bit the portable loop's (optim_cpu.cpp), which stays the fallback and the
// reference.
// NOTE: what bounds it (Zen 3, 2 threads, 100M parameters): fp32 moments ~0.6 ns/element, the
// memory traffic (30 B/param at ~45 GB/s, torch's fused AdamW rate); bf16 moments about the
// same, the core (two IEEE divides and a sqrt per element, ~1 ns/element per core, plus the
// bf16 conversions); SR adds the Philox bits (~0.7 ns/element per core, random_bits_cpu.cpp).
// Tested by: tests/optim/test_adamw_avx2_matches_portable.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/optim_cpu.h"
#include "kernels/numerics/stochastic_round.h"

namespace farthing::kernels {

// Per-chunk diagnostics: element i of the chunk adds into lane i % 8 (the order both the
// portable and the AVX2 loop use, so their sums agree bit for bit).
struct AdamWChunkLanes {
  float update_ss[8] = {};
  float weight_ss[8] = {};
  int unchanged = 0;
};

// Steps chunk [begin, begin + count) of a segment whose m and v are both kBlock8 (block index
// `block`). Returns false (and does nothing) where the build has no AVX2.
bool adamw_chunk_block8_avx2(const AdamWSegmentCpu& seg, size_t begin, int count, int64_t block, bool stochastic,
                             const numerics::RandomKey& key, AdamWChunkLanes& lanes);

// Steps chunk [begin, begin + count) of a segment whose m and v are both kF32 or both kBf16:
// one pass, each element from its loads to its stores in registers. Returns false (and does
// nothing) where the build has no AVX2.
bool adamw_chunk_dense_avx2(const AdamWSegmentCpu& seg, size_t begin, int count, bool stochastic,
                            const numerics::RandomKey& key, AdamWChunkLanes& lanes);

}  // namespace farthing::kernels
