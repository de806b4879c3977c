// hadamard.h — the random Hadamard transform (RHT) of the FP4 recipes: a fast Walsh-Hadamard
// transform over chunks of n elements (n a power of 4: 4, 16, 64, 256), each chunk first
// multiplied by n random signs and the result by 1/sqrt(n):
//     y = (1/sqrt(n)) · H_n · diag(s) · x,     H_n the Sylvester Hadamard matrix (entries ±1)
// This is orthogonal (H_n H_n = n·I), so a GEMM whose operands are both transformed along the
// reduced dimension with the same signs computes the same product: (R a)·(R b) = a·b. It spreads
// a chunk's outliers over the chunk before FP4 block quantization (NVFP4 paper §4.2; Tseng et al.
// 2025 bound the variance of stochastic rounding with it).
// NOTE: n is a power of 4 so that 1/sqrt(n) = 2^-k is exact: the scaling adds no rounding and
// the transform's only roundings are the butterflies' fp32 additions, in a fixed order.
// The signs are drawn from Philox keyed by (seed, step, kHadamardSigns) and an index the caller
// picks (stochastic_round.h): a pure function of the run's seed and step, so a resumed run draws
// the same signs as the straight run with nothing more to checkpoint than the seed and the step.
// Relies on: stochastic_round.h (the keying), host_device.h. Tested by: tests/numerics/test_hadamard.cpp.
#pragma once

#include <cstdint>

#include "kernels/numerics/host_device.h"
#include "kernels/numerics/stochastic_round.h"

namespace farthing::numerics {

// True for the chunk sizes the transform supports: 4, 16, 64, 256.
FARTHING_HD bool hadamard_size_ok(int n) { return n == 4 || n == 16 || n == 64 || n == 256; }

// 1/sqrt(n) for a supported n, exactly (a power of two).
FARTHING_HD float hadamard_norm(int n) { return n == 4 ? 0.5f : n == 16 ? 0.25f : n == 64 ? 0.125f : 0.0625f; }

// In place: x (n elements) <- H_n x, unnormalized, by the butterflies of the Sylvester
// construction (log2 n passes; pass h pairs x[i] and x[i + h] into their sum and difference).
FARTHING_HD void walsh_hadamard_unnormalized(float* x, int n) {
  for (int h = 1; h < n; h *= 2) {
    for (int i = 0; i < n; i += 2 * h) {
      for (int j = i; j < i + h; ++j) {
        const float a = x[j], b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
    }
  }
}

// In place: x (n elements) <- (1/sqrt(n)) · H_n · diag(signs) · x; signs are ±1.
FARTHING_HD void random_hadamard_chunk(float* x, const float* signs, int n) {
  for (int i = 0; i < n; ++i) x[i] *= signs[i];
  walsh_hadamard_unnormalized(x, n);
  const float norm = hadamard_norm(n);
  for (int i = 0; i < n; ++i) x[i] *= norm;
}

// The inverse, x <- diag(signs) · (1/sqrt(n)) · H_n · x (H_n is symmetric and H_n H_n = n·I).
FARTHING_HD void random_hadamard_chunk_inverse(float* x, const float* signs, int n) {
  walsh_hadamard_unnormalized(x, n);
  const float norm = hadamard_norm(n);
  for (int i = 0; i < n; ++i) x[i] *= norm * signs[i];
}

// Sign i (±1) of the transform keyed by `key` (purpose kHadamardSigns): the top bit of
// element first_index + i's random bits.
FARTHING_HD float hadamard_sign(RandomKey key, uint64_t index) {
  return (random_bits_for_element(key, index) >> 31) != 0u ? -1.0f : 1.0f;
}

}  // namespace farthing::numerics
