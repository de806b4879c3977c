// test_cublaslt_gemm.cpp — kernels/cuda/gemm_cublaslt.h against a double-precision host GEMM on
// the same bf16 inputs, every output element, at awkward shapes (a single row, tails that are
// not multiples of 8 or 16, k = 1, a k long enough that cuBLASLt may split it). The GEMM is the
// GPU benchmarks' ceiling (farthing bench gemm); a ceiling that computes the wrong thing fast
// would make every ratio against it meaningless.
// NOTE: not bitwise (cuBLASLt picks its own summation order): the tolerance is bf16 output
// rounding (2^-8 relative) plus fp32 accumulation (k * 2^-24 of the sum of magnitudes), x2.
// Exits 77 (skipped) without a GPU.
// Relies on: kernels/cuda/gemm_cublaslt.h, kernels/numerics/bf16.h, the CUDA runtime.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "framework/backend/backend.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemm_cublaslt.h"
#include "kernels/numerics/bf16.h"
#include "tests/support/test_support.h"

namespace farthing {
namespace {

struct GemmShape {
  int64_t m, n, k;
};

class CublasLtGemm : public testing::TestWithParam<GemmShape> {};

TEST_P(CublasLtGemm, MatchesTheHostReference) {
  const auto [m, n, k] = GetParam();
  test::SplitMix64 rng(uint64_t(m * 1000003 + n * 1009 + k));
  std::vector<uint16_t> a(size_t(m * k)), b(size_t(n * k));
  for (auto& x : a) x = numerics::f32_to_bf16_rne(float(rng.normal()));
  for (auto& x : b) x = numerics::f32_to_bf16_rne(float(rng.normal()));

  void *da = nullptr, *db = nullptr, *dc = nullptr;
  FARTHING_CUDA_CHECK(cudaMalloc(&da, a.size() * 2));
  FARTHING_CUDA_CHECK(cudaMalloc(&db, b.size() * 2));
  FARTHING_CUDA_CHECK(cudaMalloc(&dc, size_t(m * n) * 2));
  FARTHING_CUDA_CHECK(cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice));
  FARTHING_CUDA_CHECK(cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice));
  std::vector<uint16_t> c(size_t(m * n));
  {
    kernels::GemmBf16Lt gemm(m, n, k, nullptr);
    gemm.run(da, db, dc);
    FARTHING_CUDA_CHECK(cudaDeviceSynchronize());
    FARTHING_CUDA_CHECK(cudaMemcpy(c.data(), dc, c.size() * 2, cudaMemcpyDeviceToHost));
  }
  cudaFree(da), cudaFree(db), cudaFree(dc);

  int64_t bad = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0.0, magnitude = 0.0;
      for (int64_t t = 0; t < k; ++t) {
        const double p = double(numerics::bf16_to_f32(a[size_t(i * k + t)])) *
                         double(numerics::bf16_to_f32(b[size_t(j * k + t)]));
        ref += p;
        magnitude += std::fabs(p);
      }
      const double got = numerics::bf16_to_f32(c[size_t(i * n + j)]);
      const double tolerance = 2.0 * (std::fabs(ref) * 0x1p-8 + double(k) * 0x1p-24 * magnitude) + 1e-30;
      if (std::fabs(got - ref) > tolerance && ++bad <= 5) {
        ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", reference " << ref << " (tolerance "
                      << tolerance << ")";
      }
    }
  }
  EXPECT_EQ(bad, 0) << "of " << m * n << " outputs";
}

INSTANTIATE_TEST_SUITE_P(Shapes, CublasLtGemm,
                         testing::Values(GemmShape{1, 16, 64}, GemmShape{5, 160, 96}, GemmShape{217, 256, 200},
                                         GemmShape{64, 33, 1}, GemmShape{3, 7, 4099}, GemmShape{256, 512, 1024}));

TEST(CublasLtGemmErrors, RefusesEmptyShapes) {
  EXPECT_THROW(kernels::GemmBf16Lt(0, 16, 16, nullptr), Error);
  EXPECT_THROW(kernels::GemmBf16Lt(16, 16, -1, nullptr), Error);
}

}  // namespace
}  // namespace farthing
