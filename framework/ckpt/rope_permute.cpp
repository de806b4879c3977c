// rope_permute.cpp — see rope_permute.h.
#include "framework/ckpt/rope_permute.h"

#include <cstring>

#include "framework/core/error.h"

namespace farthing::ckpt {

namespace {
void permute_rows(const float* src, float* dst, int64_t rows, int64_t cols, int64_t n_heads, bool to_half) {
  FARTHING_CHECK(n_heads > 0 && rows % (2 * n_heads) == 0, "RoPE row permutation: ", rows,
                 " rows do not split into ", n_heads, " heads of an even head_dim");
  const int64_t head_dim = rows / n_heads, half_dim = head_dim / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    for (int64_t i = 0; i < half_dim; ++i) {
      for (int64_t half = 0; half < 2; ++half) {
        const int64_t hf = h * head_dim + half * half_dim + i;
        const int64_t inter = h * head_dim + 2 * i + half;
        const int64_t from = to_half ? inter : hf, to = to_half ? hf : inter;
        std::memcpy(dst + to * cols, src + from * cols, size_t(cols) * sizeof(float));
      }
    }
  }
}
}  // namespace

void rope_interleaved_to_half(const float* src, float* dst, int64_t rows, int64_t cols, int64_t n_heads) {
  permute_rows(src, dst, rows, cols, n_heads, true);
}
void rope_half_to_interleaved(const float* src, float* dst, int64_t rows, int64_t cols, int64_t n_heads) {
  permute_rows(src, dst, rows, cols, n_heads, false);
}

}  // namespace farthing::ckpt
