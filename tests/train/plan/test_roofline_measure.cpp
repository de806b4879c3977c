// test_roofline_measure.cpp — `--measure-ops` (train/plan/roofline_measure.h) against a stub
// backend whose every NnOps call is recorded and takes a known time on the stub's own clock
// (RooflineMeasureOptions::clock), for a Llama-style and a GPT-2 step:
//  - each shape's calls are the call the row names, with the shape's own sizes (a GEMM's m, n, k,
//    transposes, output type, residual add and bias), and only that call;
//  - each row's measured seconds are exactly the sum over its shapes of count x the stub's
//    seconds per call (the stub's times are whole multiples of 2^-30 s, so every sum is exact);
//  - the rows --measure-ops does not run (the optimizer step) say so.
// Calls are told apart by shape: each shape's scratch buffers are zeroed (Backend::fill_bytes)
// before its first call, so a fill after a call begins the next shape's calls.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/nn_ops.h"
#include "framework/core/error.h"
#include "models/common/presets.h"
#include "train/plan/roofline.h"
#include "train/plan/roofline_measure.h"

namespace farthing::train {
namespace {

constexpr double kTick = 1.0 / double(int64_t(1) << 30);  // the stub clock's unit, in seconds

// One recorded call: the op, its sizes in RooflineCall's terms (0 where the op has none of
// them), a GEMM's transposes, output type and residual, and the row strides it was given (a
// GEMM's lda and ldc, the loss's logits stride as ldc; 0 where dense by default).
struct Call {
  RooflineOp op = RooflineOp::kGemm;
  std::array<int64_t, 3> mnk{};
  bool trans_a = false, trans_b = false, bf16_out = false, adds_residual = false, bias = false;
  int64_t lda = 0, ldc = 0;
  // The stub's known time per call, in ticks: distinct for distinct sizes and flags.
  int64_t ticks() const {
    return 1 + int64_t(op) * 5 + mnk[0] + 3 * mnk[1] + 7 * mnk[2] + (trans_a ? 11 : 0) + (trans_b ? 13 : 0) +
           (bf16_out ? 17 : 0) + (adds_residual ? 19 : 0) + 23 * lda + 29 * ldc + (bias ? 31 : 0);
  }
};

class StubOps final : public NnOps {
 public:
  std::vector<std::vector<Call>> shapes;  // the calls of each shape, in the order they ran
  int64_t now_ticks = 0;
  bool fill_begins_shape = true;

  Device device() const override { return Device::cpu(); }
  void record(Call c) {
    if (shapes.empty()) shapes.emplace_back();
    shapes.back().push_back(c);
    now_ticks += c.ticks();
    fill_begins_shape = true;
  }
  void on_fill() {
    if (fill_begins_shape) shapes.emplace_back();
    fill_begins_shape = false;
  }

  void matmul(GemmDtype, const GemmShape& s, const void*, const void*, float*, bool) override {
    record(gemm(s, false, false));
  }
  void matmul_bf16_out(GemmDtype, const GemmShape& s, const void*, const void*, const float* bias, const uint16_t* add,
                       uint16_t*) override {
    record(gemm(s, true, add != nullptr, bias != nullptr));
  }
  void matmul_bias(GemmDtype, const GemmShape& s, const void*, const void*, const float*, float*, bool) override {
    record(gemm(s, false, false, true));
  }
  void matmul_bias_grad(GemmDtype, const GemmShape& s, const void*, const void*, float*, GradInto, BiasGradOf, ActRef,
                        float*) override {
    record(gemm(s, false, false, true));
  }
  void fp8_quantize(const Fp8QuantizeArgs&) override { std::abort(); }
  int64_t fp8_matmul_workspace_bytes(int64_t, int64_t, bool) const override { return 0; }
  void matmul_fp8(const GemmShape&, const Fp8Operand&, const Fp8Operand&, float*, bool, void*) override { std::abort(); }
  void attention_forward(const AttentionShape& s, ActRef, float*, ActRef) override {
    record(op(RooflineOp::kAttentionForward, s.batch * s.seq, s.q_heads, s.head_dim));
  }
  void attention_backward(const AttentionShape& s, ActRef, float*, ActRef, ActRef, const float*, ActRef) override {
    record(op(RooflineOp::kAttentionBackward, s.batch * s.seq, s.q_heads, s.head_dim));
  }
  void attention_decode(const AttentionShape&, float*, const float*, int64_t, int64_t, const float*,
                        const float*) override {
    std::abort();
  }
  void rmsnorm_forward(ActRef, float*, ActRef, const float*, int64_t n, int64_t c, float) override {
    record(op(RooflineOp::kNormForward, n, c, 0));
  }
  void rmsnorm_backward(ActRef, float*, ActRef, ActRef, const float*, const float*, int64_t n, int64_t c) override {
    record(op(RooflineOp::kNormBackward, n, c, 0));
  }
  void layernorm_forward(ActRef, float*, float*, ActRef, const float*, const float*, int64_t n, int64_t c,
                         float) override {
    record(op(RooflineOp::kNormForward, n, c, 0));
  }
  void layernorm_backward(ActRef, float*, float*, ActRef, ActRef, const float*, const float*, const float*, int64_t n,
                          int64_t c) override {
    record(op(RooflineOp::kNormBackward, n, c, 0));
  }
  void head_rmsnorm_forward(const HeadNormShape& s, ActRef, float*, ActRef, const float*, const float*,
                            float) override {
    record(op(RooflineOp::kNormForward, s.rows * s.normed_heads(), s.head_dim, 0));
  }
  void head_rmsnorm_backward(const HeadNormShape& s, ActRef, float*, float*, ActRef, const float*, const float*,
                             const float*) override {
    record(op(RooflineOp::kNormBackward, s.rows * s.normed_heads(), s.head_dim, 0));
  }
  void rope_apply(ActRef, int64_t rows, RowPositions, int64_t heads, int64_t head_dim, int64_t, const float*, const float*,
                  bool) override {
    record(op(RooflineOp::kRope, rows, heads, head_dim));
  }
  void swiglu_forward(ActRef, ActRef, int64_t n, int64_t h) override { record(op(RooflineOp::kSwigluForward, n, h, 0)); }
  void swiglu_backward(ActRef, ActRef, ActRef, int64_t n, int64_t h) override {
    record(op(RooflineOp::kSwigluBackward, n, h, 0));
  }
  // The roofline prices GeGLU as SwiGLU (the same shapes and traffic); the models measured here
  // (Llama-style) have no embedding scale or post-norm residual add.
  void geglu_forward(ActRef, ActRef, int64_t n, int64_t h) override { record(op(RooflineOp::kSwigluForward, n, h, 0)); }
  void geglu_backward(ActRef, ActRef, ActRef, int64_t n, int64_t h) override {
    record(op(RooflineOp::kSwigluBackward, n, h, 0));
  }
  void scale_add(ActRef, ActRef, float, ActRef, int64_t) override {
    FARTHING_CHECK(false, "scale_add is not among the roofline's ops: the stub measures Llama-style models only");
  }
  void gelu_forward(ActRef, ActRef, int64_t count) override { record(op(RooflineOp::kGeluForward, count, 0, 0)); }
  void gelu_backward(ActRef, ActRef, ActRef, int64_t count) override { record(op(RooflineOp::kGeluBackward, count, 0, 0)); }
  void embedding_forward(ActRef, const int32_t*, const float*, const float*, int64_t n, RowPositions, int64_t c) override {
    record(op(RooflineOp::kEmbeddingForward, n, c, 0));
  }
  void embedding_forward_bf16(ActRef, const int32_t*, const uint16_t*, const uint16_t*, int64_t n, RowPositions,
                              int64_t c) override {
    record(op(RooflineOp::kEmbeddingForward, n, c, 0));
  }
  void embedding_backward(float*, float*, ActRef, const int32_t*, int64_t n, RowPositions, int64_t c) override {
    record(op(RooflineOp::kEmbeddingBackward, n, c, 0));
  }
  void bias_add(float*, const float*, int64_t n, int64_t c, int64_t) override { record(op(RooflineOp::kBiasAdd, n, c, 0)); }
  void bias_backward(float*, ActRef, int64_t n, int64_t c, int64_t) override {
    record(op(RooflineOp::kBiasBackward, n, c, 0));
  }
  void cross_entropy_rows(ActRef, const int32_t*, int64_t rows, int64_t vocab, int64_t stride, float, bool,
                          double*) override {
    Call c = op(RooflineOp::kCrossEntropy, rows, vocab, 0);
    c.ldc = stride;
    record(c);
  }
  void narrow(GemmDtype, uint16_t*, const float*, int64_t count) override { record(op(RooflineOp::kNarrow, count, 0, 0)); }
  void widen(GemmDtype, float*, const uint16_t*, int64_t count) override { record(op(RooflineOp::kWiden, count, 0, 0)); }
  void copy(float*, const float*, int64_t) override {}  // token ids for a shape's buffers: not timed
  void zero(float*, int64_t count) override { record(op(RooflineOp::kZero, count, 0, 0)); }
  void accumulate(float*, const float*, int64_t count) override { record(op(RooflineOp::kResidualAdd, count, 0, 0)); }

 private:
  static Call gemm(const GemmShape& s, bool bf16_out, bool adds_residual, bool bias = false) {
    Call c;
    c.mnk = {s.m, s.n, s.k};
    c.trans_a = s.trans_a == Trans::kT;
    c.trans_b = s.trans_b == Trans::kT;
    c.bf16_out = bf16_out;
    c.adds_residual = adds_residual;
    c.bias = bias;
    c.lda = s.lda;
    c.ldc = s.ldc;
    return c;
  }
  static Call op(RooflineOp o, int64_t a, int64_t b, int64_t c) {
    Call call;
    call.op = o;
    call.mnk = {a, b, c};
    return call;
  }
};

// Host memory for the buffers (Buffer allocates through the CPU backend); nothing is computed.
class StubBackend final : public Backend {
 public:
  StubOps ops;
  Device device() const override { return Device::cpu(); }
  void* allocate_bytes(size_t bytes) override { return backend_for(Device::cpu()).allocate_bytes(bytes); }
  void free_bytes(void* data) override { backend_for(Device::cpu()).free_bytes(data); }
  void copy(const Tensor&, const Tensor&) override { std::abort(); }
  void cast(const Tensor&, const Tensor&, const CastOptions&) override { std::abort(); }
  void block_quantize(const Tensor&, const Tensor&, const Tensor&, numerics::MapSign) override { std::abort(); }
  void block_dequantize(const Tensor&, const Tensor&, const Tensor&, numerics::MapSign) override { std::abort(); }
  void fill_bytes(void*, uint8_t, size_t) override { ops.on_fill(); }
  void adamw_step(const kernels::AdamWSegment&, kernels::AdamWPartials*) override { std::abort(); }
  void grad_partials(const void*, kernels::GradFormat, size_t, kernels::GradPartials*) override { std::abort(); }
  NnOps& nn() override { return ops; }
  void synchronize() override {}
};

// What the stub must have seen for `shape`: its sizes as the op takes them (a GEMM's m, n, k;
// a norm's, SwiGLU's, bias's, loss's and embedding's rows and width; RoPE's rows, heads and head
// size; an elementwise op's count), and a GEMM's flags. Attention's sizes are the step's inputs.
Call expected_call(const RooflineCall& shape, const RooflineInputs& in) {
  Call c;
  c.op = shape.op;
  switch (shape.op) {
    case RooflineOp::kGemm:
      c.mnk = {shape.m, shape.n, shape.k};
      c.trans_a = shape.trans_a;
      c.trans_b = shape.trans_b;
      c.bf16_out = shape.bf16_out && in.acts_bf16();
      c.adds_residual = c.bf16_out && shape.adds_residual;
      c.bias = shape.bias;
      c.lda = shape.lda;
      c.ldc = shape.ldc;
      break;
    case RooflineOp::kCrossEntropy:
      c.mnk = {shape.m, shape.n, 0};
      c.ldc = shape.ldc;
      break;
    case RooflineOp::kRope: c.mnk = {shape.m, shape.n, shape.k}; break;
    case RooflineOp::kAttentionForward:
    case RooflineOp::kAttentionBackward:
      c.mnk = {in.micro_batch * in.seq, in.model.n_heads, in.model.head_dim()};
      break;
    case RooflineOp::kGeluForward:
    case RooflineOp::kGeluBackward:
    case RooflineOp::kResidualAdd:
    case RooflineOp::kZero:
    case RooflineOp::kNarrow:
    case RooflineOp::kWiden: c.mnk = {shape.m, 0, 0}; break;
    default: c.mnk = {shape.m, shape.n, 0}; break;
  }
  return c;
}

std::string describe(const Call& c) {
  return "op " + std::to_string(int(c.op)) + " (" + std::to_string(c.mnk[0]) + ", " + std::to_string(c.mnk[1]) + ", " +
         std::to_string(c.mnk[2]) + ")" + (c.trans_a ? " ta" : "") + (c.trans_b ? " tb" : "") +
         (c.bf16_out ? " bf16-out" : "") + (c.adds_residual ? " +residual" : "") + (c.bias ? " +bias" : "") +
         (c.lda ? " lda " + std::to_string(c.lda) : "") + (c.ldc ? " ldc " + std::to_string(c.ldc) : "");
}

bool same(const Call& a, const Call& b) {
  return a.op == b.op && a.mnk == b.mnk && a.trans_a == b.trans_a && a.trans_b == b.trans_b &&
         a.bf16_out == b.bf16_out && a.adds_residual == b.adds_residual && a.bias == b.bias && a.lda == b.lda &&
         a.ldc == b.ldc;
}

void check_step(const std::string& preset, int64_t micro_batch, int64_t seq) {
  SCOPED_TRACE(preset);
  RooflineInputs in;
  in.model = models::preset_config(preset);
  in.micro_batch = micro_batch;
  in.seq = seq;
  in.grad_accum = 2;
  in.optimizer_bytes = 1e6;
  in.grad_zeroed_elems = 3000;  // the gradient bookkeeping rows: zero, keep, zero in place
  in.grad_kept_from_accumulator_elems = 2900;
  in.grad_zeroed_once_elems = 5000;
  in.embedding_rows_once = true;  // and the embedding summed per distinct token first
  in.embedding_rows_set_aside = true;  // and a tied one's rows set aside
  const RooflineStep step = roofline_step(in);
  StubBackend stub;
  RooflineMeasureOptions options;
  options.min_seconds = 0.0;  // three timed batches per shape
  options.clock = [&stub] { return double(stub.ops.now_ticks) * kTick; };
  const std::vector<double> seconds = measure_roofline_rows(step, stub, options);
  ASSERT_EQ(seconds.size(), step.rows.size());

  size_t next = 0;  // the next recorded shape
  int64_t multi_call_shapes = 0;
  for (size_t r = 0; r < step.rows.size(); ++r) {
    const RooflineRow& row = step.rows[r];
    SCOPED_TRACE(row.op);
    ASSERT_FALSE(row.shapes.empty());
    if (row.shapes.front().op == RooflineOp::kOptimizerStep) {
      EXPECT_LT(seconds[r], 0.0) << "the optimizer step is not run by --measure-ops";
      continue;
    }
    double expected = 0.0;
    for (const RooflineCall& shape : row.shapes) {
      ASSERT_LT(next, stub.ops.shapes.size()) << "fewer shapes ran than the rows hold";
      const std::vector<Call>& calls = stub.ops.shapes[next++];
      const Call want = expected_call(shape, in);
      ASSERT_FALSE(calls.empty());
      for (const Call& c : calls) {
        ASSERT_TRUE(same(c, want)) << "ran " << describe(c) << " for the shape " << describe(want);
      }
      expected += double(shape.count) * double(want.ticks()) * kTick;
      multi_call_shapes += shape.count > 1;
    }
    EXPECT_EQ(seconds[r], expected) << "row measured " << seconds[r] << " s, the sum of count x per-call is "
                                    << expected << " s";
  }
  EXPECT_EQ(next, stub.ops.shapes.size()) << "more shapes ran than the rows hold";
  // The sum is only a test of count x per-call where some shape is called more than once.
  EXPECT_GT(multi_call_shapes, 0);
}

TEST(RooflineMeasure, EachShapeRunsItsOwnCallAndRowsSumCountTimesPerCall) {
  check_step("stories260k", 2, 64);  // Llama: rmsnorm, RoPE, SwiGLU
  check_step("gpt2-124m", 1, 64);    // GPT-2: layernorm, GELU, biases in the GEMMs' epilogues
}

}  // namespace
}  // namespace farthing::train
