// test_roofline.cpp — the step on paper (train/plan/roofline.h): its GEMMs and attention
// add up to the FLOPs MFU divides by, recomputation adds exactly one more forward of the blocks,
// the design never moves more bytes than the code as built, each op takes the larger of its
// compute and memory time, the optimizer's bytes follow the plan's categories, and each row's
// calls by shape (what --measure-ops runs) add up to the row.
#include <gtest/gtest.h>

#include <string>

#include "train/plan/memory_estimate.h"
#include "train/plan/roofline.h"
#include "models/common/presets.h"

namespace farthing::train {
namespace {

RooflineInputs inputs(const std::string& preset, bool recompute = false, bool fp8 = false) {
  RooflineInputs in;
  in.model = models::preset_config(preset);
  in.micro_batch = 2;
  in.seq = 512;
  in.grad_accum = 3;
  in.recompute = recompute;
  in.fp8 = fp8;
  in.optimizer_bytes = 1e9;
  return in;
}

bool is_gemm(const RooflineRow& r) { return r.op.rfind("matmul ", 0) == 0; }

// Without recomputation, the GEMM rows and attention (its backward counted at 2x the forward, as
// MFU's definition does, not the 2.5x the roofline times) are exactly the model's FLOPs.
TEST(Roofline, GemmsAndAttentionAreTheModelFlops) {
  for (const char* preset : {"llama3.1-8b", "qwen2.5-7b", "smollm2-135m", "gpt2-124m"}) {
    const RooflineStep step = roofline_step(inputs(preset));
    double flops = 0.0;
    for (const RooflineRow& r : step.rows) {
      if (is_gemm(r) || r.op == "attention forward") flops += r.flops;
      if (r.op == "attention backward") flops += r.flops * (2.0 / 2.5);
    }
    EXPECT_NEAR(flops / step.model_flops, 1.0, 1e-12) << preset;
  }
}

TEST(Roofline, RecomputationAddsOneForwardOfTheBlocks) {
  const RooflineStep plain = roofline_step(inputs("llama3.1-8b"));
  const RooflineStep again = roofline_step(inputs("llama3.1-8b", true));
  ASSERT_EQ(plain.rows.size(), again.rows.size());
  const models::ModelConfig c = models::preset_config("llama3.1-8b");
  const int64_t block_calls = c.n_layers * 3;  // layers x grad_accum
  for (size_t i = 0; i < plain.rows.size(); ++i) {
    const RooflineRow &p = plain.rows[i], &a = again.rows[i];
    ASSERT_EQ(p.op, a.op);
    const bool block_forward = p.op == "matmul qkv fwd" || p.op == "matmul o fwd" || p.op == "matmul up (gate_up) fwd" ||
                               p.op == "matmul down fwd" || p.op == "attention forward" || p.op == "swiglu forward";
    if (block_forward) {
      EXPECT_EQ(a.calls, 2 * p.calls) << p.op;
      EXPECT_EQ(p.calls, block_calls) << p.op;
      EXPECT_NEAR(a.flops, 2.0 * p.flops, 1e-9 * p.flops) << p.op;
    }
    if (p.op.find("dgrad") != std::string::npos || p.op.find("wgrad") != std::string::npos ||
        p.op == "attention backward" || p.op == "optimizer step" || p.op.find("lm head") != std::string::npos) {
      EXPECT_EQ(a.calls, p.calls) << p.op;
    }
  }
  EXPECT_EQ(again.model_flops, plain.model_flops);  // MFU does not count recomputation
}

// The head and loss in chunks (model.loss_chunk_rows): the same FLOPs and logits, but each chunk's
// three GEMMs read the head's weight (V x C bf16) again and read and write its fp32 gradient, so
// the head moves exactly (chunks - 1) more of those per micro-batch; a last short chunk counts.
TEST(Roofline, LossChunksReReadTheHeadWeightAndItsGradient) {
  RooflineInputs whole = inputs("llama3.1-8b"), chunked = whole, uneven = whole;
  chunked.loss_chunk_rows = 64;   // 1024 rows per micro-batch: 16 chunks
  uneven.loss_chunk_rows = 1000;  // 1000 + 24
  const models::ModelConfig c = whole.model;
  const double V = double(c.vocab_size), C = double(c.dim), micro = double(whole.grad_accum);
  const double weight = 2.0 * V * C, gradient = 2.0 * 4.0 * V * C;  // bf16 read; fp32 read + write
  // Per chunk: the weight read by the forward and the dgrad GEMMs, the gradient by the wgrad GEMM.
  const double per_chunk = 2.0 * weight + gradient;
  auto head = [](const RooflineStep& s, double RooflineRow::*field) {
    double sum = 0.0;
    for (const RooflineRow& r : s.rows) {
      if (r.op.find("lm head") != std::string::npos || r.op == "cross-entropy (+grad)") sum += r.*field;
    }
    return sum;
  };
  const RooflineStep a = roofline_step(whole), b = roofline_step(chunked), u = roofline_step(uneven);
  EXPECT_NEAR(head(b, &RooflineRow::flops), head(a, &RooflineRow::flops), 1e-9 * head(a, &RooflineRow::flops));
  EXPECT_NEAR(head(b, &RooflineRow::bytes_built) - head(a, &RooflineRow::bytes_built), micro * 15 * per_chunk,
              1e-9 * head(b, &RooflineRow::bytes_built));
  EXPECT_NEAR(head(u, &RooflineRow::bytes_built) - head(a, &RooflineRow::bytes_built), micro * 1 * per_chunk,
              1e-9 * head(u, &RooflineRow::bytes_built));
  for (const RooflineRow& r : b.rows) {
    if (r.op == "cross-entropy (+grad)") {
      EXPECT_EQ(r.calls, 3 * 16);
    }
  }
}

// GPT-2's logits rows lie 50,304 apart (models::logits_row_stride): the head's FLOPs are over the
// true 50,257, its logits traffic at the padded stride, and its calls carry the stride where the
// model passes it (C of the forward GEMM, A of dgrad and wgrad, the loss's rows).
TEST(Roofline, TheHeadsLogitsTrafficIsCountedAtThePaddedStride) {
  const RooflineInputs in = inputs("gpt2-124m");
  const models::ModelConfig& c = in.model;
  const double V = double(c.vocab_size), Vp = 50304.0, C = double(c.dim), n = double(in.micro_batch * in.seq);
  ASSERT_EQ(c.vocab_size, 50257);
  const RooflineStep step = roofline_step(in);
  int seen = 0;
  for (const RooflineRow& r : step.rows) {
    SCOPED_TRACE(r.op);
    const double calls = double(r.calls);
    if (r.op == "cross-entropy (+grad)") {
      EXPECT_DOUBLE_EQ(r.bytes_built, calls * 2.0 * 2.0 * n * Vp);  // bf16 logits read and written
      for (const RooflineCall& s : r.shapes) EXPECT_EQ(s.ldc, 50304);
      ++seen;
    } else if (r.op == "matmul lm head fwd") {
      EXPECT_DOUBLE_EQ(r.flops, calls * 2.0 * n * V * C);
      EXPECT_DOUBLE_EQ(r.bytes_built, calls * (2.0 * n * C + 2.0 * V * C + 2.0 * n * Vp));
      for (const RooflineCall& s : r.shapes) EXPECT_EQ(s.ldc, 50304);
      ++seen;
    } else if (r.op == "matmul lm head dgrad" || r.op == "matmul lm head wgrad") {
      EXPECT_DOUBLE_EQ(r.flops, calls * 2.0 * n * V * C);
      for (const RooflineCall& s : r.shapes) EXPECT_EQ(s.lda, 50304);
      ++seen;
    }
  }
  EXPECT_EQ(seen, 4);
}

TEST(Roofline, TheDesignNeverMovesMoreBytesThanAsBuilt) {
  for (bool fp8 : {false, true}) {
    const RooflineStep step = roofline_step(inputs("qwen2.5-7b", true, fp8));
    bool saw_narrow = false;
    for (const RooflineRow& r : step.rows) {
      EXPECT_LE(r.bytes_design, r.bytes_built) << r.op;
      EXPECT_GT(r.bytes_built, 0.0) << r.op;
      EXPECT_EQ(r.fp8, fp8 && is_gemm(r) && r.op.find("lm head") == std::string::npos) << r.op;
      if (r.op == "narrow GEMM operands to bf16") {
        saw_narrow = true;
        EXPECT_EQ(r.bytes_design, 0.0);
      }
    }
    EXPECT_EQ(saw_narrow, fp8) << "bf16 activations narrow no GEMM operand; FP8's fp32 ones are narrowed";
  }
}

// As built, every GEMM operand is stored as bf16 without FP8 (models::stored_act_dtype; the
// loss writes the logits' gradient as bf16), so nothing is narrowed. FP8 keeps fp32 GEMM inputs
// and gradients: every x and dy is narrowed.
TEST(Roofline, NarrowingSkipsTheGemmInputsStoredAsBf16) {
  for (bool fp8 : {false, true}) {
    const RooflineInputs in = inputs("qwen2.5-7b", true, fp8);
    const RooflineStep step = roofline_step(in);
    const int64_t L = in.model.n_layers * in.grad_accum, forwards = 2 * L, micro = in.grad_accum;
    const int64_t expected = fp8 ? 4 * forwards + 8 * L + 3 * micro : 0;
    int64_t calls = 0;  // no row: no narrowing
    for (const RooflineRow& r : step.rows) {
      if (r.op == "narrow GEMM operands to bf16") calls = r.calls;
    }
    EXPECT_EQ(calls, expected) << (fp8 ? "fp8" : "bf16");
  }
}

// qkv, the MLP's in-projection, the residual stream and, in backward, every gradient but the
// logits' are stored as bf16 without FP8: their GEMMs (every block GEMM's forward, every dgrad)
// write bf16 (the calls say so, for --measure-ops), and the norms, SwiGLU's forward and backward,
// RoPE (both ways) and attention's backward move bf16 only, as the design has it. A bias (Qwen's
// qkv, GPT-2's four) is added in its GEMM's epilogue, into the bf16 output, and its gradient
// written by the weight gradient's GEMM (the calls say so): no bias rows, nothing staged. FP8
// keeps fp32, and its biases as rows of their own (forward and recompute; backward).
TEST(Roofline, QkvTheMlpInProjectionAndItsGradientsAreWrittenAsBf16) {
  const auto row = [](const RooflineStep& step, const std::string& op) -> const RooflineRow* {
    for (const RooflineRow& r : step.rows) {
      if (r.op == op) return &r;
    }
    return nullptr;
  };
  for (bool fp8 : {false, true}) {
    const RooflineStep step = roofline_step(inputs("llama3.1-8b", true, fp8));
    for (const char* op :
         {"matmul qkv fwd", "matmul up (gate_up) fwd", "swiglu forward", "matmul down dgrad", "swiglu backward",
          "matmul o dgrad", "rope", "attention backward", "matmul qkv dgrad", "matmul up (gate_up) dgrad",
          "matmul lm head dgrad", "matmul o fwd", "matmul down fwd", "rmsnorm forward", "rmsnorm backward"}) {
      const RooflineRow* r = row(step, op);
      ASSERT_NE(r, nullptr) << op;
      for (const RooflineCall& c : r->shapes) {
        if (c.op == RooflineOp::kGemm) {
          EXPECT_EQ(c.bf16_out, !fp8) << op << (fp8 ? " fp8" : " bf16");
        }
      }
      if (fp8) {
        EXPECT_GT(r->bytes_built, r->bytes_design) << op;
      } else {
        EXPECT_DOUBLE_EQ(r->bytes_built, r->bytes_design) << op;
      }
    }
    EXPECT_EQ(row(step, "narrow GEMM outputs to bf16"), nullptr) << "no biases, nothing staged";
    // The residual branches' GEMMs add onto the residual stream: read as their C under bf16 (no
    // separate add; the calls say so), a copy the GEMM accumulates onto under FP8.
    for (const char* op : {"matmul o fwd", "matmul down fwd"}) {
      for (const RooflineCall& c : row(step, op)->shapes) EXPECT_EQ(c.adds_residual, !fp8) << op;
    }
    const RooflineRow* residual_add = row(step, "residual add");
    if (fp8) {
      ASSERT_NE(residual_add, nullptr);
      EXPECT_EQ(residual_add->calls, 2 * 2 * step.inputs.model.n_layers * step.inputs.grad_accum);
    } else {
      EXPECT_EQ(residual_add, nullptr);
    }
  }
  // GEMMs with a bias: Qwen's qkv; GPT-2's qkv, out, up and down.
  const std::pair<const char*, int> biased[] = {{"qwen2.5-7b", 1}, {"gpt2-124m", 4}};
  for (const auto& [preset, per_block] : biased) {
    for (bool fp8 : {false, true}) {
      SCOPED_TRACE(std::string(preset) + (fp8 ? " fp8" : " bf16"));
      const RooflineStep step = roofline_step(inputs(preset, true, fp8));
      const int64_t L = step.inputs.model.n_layers * step.inputs.grad_accum;
      EXPECT_EQ(row(step, "narrow GEMM outputs to bf16"), nullptr);
      EXPECT_EQ(row(step, "widen residual for bias GEMM"), nullptr);
      for (const RooflineCall& c : row(step, "matmul qkv fwd")->shapes) {
        EXPECT_EQ(c.bf16_out, !fp8);
        EXPECT_EQ(c.bias, !fp8);
      }
      for (const RooflineCall& c : row(step, "matmul qkv wgrad")->shapes) EXPECT_EQ(c.bias, !fp8);
      for (const RooflineCall& c : row(step, "matmul qkv dgrad")->shapes) EXPECT_FALSE(c.bias);
      const RooflineRow* add = row(step, "bias add");
      const RooflineRow* backward = row(step, "bias backward");
      if (fp8) {
        ASSERT_NE(add, nullptr);
        ASSERT_NE(backward, nullptr);
        EXPECT_EQ(add->calls, per_block * 2 * L);  // forward and recompute, per micro-batch
        EXPECT_EQ(backward->calls, per_block * L);
      } else {
        EXPECT_EQ(add, nullptr);
        EXPECT_EQ(backward, nullptr);
      }
    }
  }
}

TEST(Roofline, EachOpTakesTheLargerOfComputeAndMemoryTime) {
  const RooflineDevice& h200 = *roofline_device("h200");
  const RooflineRow compute_bound{"gemm", 1, 989.4e12, 4.8e9, 4.8e9, false, {}};  // 1 s of FLOPs, 1 ms of bytes
  EXPECT_DOUBLE_EQ(roofline_seconds(compute_bound, h200, true), 1.0);
  const RooflineRow fp8{"gemm", 1, 1978.9e12, 4.8e9, 4.8e9, true, {}};
  EXPECT_DOUBLE_EQ(roofline_seconds(fp8, h200, true), 1.0);
  const RooflineRow memory_bound{"add", 1, 1e9, 9.6e12, 4.8e12, false, {}};
  EXPECT_DOUBLE_EQ(roofline_seconds(memory_bound, h200, false), 2.0);
  EXPECT_DOUBLE_EQ(roofline_seconds(memory_bound, h200, true), 1.0);
  EXPECT_EQ(roofline_device("a100"), nullptr);
  EXPECT_LT(roofline_device("h100")->bytes_per_s, h200.bytes_per_s);
}

// The shapes --measure-ops runs are the row's calls: their counts add up to the row's, a GEMM's
// 2 m n k per call to its FLOPs, a narrowing's elements to its bytes (6 per element), and a row
// never mixes ops.
TEST(Roofline, EachRowsShapesAddUpToTheRow) {
  for (const char* preset : {"llama3.1-8b", "qwen2.5-7b", "gpt2-124m"}) {
    for (bool recompute : {false, true}) {
      const RooflineStep step = roofline_step(inputs(preset, recompute, true));
      for (const RooflineRow& r : step.rows) {
        ASSERT_FALSE(r.shapes.empty()) << preset << " " << r.op;
        int64_t calls = 0;
        double gemm_flops = 0.0, narrowed = 0.0;
        for (const RooflineCall& c : r.shapes) {
          EXPECT_EQ(c.op, r.shapes.front().op) << preset << " " << r.op;
          EXPECT_GT(c.count, 0) << preset << " " << r.op;
          calls += c.count;
          gemm_flops += double(c.count) * 2.0 * double(c.m) * double(c.n) * double(c.k);
          narrowed += double(c.count) * double(c.m);
        }
        EXPECT_EQ(calls, r.calls) << preset << " " << r.op;
        if (is_gemm(r)) {
          EXPECT_EQ(r.shapes.front().op, RooflineOp::kGemm) << r.op;
          EXPECT_NEAR(gemm_flops, r.flops, 1e-12 * r.flops) << preset << " " << r.op;
        }
        if (r.op == "narrow GEMM operands to bf16") {
          EXPECT_NEAR(6.0 * narrowed, r.bytes_built, 1e-12 * r.bytes_built) << preset;
        }
      }
    }
  }
  // The forward projection is x (tokens, in) times W (out, in) transposed; its weight gradient
  // dy^T x over the tokens.
  const RooflineStep step = roofline_step(inputs("llama3.1-8b"));
  const models::ModelConfig c = models::preset_config("llama3.1-8b");
  for (const RooflineRow& r : step.rows) {
    if (r.op == "matmul qkv fwd") {
      ASSERT_EQ(r.shapes.size(), 1u);
      const RooflineCall& g = r.shapes.front();
      EXPECT_EQ(g.m, 2 * 512);
      EXPECT_EQ(g.n, c.qkv_dim());
      EXPECT_EQ(g.k, c.dim);
      EXPECT_TRUE(!g.trans_a && g.trans_b);
    }
    if (r.op == "matmul down wgrad") {
      ASSERT_EQ(r.shapes.size(), 1u);
      const RooflineCall& g = r.shapes.front();
      EXPECT_EQ(g.m, c.dim);
      EXPECT_EQ(g.n, c.hidden_dim);
      EXPECT_EQ(g.k, 2 * 512);
      EXPECT_TRUE(g.trans_a && !g.trans_b);
    }
  }
}

TEST(Roofline, OptimizerBytesFollowThePlansCategories) {
  MemoryEstimate e;
  e.optimizer.owned_elems = 10;
  e.grad_bytes_per_elem = 4;
  e.optimizer.master = 40;         // f32 master: 4 B each
  e.optimizer.moment_values = 20;  // 8-bit m and v: 2 B each
  e.optimizer.absmax = 4;
  // weights 2 B read + 2 B written, gradients 4 B read, master and state read and written
  EXPECT_DOUBLE_EQ(optimizer_step_bytes(e), 10.0 * (2 + 2 + 4) + 2.0 * 40 + 2.0 * (20 + 4));
}

}  // namespace
}  // namespace farthing::train
