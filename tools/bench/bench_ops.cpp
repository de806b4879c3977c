// bench_ops.cpp — `farthing bench ops [--device cuda|cpu]`: every NnOps op at SmolLM2-135M and
// Llama-3.1-8B shapes, in TFLOP/s (GEMMs, attention) or GB/s (everything else), next to the
// ceilings measured in the same run: a bf16 GEMM of 8192^3 (fp32 C) through the same NnOps (on
// CUDA that is cuBLASLt) and a copy of the same bytes (device-to-device on CUDA, memcpy split
// over the threads on the CPU).
//
// GB/s counts the bytes an op must read and write once each; attention counts 2 B Hq T^2 D flops
// forward (causal half of QK^T and PV) and 2.5x that backward. Every op goes through the
// backend's NnOps on device buffers, the path the models take. The CPU form uses smaller token
// counts (2 cores must finish) and a 2048^3 bf16 GEMM as its ceiling. --device cuda exits 77
// ("skipped") without a GPU.
// Relies on: framework/backend (NnOps, Buffer), bench_cuda.h. Tested by: running it (tools/gpu/check.sh).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/buffer.h"
#include "framework/core/memory.h"
#include "models/common/transformer.h"
#include "tools/bench/bench.h"
#include "tools/bench/bench_cuda.h"
#include "train/plan/time_best.h"

namespace farthing::bench {

namespace {

struct ModelShape {
  const char* name;
  int64_t dim, hidden, heads, kv_heads, vocab;
  int64_t head_dim() const { return dim / heads; }
  int64_t qkv() const { return (heads + 2 * kv_heads) * head_dim(); }
};
constexpr ModelShape kModels[] = {
    {"smollm2-135m", 576, 1536, 9, 3, 49152},
    {"llama3.1-8b", 4096, 14336, 32, 8, 128256},
};

struct Row {
  std::string model, op;
  double seconds, rate;  // rate: TFLOP/s or GB/s
  bool flops;
};

class OpsBench {
 public:
  OpsBench(Device device, const BenchOptions& options) : device_(device), backend_(backend_for(device)),
                                                         nn_(backend_.nn()), options_(options) {}

  // A device buffer of `count` floats filled with a repeating pseudo-random pattern in [lo, hi).
  float* floats(int64_t count, float lo = -1.0f, float hi = 1.0f) {
    buffers_.emplace_back(device_, size_t(std::max<int64_t>(count, 1)) * 4, MemoryCategory::kOther);
    float* p = static_cast<float*>(buffers_.back().data());
    const int64_t pattern = std::min<int64_t>(count, int64_t(1) << 20);
    std::vector<float> host(size_t(std::max<int64_t>(pattern, 1)));
    uint32_t s = 12345u + uint32_t(buffers_.size());
    for (float& x : host) {
      s = s * 1664525u + 1013904223u;
      x = lo + (hi - lo) * float(s >> 8) * (1.0f / 16777216.0f);
    }
    for (int64_t at = 0; at < count; at += pattern) nn_.copy(p + at, host.data(), std::min(pattern, count - at));
    return p;
  }
  int32_t* tokens(int64_t count, int64_t vocab) {
    std::vector<int32_t> host(static_cast<size_t>(count));
    uint32_t s = 777u;
    for (int32_t& t : host) {
      s = s * 1664525u + 1013904223u;
      t = int32_t((s >> 4) % uint32_t(vocab));
    }
    float* p = floats(count);
    nn_.copy(p, reinterpret_cast<const float*>(host.data()), count);
    return reinterpret_cast<int32_t*>(p);
  }
  uint16_t* bf16(int64_t count) {
    const float* src = floats(count);
    buffers_.emplace_back(device_, size_t(std::max<int64_t>(count, 1)) * 2, MemoryCategory::kOther);
    auto* p = static_cast<uint16_t*>(buffers_.back().data());
    nn_.narrow(GemmDtype::kBF16, p, src, count);
    return p;
  }
  void release() { buffers_.clear(); }

  double time(const std::function<void()>& fn) {
    return train::time_best(fn, [this] { backend_.synchronize(); }, options_.min_seconds);
  }

  NnOps& nn() { return nn_; }
  bool cpu() const { return device_.is_cpu(); }

 private:
  Device device_;
  Backend& backend_;
  NnOps& nn_;
  const BenchOptions& options_;
  std::vector<Buffer> buffers_;
};

void bench_model(OpsBench& b, const ModelShape& m, std::vector<Row>& rows) {
  NnOps& nn = b.nn();
  const int64_t seq = b.cpu() ? 256 : 2048, batch = b.cpu() ? 1 : (m.dim >= 4096 ? 1 : 4);
  const int64_t n = seq * batch, c = m.dim, h = m.hidden, d = m.head_dim();
  auto gbps = [&](const char* op, double bytes, const std::function<void()>& fn) {
    const double s = b.time(fn);
    rows.push_back({m.name, op, s, bytes / s / 1e9, false});
  };
  auto tflops = [&](const std::string& op, double flop, const std::function<void()>& fn) {
    const double s = b.time(fn);
    rows.push_back({m.name, op, s, flop / s / 1e12, true});
  };
  // GEMMs (bf16 in, fp32 C): the projections of one layer, forward, at n tokens.
  {
    const uint16_t* x = b.bf16(n * std::max(c, h));
    const uint16_t* w = b.bf16(std::max(m.qkv(), 2 * h) * c);  // the largest weight: gate_up (2H, C)
    float* out = b.floats(n * std::max(m.qkv(), 2 * h));
    auto gemm = [&](const char* op, int64_t nn_out, int64_t k) {
      tflops(op, 2.0 * double(n) * double(nn_out) * double(k), [&] {
        nn.matmul(GemmDtype::kBF16, GemmShape{n, nn_out, k, 0, 0, 0, Trans::kN, Trans::kT}, x, w, out, false);
      });
    };
    gemm("matmul qkv (bf16)", m.qkv(), c);
    gemm("matmul o (bf16)", c, c);
    gemm("matmul gate_up (bf16)", 2 * h, c);
    gemm("matmul down (bf16)", c, h);
    b.release();
  }
  // Attention at seq tokens per sequence.
  {
    AttentionShape s{batch, seq, m.heads, m.kv_heads, d};
    float* qkv = b.floats(n * s.qkv_stride());
    float* out = b.floats(n * m.heads * d);
    float* lse = b.floats(batch * m.heads * seq);
    float* dqkv = b.floats(n * s.qkv_stride());
    float* scratch = b.floats(2 * batch * m.heads * seq * d);
    float* dout = b.floats(n * m.heads * d);
    const double fwd = 2.0 * double(batch) * double(m.heads) * double(seq) * double(seq) * double(d);
    // fp32, then (on a GPU) bf16 compute's attention: cuDNN's where it loads, with qkv, its output
    // and their gradients stored as bf16 as the trainer stores them (the CPU has no bf16
    // attention).
    for (const GemmDtype dtype : b.cpu() ? std::vector{GemmDtype::kF32} : std::vector{GemmDtype::kF32, GemmDtype::kBF16}) {
      s.dtype = dtype;
      const bool bf16 = dtype == GemmDtype::kBF16;
      const ActRef o = bf16 ? ActRef::bf16(reinterpret_cast<uint16_t*>(out)) : ActRef(out);
      const ActRef q = bf16 ? ActRef::bf16(reinterpret_cast<uint16_t*>(qkv)) : ActRef(qkv);
      const ActRef dq = bf16 ? ActRef::bf16(reinterpret_cast<uint16_t*>(dqkv)) : ActRef(dqkv);
      const ActRef dO = bf16 ? ActRef::bf16(reinterpret_cast<uint16_t*>(dout)) : ActRef(dout);
      const std::string kind = bf16 ? " bf16" : "";
      tflops("attention forward" + kind + " T=" + std::to_string(seq), fwd,
             [&] { nn.attention_forward(s, o, lse, q); });
      tflops("attention backward" + kind + " T=" + std::to_string(seq), 2.5 * fwd,
             [&] { nn.attention_backward(s, dq, scratch, dO, o, lse, q); });
    }
    s.dtype = GemmDtype::kF32;
    const int64_t first = seq - 1, kv_row = m.kv_heads * d;
    const float* kc = b.floats((first + 1) * kv_row);
    const float* vc = b.floats((first + 1) * kv_row);
    gbps("attention decode (1 row)", 2.0 * double(first + 1) * double(kv_row) * 4,
         [&] { nn.attention_decode(s, out, qkv, 1, first, kc, vc); });
    b.release();
  }
  // Row-wise and elementwise ops over n rows.
  {
    const double f = 4.0;
    float* x = b.floats(n * c);
    float* y = b.floats(n * c);
    float* g = b.floats(n * c);
    float* dx = b.floats(n * c);
    const float* w = b.floats(c, 0.5f, 1.5f);
    float* dw = b.floats(c);
    float* db = b.floats(c);
    float* rstd = b.floats(n, 0.5f, 1.0f);
    float* mean = b.floats(n);
    gbps("rmsnorm forward", f * (2.0 * n * c), [&] { nn.rmsnorm_forward(y, rstd, x, w, n, c, 1e-5f); });
    gbps("rmsnorm backward", f * (4.0 * n * c), [&] { nn.rmsnorm_backward(dx, dw, g, x, w, rstd, n, c); });
    gbps("layernorm forward", f * (2.0 * n * c), [&] { nn.layernorm_forward(y, mean, rstd, x, w, db, n, c, 1e-5f); });
    gbps("layernorm backward", f * (4.0 * n * c), [&] { nn.layernorm_backward(dx, dw, db, g, x, w, mean, rstd, n, c); });
    gbps("bias add", f * (2.0 * n * c), [&] { nn.bias_add(y, w, n, c, c); });
    gbps("bias backward", f * (1.0 * n * c), [&] { nn.bias_backward(db, g, n, c, c); });
    gbps("accumulate", f * (3.0 * n * c), [&] { nn.accumulate(y, x, n * c); });
    const int64_t vocab_rows = std::min<int64_t>(m.vocab, b.cpu() ? 2048 : 65536);
    const float* wte = b.floats(vocab_rows * c);
    float* dwte = b.floats(vocab_rows * c);
    const int32_t* tok = b.tokens(n, vocab_rows);
    gbps("embedding forward", f * (2.0 * n * c), [&] { nn.embedding_forward(y, tok, wte, nullptr, n, seq, c); });
    gbps("embedding backward", f * (3.0 * n * c), [&] { nn.embedding_backward(dwte, nullptr, g, tok, n, seq, c); });
    b.release();
  }
  {
    const double f = 4.0;
    float* qkv = b.floats(n * m.qkv());
    const float* cs = b.floats(seq * d / 2);
    const float* sn = b.floats(seq * d / 2);
    gbps("rope (q heads)", f * (2.0 * n * m.heads * d),
         [&] { nn.rope_apply(qkv, n, seq, m.heads, d, m.qkv(), cs, sn, false); });
    float* gu = b.floats(n * 2 * h, -4.0f, 4.0f);
    float* act = b.floats(n * h);
    float* dgu = b.floats(n * 2 * h);
    gbps("swiglu forward", f * (3.0 * n * h), [&] { nn.swiglu_forward(act, gu, n, h); });
    gbps("swiglu backward", f * (5.0 * n * h), [&] { nn.swiglu_backward(dgu, act, gu, n, h); });
    gbps("gelu forward", f * (2.0 * n * h), [&] { nn.gelu_forward(act, gu, n * h); });
    gbps("gelu backward", f * (3.0 * n * h), [&] { nn.gelu_backward(act, dgu, gu, n * h); });
    auto* narrow = reinterpret_cast<uint16_t*>(dgu);
    gbps("narrow to bf16", 6.0 * n * h, [&] { nn.narrow(GemmDtype::kBF16, narrow, act, n * h); });
    gbps("widen from bf16", 6.0 * n * h, [&] { nn.widen(GemmDtype::kBF16, act, narrow, n * h); });
    b.release();
  }
  {
    // Cross-entropy over a chunk of rows of the full vocabulary (in place: logits -> gradients),
    // the rows laid out as the model lays them out (padded to logits_row_stride).
    const int64_t rows_ce = b.cpu() ? 16 : 1024, stride = models::logits_row_stride(m.vocab);
    float* logits = b.floats(rows_ce * stride, -4.0f, 4.0f);
    const int32_t* targets = b.tokens(rows_ce, m.vocab);
    auto* loss_sum = reinterpret_cast<double*>(b.floats(2));  // a double the op adds to (its value is not read)
    gbps("cross-entropy (+grad)", 4.0 * 3.0 * double(rows_ce) * double(m.vocab),
         [&] { nn.cross_entropy_rows(logits, targets, rows_ce, m.vocab, stride, 1.0f, true, loss_sum); });
    b.release();
  }
}

}  // namespace

int run_ops_bench(const BenchOptions& options) {
  const bool cuda = options.device == "cuda";
  if (cuda && cuda_bench_unavailable("ops")) return kBenchSkipped;
  if (!cuda && options.device != "cpu") {
    std::fprintf(stderr, "farthing bench ops: --device cpu or cuda\n");
    return 2;
  }
  if (options.threads > 0) omp_set_num_threads(options.threads);
  const Device device = cuda ? Device::cuda(0) : Device::cpu();
  OpsBench b(device, options);
  // Ceilings, measured here: a square GEMM through the same NnOps and a copy.
  const int64_t g = cuda ? 8192 : 2048;
  const GemmDtype gemm_dtype = GemmDtype::kBF16;
  double gemm_tflops = 0.0, copy_gbps = 0.0;
  {
    const void* a = b.bf16(g * g);
    const void* w = b.bf16(g * g);
    float* out = b.floats(g * g);
    gemm_tflops = 2.0 * double(g) * double(g) * double(g) /
                  b.time([&] { b.nn().matmul(gemm_dtype, GemmShape{g, g, g, 0, 0, 0, Trans::kN, Trans::kT}, a, w, out, false); }) / 1e12;
    b.release();
    const int64_t count = int64_t(256) << 20 >> (cuda ? 0 : 3);  // 1 GiB (CPU: 128 MiB) of floats
    const float* src = b.floats(count);
    float* dst = b.floats(count);
    copy_gbps = 8.0 * double(count) / b.time([&] {
      if (cuda) b.nn().copy(dst, src, count);
      else parallel_memcpy(dst, src, size_t(count) * 4);
    }) / 1e9;
    b.release();
  }
  std::vector<Row> rows;
  for (const ModelShape& m : kModels) bench_model(b, m, rows);
  if (cuda) backend_for(device).synchronize();

  const std::string where = cuda ? "cuda:0 (" + cuda_device_summary() + ")" : "cpu";
  if (options.json) {
    std::printf("{\"suite\": \"ops\", \"device\": \"%s\", \"gemm_ceiling_tflops\": %.3f, \"copy_gbps\": %.3f, \"rows\": [",
                where.c_str(), gemm_tflops, copy_gbps);
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::printf("%s{\"model\": \"%s\", \"op\": \"%s\", \"seconds\": %.6g, \"%s\": %.3f, \"ratio\": %.3f}", i ? ", " : "",
                  r.model.c_str(), r.op.c_str(), r.seconds, r.flops ? "tflops" : "gbps", r.rate,
                  r.rate / (r.flops ? gemm_tflops : copy_gbps));
    }
    std::printf("]}\n");
    return 0;
  }
  std::printf("farthing bench ops — %s\n", where.c_str());
  std::printf("ceilings: %s GEMM %lld^3 through NnOps::matmul %.1f TFLOP/s; copy %.1f GB/s (bytes read + written)\n\n",
              cuda ? "bf16 (cuBLASLt, fp32 C)" : "bf16 (oneDNN, fp32 C)", (long long)g, gemm_tflops, copy_gbps);
  std::printf("%-14s %-28s %10s %12s %9s\n", "model", "op", "ms", "rate", "x ceiling");
  for (const Row& r : rows) {
    std::printf("%-14s %-28s %10.3f %8.2f %-4s %8.2f\n", r.model.c_str(), r.op.c_str(), r.seconds * 1e3, r.rate,
                r.flops ? "TF/s" : "GB/s", r.rate / (r.flops ? gemm_tflops : copy_gbps));
  }
  return 0;
}

}  // namespace farthing::bench
