// roofline.h — a training step on paper: every op of one optimizer step (forward, backward,
// recomputation, the optimizer), its FLOPs and the bytes it must move, the time each takes at a
// GPU's datasheet rates (the larger of FLOPs / peak and bytes / bandwidth), and so the MFU the
// design can reach. Two byte counts per op: as built (without FP8, the GEMM inputs, qkv, the
// MLP's in-projection and every gradient but the logits' stored as bf16; the residual stream,
// the residual branches' GEMM outputs and the logits fp32, narrowed to bf16 where a GEMM reads
// them; transformer.cpp) and the design (bf16 activations, no narrowing). A lower bound on
// time: no launch latency, no host waits, every kernel at the roofline. `farthing plan RECIPE --roofline DEVICE` prints it; with --measure-ops
// it also runs every row's calls, shape by shape, on this machine's device and prints the
// measured time beside the roofline's (train/plan/roofline_measure.h).
// Relies on: models/common/model_config.h. Tested by: tests/train/plan/test_roofline.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/common/model_config.h"
#include "train/recipe/run_config.h"

namespace farthing::train {

// A GPU's datasheet rates: dense (no sparsity) tensor-core FLOP/s with fp32 accumulation, and
// memory bandwidth.
struct RooflineDevice {
  const char* name;
  double bf16_flops, fp8_flops, bytes_per_s;
};
// h100 (SXM), h200 (SXM), rtx4090; nullptr for another name.
const RooflineDevice* roofline_device(const std::string& name);
inline constexpr const char* kRooflineDeviceNames = "h100, h200, rtx4090";

// Which NnOps call a row's calls are, and their shape, so that they can be run and timed.
enum class RooflineOp {
  kGemm,               // C (m, n) = op(A) op(B) over k; trans_a / trans_b as the model calls it
  kNormForward,        // m rows of n channels (rmsnorm, or layernorm for GPT-2)
  kNormBackward,       //   likewise
  kRope,               // m rows, n heads of k = head_dim
  kAttentionForward,   // RooflineInputs' batch, seq and the model's heads
  kAttentionBackward,  //   likewise
  kResidualAdd,        // m elements: dst += src
  kZero,               // m fp32 elements zeroed
  kSwigluForward,      // m rows, n = hidden
  kSwigluBackward,     //   likewise
  kGeluForward,        // m elements
  kGeluBackward,       //   likewise
  kEmbeddingForward,   // m rows of n channels from a table of k rows
  kEmbeddingBackward,  //   likewise
  kCrossEntropy,       // m rows of n logits (ldc apart), with the gradient
  kNarrow,             // m elements fp32 -> bf16
  kWiden,              // m elements bf16 -> fp32
  kBiasAdd,            // m rows of n
  kBiasBackward,       //   likewise
  kFp8Quantize,        // not run by --measure-ops (bench numerics measures the quantizers)
  kOptimizerStep,      // not run by --measure-ops (bench optim measures AdamW)
};

// `count` calls of one shape.
struct RooflineCall {
  RooflineOp op = RooflineOp::kGemm;
  int64_t count = 0;
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  // A GEMM whose output is stored as bf16 (NnOps::matmul_bf16_out), RoPE on bf16 rows, a bias
  // backward over a bf16 gradient.
  bool bf16_out = false;
  // A bf16-output GEMM whose product is added to the residual stream it reads (matmul_bf16_out's add).
  bool adds_residual = false;
  // A GEMM with its bias in cuBLASLt's epilogue: a forward adds the layer's bias (matmul_bias, or
  // matmul_bf16_out's bias), a weight gradient writes its bias gradient (matmul_bias_grad, dy as
  // op(A)).
  bool bias = false;
  // Row strides as stored, GemmShape's lda and ldc (0: dense). Set for the head's calls, whose
  // logits rows are padded (models::logits_row_stride): C's in its forward GEMM, A's in its dgrad
  // and wgrad; for the cross-entropy, ldc is the logits rows' stride.
  int64_t lda = 0, ldc = 0;
  bool same_shape(const RooflineCall& o) const {
    return op == o.op && m == o.m && n == o.n && k == o.k && trans_a == o.trans_a && trans_b == o.trans_b &&
           bf16_out == o.bf16_out && adds_residual == o.adds_residual && bias == o.bias && lda == o.lda &&
           ldc == o.ldc;
  }
};

struct RooflineRow {
  std::string op;
  int64_t calls = 0;          // in one optimizer step
  double flops = 0.0;         // all calls
  double bytes_built = 0.0;   // as built: fp32 activations (bf16 where bf16_activations, without FP8)
  double bytes_design = 0.0;  // bf16 activations
  bool fp8 = false;           // a GEMM at the FP8 rate
  std::vector<RooflineCall> shapes;  // the calls by shape: their counts add up to `calls`
};

struct RooflineInputs {
  models::ModelConfig model;
  int64_t micro_batch = 1, seq = 1, grad_accum = 1;
  bool recompute = false;  // activation_checkpointing per_block: each block's forward again in backward
  bool fp8 = false;        // the blocks' linear layers in FP8 (the head stays bf16)
  // model.loss_chunk_rows: the head and the loss run over this many rows at a time (0: the whole
  // micro-batch); each chunk re-reads the head's weight and its fp32 gradient.
  int64_t loss_chunk_rows = 0;
  // As built, the activations ModelOptions::bf16_activations names (each norm's output, qkv,
  // attention's output, the MLP's in-projection and activation, and their gradients and the
  // residual stream's) are stored as bf16 unless the blocks run FP8, which quantizes from fp32
  // (models::stored_act_dtype).
  bool acts_bf16() const { return !fp8; }
  // Bytes the optimizer step reads and writes in all (AdamW's state, master, weights, gradients).
  double optimizer_bytes = 0.0;
  // Gradient bookkeeping (MemoryEstimate's figures): per micro-batch, what of the accumulators is
  // zeroed and what is kept from them (copied at the first micro-batch, added at the later ones,
  // or narrowed to bf16); what of the gradients kept in place is zeroed once a step.
  int64_t grad_zeroed_elems = 0, grad_kept_from_accumulator_elems = 0, grad_zeroed_once_elems = 0;
  int64_t kept_grad_bytes = 4;  // per element: 4 (fp32 sums) or 2 (one backward's, bf16)
  bool embedding_rows_once = false;  // the embedding's rows summed per distinct token, then added
  bool embedding_rows_set_aside = false;  // a tied embedding's token rows and positions set aside, then added back
};

struct RooflineStep {
  RooflineInputs inputs;
  std::vector<RooflineRow> rows;
  double model_flops = 0.0;  // models::training_flops_per_step x grad_accum: MFU's numerator
};

RooflineStep roofline_step(const RooflineInputs& in);

// A recipe's step as the roofline takes it: its shapes, recomputation, FP8, loss chunks, and the
// optimizer's bytes from the plan's estimate of the busiest rank.
struct MemoryEstimate;
RooflineInputs roofline_inputs(const recipe::RunConfig& config, const models::ModelConfig& model,
                               const MemoryEstimate& estimate);

// The bytes one optimizer step moves on the plan's peak rank: its owned bf16 weights read and
// written, their gradients read, the master and AdamW's state read and written.
struct MemoryEstimate;
double optimizer_step_bytes(const MemoryEstimate& estimate);

// The row's time at the device's rates, with the design's bytes or as built.
double roofline_seconds(const RooflineRow& row, const RooflineDevice& device, bool design);
double roofline_step_seconds(const RooflineStep& step, const RooflineDevice& device, bool design);

}  // namespace farthing::train
