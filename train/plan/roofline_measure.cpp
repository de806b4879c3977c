// roofline_measure.cpp — see roofline_measure.h.
#include "train/plan/roofline_measure.h"

#include <algorithm>
#include <functional>

#include "framework/backend/buffer.h"
#include "framework/backend/nn_ops.h"
#include "train/plan/time_best.h"

namespace farthing::train {

namespace {

using train::RooflineCall;
using train::RooflineOp;

// Zeroed device buffers for one shape's call, freed together once it is timed.
class Scratch {
 public:
  explicit Scratch(Backend& backend) : backend_(backend) {}
  void* bytes(int64_t n) {
    buffers_.emplace_back(backend_.device(), size_t(std::max<int64_t>(n, 1)), MemoryCategory::kOther);
    backend_.fill_bytes(buffers_.back().data(), 0, size_t(std::max<int64_t>(n, 1)));
    return buffers_.back().data();
  }
  float* floats(int64_t n) { return static_cast<float*>(bytes(4 * n)); }
  // Token ids 0, 1, ... (mod vocab): a realistic spread for the embedding's backward.
  int32_t* tokens(int64_t n, int64_t vocab) {
    std::vector<int32_t> host(size_t(std::max<int64_t>(n, 1)));
    for (size_t i = 0; i < host.size(); ++i) host[i] = int32_t(int64_t(i * 7919) % std::max<int64_t>(vocab, 1));
    auto* p = static_cast<int32_t*>(bytes(4 * n));
    backend_.nn().copy(reinterpret_cast<float*>(p), reinterpret_cast<const float*>(host.data()), n);
    return p;
  }

 private:
  Backend& backend_;
  std::vector<Buffer> buffers_;
};

int64_t gemm_elem_bytes(GemmDtype dtype) { return dtype == GemmDtype::kF32 ? 4 : 2; }

// The seconds per call of one shape, or negative where it is not run here.
double time_call(const RooflineCall& call, const train::RooflineInputs& in, Backend& backend,
                 const RooflineMeasureOptions& options) {
  NnOps& nn = backend.nn();
  Scratch s(backend);
  const models::ModelConfig& c = in.model;
  const auto timed = [&](const std::function<void()>& queue) {
    return time_best(queue, [&] { backend.synchronize(); }, options.min_seconds, options.clock);
  };
  // The activations the model stores as bf16 are bf16 here too (roofline.cpp's as built).
  const bool bf16_inputs = options.gemm == GemmDtype::kBF16 && in.acts_bf16();
  const auto gemm_input = [&](float* p) { return bf16_inputs ? ActRef::bf16(reinterpret_cast<uint16_t*>(p)) : ActRef(p); };
  switch (call.op) {
    case RooflineOp::kGemm: {
      const int64_t width = gemm_elem_bytes(options.gemm);
      // A stored (m, k), or (k, m) transposed, its rows lda apart; C (m, n), its rows ldc apart.
      const int64_t lda = call.lda > 0 ? call.lda : (call.trans_a ? call.m : call.k);
      const int64_t ldc = call.ldc > 0 ? call.ldc : call.n;
      const void* a = s.bytes((call.trans_a ? call.k : call.m) * lda * width);
      const void* b = s.bytes(call.n * call.k * width);
      float* out = s.floats(call.m * ldc);
      GemmShape shape{call.m, call.n, call.k, call.lda, 0, call.ldc};
      shape.trans_a = call.trans_a ? Trans::kT : Trans::kN;
      shape.trans_b = call.trans_b ? Trans::kT : Trans::kN;
      const bool accumulate = call.trans_a;  // weight gradients add up; the other GEMMs overwrite
      float* bias = call.bias ? s.floats(call.trans_a ? call.m : call.n) : nullptr;  // or the bias gradient
      if (call.bf16_out && bf16_inputs) {
        auto* out16 = reinterpret_cast<uint16_t*>(out);
        const auto* residual = call.adds_residual ? static_cast<const uint16_t*>(s.bytes(call.m * ldc * 2)) : nullptr;
        return timed([&] { nn.matmul_bf16_out(options.gemm, shape, a, b, bias, residual, out16); });
      }
      if (call.bias && call.trans_a) {  // a weight gradient writing its bias gradient: dy is op(A)
        ActRef dy(static_cast<float*>(const_cast<void*>(a)));
        if (options.gemm == GemmDtype::kBF16) dy = ActRef::bf16(static_cast<uint16_t*>(const_cast<void*>(a)));
        if (options.gemm == GemmDtype::kF16) dy = ActRef(s.floats(call.m * call.k));  // dy fp32, narrowed for the GEMM
        return timed([&] { nn.matmul_bias_grad(options.gemm, shape, a, b, out, GradInto::kAccumulate, BiasGradOf::kA, dy, bias); });
      }
      if (call.bias) return timed([&] { nn.matmul_bias(options.gemm, shape, a, b, bias, out, accumulate); });
      return timed([&] { nn.matmul(options.gemm, shape, a, b, out, accumulate); });
    }
    case RooflineOp::kNormForward:
    case RooflineOp::kNormBackward: {
      float *x = s.floats(call.m * call.n), *y = s.floats(call.m * call.n), *dy = s.floats(call.m * call.n);
      float *w = s.floats(call.n), *b = s.floats(call.n), *mean = s.floats(call.m), *rstd = s.floats(call.m);
      float *dw = s.floats(call.n), *db = s.floats(call.n);
      const bool layernorm = c.family == models::ModelFamily::kGpt2;
      if (call.op == RooflineOp::kNormForward) {
        return timed([&] {
          if (layernorm) nn.layernorm_forward(gemm_input(y), mean, rstd, gemm_input(x), w, b, call.m, call.n, c.norm_eps);
          else nn.rmsnorm_forward(gemm_input(y), rstd, gemm_input(x), w, call.m, call.n, c.norm_eps);
        });
      }
      return timed([&] {
        if (layernorm) {
          nn.layernorm_backward(gemm_input(y), dw, db, gemm_input(dy), gemm_input(x), w, mean, rstd, call.m, call.n);
        } else {
          nn.rmsnorm_backward(gemm_input(y), dw, gemm_input(dy), gemm_input(x), w, rstd, call.m, call.n);
        }
      });
    }
    case RooflineOp::kRope: {
      const int64_t stride = c.qkv_dim();  // the heads rotated sit at the start of each qkv row
      float* x = s.floats(call.m * stride);
      const float *cos = s.floats(in.seq * call.k / 2), *sin = s.floats(in.seq * call.k / 2);
      const ActRef rows = call.bf16_out && bf16_inputs ? gemm_input(x) : ActRef(x);  // qkv forward, or dqkv
      return timed([&] { nn.rope_apply(rows, call.m, in.seq, call.n, call.k, stride, cos, sin, false); });
    }
    case RooflineOp::kAttentionForward:
    case RooflineOp::kAttentionBackward: {
      const AttentionShape a{in.micro_batch, in.seq, c.n_heads, c.n_kv_heads, c.head_dim(), options.attention};
      const int64_t rows = in.micro_batch * in.seq, out_n = rows * c.n_heads * c.head_dim();
      float *qkv = s.floats(rows * a.qkv_stride()), *out = s.floats(out_n), *lse = s.floats(in.micro_batch * c.n_heads * in.seq);
      if (call.op == RooflineOp::kAttentionForward) {
        return timed([&] { nn.attention_forward(a, gemm_input(out), lse, gemm_input(qkv)); });
      }
      float *dqkv = s.floats(rows * a.qkv_stride()), *dout = s.floats(out_n), *scratch = s.floats(2 * out_n);
      return timed([&] {
        nn.attention_backward(a, gemm_input(dqkv), scratch, gemm_input(dout), gemm_input(out), lse, gemm_input(qkv));
      });
    }
    case RooflineOp::kResidualAdd: {
      float *dst = s.floats(call.m), *src = s.floats(call.m);
      return timed([&] { nn.accumulate(dst, src, call.m); });
    }
    case RooflineOp::kZero: {
      float* dst = s.floats(call.m);
      return timed([&] { nn.zero(dst, call.m); });
    }
    case RooflineOp::kSwigluForward:
    case RooflineOp::kSwigluBackward: {
      float *gu = s.floats(call.m * 2 * call.n), *act = s.floats(call.m * call.n), *dgu = s.floats(call.m * 2 * call.n);
      if (call.op == RooflineOp::kSwigluForward) {
        return timed([&] { nn.swiglu_forward(gemm_input(act), gemm_input(gu), call.m, call.n); });
      }
      return timed([&] { nn.swiglu_backward(gemm_input(dgu), gemm_input(act), gemm_input(gu), call.m, call.n); });
    }
    case RooflineOp::kGeluForward:
    case RooflineOp::kGeluBackward: {
      float *x = s.floats(call.m), *y = s.floats(call.m), *dy = s.floats(call.m);
      if (call.op == RooflineOp::kGeluForward) return timed([&] { nn.gelu_forward(gemm_input(y), gemm_input(x), call.m); });
      return timed([&] { nn.gelu_backward(gemm_input(y), gemm_input(dy), gemm_input(x), call.m); });
    }
    case RooflineOp::kEmbeddingForward:
    case RooflineOp::kEmbeddingBackward: {
      const int32_t* tok = s.tokens(call.m, call.k);
      float *table = s.floats(call.k * call.n), *rows = s.floats(call.m * call.n);
      if (call.op == RooflineOp::kEmbeddingForward) {
        return timed([&] { nn.embedding_forward(gemm_input(rows), tok, table, nullptr, call.m, in.seq, call.n); });
      }
      return timed([&] { nn.embedding_backward(table, nullptr, gemm_input(rows), tok, call.m, in.seq, call.n); });
    }
    case RooflineOp::kCrossEntropy: {
      const int64_t stride = call.ldc > 0 ? call.ldc : call.n;  // the logits rows as the model pads them
      float* logits = s.floats(call.m * stride);
      const int32_t* targets = s.tokens(call.m, call.n);
      auto* loss_sum = static_cast<double*>(s.bytes(sizeof(double)));
      return timed([&] {
        nn.cross_entropy_rows(gemm_input(logits), targets, call.m, call.n, stride, 1.0f, true, loss_sum);
      });
    }
    case RooflineOp::kNarrow: {
      const float* src = s.floats(call.m);
      auto* dst = static_cast<uint16_t*>(s.bytes(2 * call.m));
      return timed([&] { nn.narrow(GemmDtype::kBF16, dst, src, call.m); });
    }
    case RooflineOp::kWiden: {
      const auto* src = static_cast<const uint16_t*>(s.bytes(2 * call.m));
      float* dst = s.floats(call.m);
      return timed([&] { nn.widen(GemmDtype::kBF16, dst, src, call.m); });
    }
    case RooflineOp::kBiasAdd:
    case RooflineOp::kBiasBackward: {
      float *y = s.floats(call.m * call.n), *bias = s.floats(call.n);
      if (call.op == RooflineOp::kBiasAdd) return timed([&] { nn.bias_add(y, bias, call.m, call.n, call.n); });
      const ActRef dy = call.bf16_out && bf16_inputs ? gemm_input(y) : ActRef(y);
      return timed([&] { nn.bias_backward(bias, dy, call.m, call.n, call.n); });
    }
    case RooflineOp::kFp8Quantize:
    case RooflineOp::kOptimizerStep:
      return -1.0;
  }
  return -1.0;
}

}  // namespace

std::vector<double> measure_roofline_rows(const train::RooflineStep& step, Backend& backend,
                                          const RooflineMeasureOptions& options) {
  std::vector<double> seconds;
  for (const train::RooflineRow& row : step.rows) {
    double total = row.fp8 ? -1.0 : 0.0;  // FP8 GEMMs: bench gemm's
    for (const RooflineCall& call : row.shapes) {
      if (total < 0.0) break;
      const double per_call = time_call(call, step.inputs, backend, options);
      total = per_call < 0.0 ? -1.0 : total + double(call.count) * per_call;
    }
    seconds.push_back(total);
  }
  return seconds;
}

}  // namespace farthing::train
