// rope_permute.h — q/k row permutations between RoPE layouts.
//
// Meta's checkpoints (and llama2.c) rotate interleaved pairs (x[2i], x[2i+1]) of each head;
// Hugging Face's Llama rotates halves (x[i], x[i + head_dim/2]). llama.cpp's converter applies
// HF's permute() to q (with n_head) and k (with n_head_kv), so GGUF q/k rows are interleaved too.
// For head h, i < head_dim/2 and half in {0,1}:
//   hf_row(h, half, i) = h*head_dim + half*head_dim/2 + i
//   interleaved_row(h, i, half) = h*head_dim + 2*i + half
// and interleaved_to_half copies row interleaved_row(h,i,half) to hf_row(h,half,i).
// Relies on: nothing. Tested by: tests/ckpt/test_llama2c.cpp (round trip and a worked example).
#pragma once

#include <cstdint>

namespace farthing::ckpt {

// dst(rows, cols) = src rows reordered from interleaved-pair to rotate-half order.
void rope_interleaved_to_half(const float* src, float* dst, int64_t rows, int64_t cols, int64_t n_heads);
// The inverse (what llama.cpp's converter and HF's convert script do).
void rope_half_to_interleaved(const float* src, float* dst, int64_t rows, int64_t cols, int64_t n_heads);

}  // namespace farthing::ckpt
