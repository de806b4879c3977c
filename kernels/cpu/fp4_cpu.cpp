// fp4_cpu.cpp — see fp4_cpu.h.
#include "kernels/cpu/fp4_cpu.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/matmul_cpu.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/fp4_block.h"
#include "kernels/numerics/fp4_scale_rules.h"
#include "kernels/numerics/fp4_workspace.h"
#include "kernels/numerics/hadamard.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;

namespace {

// The operand (rows, cols) as fp32 into x: read through the transpose, widened from bf16.
void gather_operand(const Fp4QuantizeArgs& a, float* x) {
  const int64_t src_cols = a.transposed ? a.rows : a.cols;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t c = 0; c < a.cols; ++c) {
      const int64_t at = a.transposed ? c * src_cols + r : r * src_cols + c;
      x[r * a.cols + c] = a.x_f32 != nullptr ? a.x_f32[at] : nm::bf16_to_f32(a.x_bf16[at]);
    }
  }
}

// Each row's full chunks of n columns through the random Hadamard transform.
void hadamard_rows(float* x, int64_t rows, int64_t cols, const float* signs, int n) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c0 = 0; c0 + n <= cols; c0 += n) nm::random_hadamard_chunk(x + r * cols + c0, signs, n);
  }
}

}  // namespace

void fp4_quantize_cpu(const Fp4QuantizeArgs& a) {
  // The backend (framework/backend/fp4_op_checks.cpp) has checked the arguments.
  float* x = a.workspace;
  gather_operand(a, x);
  if (a.rht_size > 0) hadamard_rows(x, a.rows, a.cols, a.rht_signs, a.rht_size);

  float encode_scale = 1.0f;
  if (a.scale == Fp4Scale::kE4M3) {
    uint32_t m = 0u;
#pragma omp parallel for schedule(static) reduction(max : m)
    for (int64_t r = 0; r < a.rows; ++r) {
      m = nm::fp8_amax_bits_max(m, nm::f32_to_bits(nm::fp4_block_amax(x + r * a.cols, int(a.cols))));
    }
    encode_scale = fp4_tensor_encode_scale(a.scale, nm::bits_to_f32(m));
  }
  const float s_dec = fp4_tensor_decode_scale(a.scale, encode_scale, false);  // without the pre-scale
  *a.decode_scale = fp4_tensor_decode_scale(a.scale, encode_scale, a.sr_prescale);

  // Block scales: per row and block of columns, or per block x block tile (the amax of its rows'
  // segments: a NaN-dominant max, so the order does not matter), written to each of its rows.
  const int64_t bpr = fp4_blocks_per_row(a.cols, a.block);
  const int64_t band = a.block_2d ? a.block : 1;
#pragma omp parallel for schedule(static)
  for (int64_t r0 = 0; r0 < a.rows; r0 += band) {
    const int64_t r1 = std::min(a.rows, r0 + band);
    for (int64_t b = 0; b < bpr; ++b) {
      const int64_t c0 = b * a.block;
      const int n = int(std::min<int64_t>(a.block, a.cols - c0));
      uint32_t m = 0u;
      for (int64_t r = r0; r < r1; ++r) {
        m = nm::fp8_amax_bits_max(m, nm::f32_to_bits(nm::fp4_block_amax(x + r * a.cols + c0, n)));
      }
      const uint8_t code = fp4_block_scale_code(a.scale, nm::bits_to_f32(m), encode_scale);
      for (int64_t r = r0; r < r1; ++r) a.scales[r * bpr + b] = code;
    }
  }

  // Elements.
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t b = 0; b < bpr; ++b) {
      const float multiplier = fp4_element_multiplier(a.scale, a.scales[r * bpr + b], s_dec, a.sr_prescale);
      const int64_t c1 = std::min(a.cols, (b + 1) * a.block);
      for (int64_t c = b * a.block; c < c1; ++c) {
        const int64_t i = r * a.cols + c;
        a.codes[i] = a.stochastic ? nm::fp4_encode_element_sr(x[i], multiplier,
                                                              nm::random_bits_for_element(a.key, a.first_index + uint64_t(i)))
                                  : nm::fp4_encode_element(x[i], multiplier);
      }
    }
  }
}

namespace {

// out[i] = widen(e2m1(code) · block scale) for every element.
template <class Out, class Widen>
void dequantize_blocks(const Fp4Operand& x, Out* out, Widen widen) {
  const int64_t bpr = fp4_blocks_per_row(x.cols, x.block);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < x.rows; ++r) {
    for (int64_t b = 0; b < bpr; ++b) {
      const uint8_t s = x.scales[r * bpr + b];
      const int64_t c1 = std::min(x.cols, (b + 1) * x.block);
      for (int64_t c = b * x.block; c < c1; ++c) {
        out[r * x.cols + c] = widen(fp4_element_unscaled(x.scale, x.codes[r * x.cols + c], s));
      }
    }
  }
}

}  // namespace

void fp4_dequantize_f32_cpu(const Fp4Operand& x, float* out) {
  const float s_dec = *x.decode_scale;
  dequantize_blocks(x, out, [s_dec](float v) { return nm::canonical_nan(v * s_dec); });
}

int64_t fp4_matmul_workspace_bytes(int64_t m, int64_t n, int64_t k) {
  return nm::fp4_matmul_workspace_bytes(nm::Fp4GemmEngine::kEmulated, m, n, k, nm::kNvfp4BlockElems);
}

void fp4_matmul_cpu(int64_t m, int64_t n, int64_t k, const Fp4Operand& a, const Fp4Operand& b, float* c,
                    bool accumulate, void* workspace) {
  auto* wa = static_cast<uint16_t*>(workspace);
  uint16_t* wb = wa + m * k;
  auto* product = reinterpret_cast<float*>(wb + n * k);
  const auto to_bf16 = [](float v) { return nm::f32_to_bf16_rne(v); };  // exact: at most 6 significant bits
  dequantize_blocks(a, wa, to_bf16);
  dequantize_blocks(b, wb, to_bf16);
  GemmShape shape{m, n, k};
  shape.trans_b = Trans::kT;
  matmul_cpu(GemmDtype::kBF16, shape, wa, wb, product, false);
  // The tensor scales, as the tensor-core GEMM's alpha.
  const float alpha = fp4_gemm_alpha(*a.decode_scale, *b.decode_scale);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < m * n; ++i) c[i] = fp4_gemm_output(c[i], alpha, product[i], accumulate);
}

}  // namespace farthing::kernels
