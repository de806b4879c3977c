// optim_test_util.h — what the optimizer tests share: caller-owned weight and gradient
// buffers (tracked as kWeights / kGrads), deterministic normal fills, and small configs.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "framework/backend/buffer.h"
#include "framework/core/memory.h"
#include "framework/optim/adamw.h"
#include "kernels/numerics/bf16.h"
#include "tests/support/test_support.h"

namespace farthing::test {

// The bf16 weights and gradients of one shard, owned by the caller as a model would own them.
struct ShardBuffers {
  Buffer weights, grads;
  int64_t numel = 0;
  DType grad_dtype = DType::kF32;
  ShardBuffers(int64_t n, DType grad_type)
      : weights(Device::cpu(), size_t(n) * 2, MemoryCategory::kWeights),
        grads(Device::cpu(), size_t(n) * dtype_size_bytes(grad_type), MemoryCategory::kGrads),
        numel(n),
        grad_dtype(grad_type) {
    std::memset(weights.data(), 0, weights.bytes());
    std::memset(grads.data(), 0, grads.bytes());
  }
  Tensor w() const { return weights.view(DType::kBF16, Shape{numel}); }
  Tensor g() const { return grads.view(grad_dtype, Shape{numel}); }
  uint16_t* w_bits() const { return static_cast<uint16_t*>(weights.data()); }
  float* g_f32() const { return static_cast<float*>(grads.data()); }
  uint16_t* g_bf16() const { return static_cast<uint16_t*>(grads.data()); }
};

inline std::vector<float> normal_values(uint64_t seed, size_t n, double scale) {
  SplitMix64 rng(seed);
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = float(scale * rng.normal());
  return out;
}

inline void set_weights_rn(const ShardBuffers& b, const float* values) {
  for (int64_t i = 0; i < b.numel; ++i) b.w_bits()[i] = numerics::f32_to_bf16_rne(values[i]);
}

// One step with the default gradient options (no clipping, no loss scale).
inline optim::StepDiagnostics step_once(optim::AdamW& opt, const std::vector<ShardBuffers*>& shards,
                                        const optim::GradOptions& options = {}, double lr_multiplier = 1.0) {
  std::vector<Tensor> w, g;
  for (ShardBuffers* s : shards) {
    w.push_back(s->w());
    g.push_back(s->g());
  }
  const optim::GradReport report = opt.inspect_grads(g, options);
  return opt.step(w, g, report, lr_multiplier);
}

}  // namespace farthing::test
