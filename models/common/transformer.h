// transformer.h — a decoder-only transformer with explicit forward and backward, written
// like the maths (llm.c style), over a TransformerSpec from models/llama or models/gpt2.
//
// Parameters and gradients live in the spec's flat layout (global offsets): in training they
// come a unit at a time from a UnitStorage (the trainer's dist::ParamStore); without one (tests,
// generation) the model owns whole fp32 buffers. Compute modes: kF32 (reference) and kBF16
// (GEMM operands bf16 with fp32 accumulation: over a storage the weights are its bf16 weights
// read in place, else a bf16 working copy refreshed per step; activations rounded to nearest
// even, the GEMMs' inputs, qkv, the MLP's in-projection and the gradients of all four stored so
// (bf16_activations); norms,
// softmax, attention's maths and the loss stay fp32). The loss is a fused, chunked
// cross-entropy: logits exist only for loss_chunk_rows rows at a time, and each chunk's
// gradient flows into the head and the final norm before the next chunk is computed.
// Activation checkpointing per block keeps only the block inputs and recomputes the rest
// in backward with the same code, so gradients are bitwise those of the stored run.
// Every op runs through the backend's NnOps (framework/backend/nn_ops.h); the model includes
// no kernel directly. What it allocates is stated for `farthing plan`: buffer_bytes (the
// constructor), unit_buffer_bytes (each unit acquired) and unit_schedule (which units a step holds
// together). Relies on: framework/backend/nn_ops.h, framework/core/memory.h,
// framework/dist/unit_storage.h. Tested by: tests/models/test_model_goldens.cpp,
// test_gradcheck.cpp, test_model_modes.cpp, test_vocab_padding.cpp (the logits rows' padding),
// tests/dist/test_param_store.cpp (over the store),
// tests/train/plan/test_memory_estimate.cpp (the sizes and the schedule, against real training steps).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "framework/backend/buffer.h"
#include "framework/backend/nn_ops.h"
#include "framework/core/memory.h"
#include "framework/dist/unit_storage.h"
#include "models/common/block_forward.h"
#include "models/common/fp4_linears.h"
#include "models/common/fp8_linears.h"
#include "models/common/transformer_spec.h"

namespace farthing::models {

// NOTE: kF16 rounds GEMM operands to fp16 (range 6e-5..65504): activations and weights
// fit, but small gradients underflow without loss scaling (docs/numerics.md §5), which belongs to
// the trainer (scale the loss's gradient by passing targets through a scaled loss) — not done yet.
enum class ComputeMode : uint8_t { kF32, kBF16, kF16 };
enum class Checkpointing : uint8_t { kNone, kPerBlock };

// Parameters and gradients that are not whole on this process come unit by unit through a
// UnitStorage (framework/dist/unit_storage.h): the trainer's ParamStore at every ZeRO stage.
using dist::UnitStorage;

struct ModelOptions {
  ComputeMode compute = ComputeMode::kF32;
  Checkpointing checkpointing = Checkpointing::kNone;
  int64_t loss_chunk_rows = 64;  // rows of logits alive at once
  // nullptr: the model owns full fp32 parameter and gradient buffers (params(), grads()).
  // Otherwise neither exists; units come and go through the storage (not owned).
  UnitStorage* unit_storage = nullptr;
  // The ops the model runs on (not owned); nullptr: the CPU backend's, backend_for(cpu).nn().
  NnOps* ops = nullptr;
  // FP8 linear layers (fp8_linears.h) on top of kBF16 compute; off without a recipe.
  Fp8Options fp8;
  // FP4 linear layers (fp4_linears.h) on top of kBF16 compute; off without a recipe.
  Fp4Options fp4;
  // Under kBF16 compute without FP8 or FP4 layers, store every activation and gradient but the
  // logits as bf16 (framework/backend/act_ref.h), each rounded once to nearest even:
  // - the residual stream: the embedding's output, rounded once, and each residual branch's sum,
  //   which the out and down projections' GEMMs form onto the stream read as their C and round
  //   once (NnOps::matmul_bf16_out's add); the norms read it widened;
  // - the GEMMs' inputs (each norm's output, attention's output, the MLP's activation): the bits
  //   the GEMMs read narrowed, at half the bytes and with no narrowing pass. Attention's backward
  //   reads its output rounded, as cuDNN's does (NnOps::attention_backward);
  // - two GEMM outputs, written as bf16 by their GEMMs (NnOps::matmul_bf16_out, a bias rounded to
  //   bf16 added before the rounding): qkv, which RoPE rotates in place (rounding again) and attention and
  //   its backward read; and the MLP's in-projection (gate|up, or GELU's input), which SwiGLU or
  //   GELU and their backwards read;
  // - the MLP's two gradients in backward: d(act), written by its GEMM as bf16, and
  //   d(in-projection), rounded once as SwiGLU's or GELU's backward writes it, which the
  //   in-projection's GEMMs read in place (and GPT-2's bias gradient sums, widened);
  // - attention's two gradients: d(att), written by its GEMM as bf16, which attention's backward
  //   reads, and dqkv, rounded once as attention's backward writes it and again by the inverse
  //   RoPE, which the projection's GEMMs read in place (and a qkv bias gradient sums, widened);
  // - the residual stream's gradient and the norms' output gradients: each norm's d(out) is
  //   written as bf16 by the GEMMs that read the norm's output (their dgrad, the head's chunk by
  //   chunk), and each norm's backward adds into the residual stream's gradient, rounding once,
  //   which the residual branches' GEMMs (the out and down projections) read in place and the
  //   embedding's backward sums, widened;
  // - the logits (a chunk of rows at a time), written by the head's GEMM as bf16, which the loss
  //   reads widened and turns into their gradient in place, rounding once, for the head's GEMMs
  //   to read (as Hugging Face's bf16 models compute the loss: from bf16 logits, in fp32).
  // false keeps them fp32 and narrows before each GEMM (tests compare the two). FP8 and FP4
  // layers quantize from fp32 activations and write fp32, so they keep fp32.
  bool bf16_activations = true;
};

// The GEMM operands' type under a compute mode: kF32, kBF16 or kF16.
GemmDtype gemm_dtype_of(ComputeMode mode);
// Attention's (AttentionShape::dtype): bf16 compute lets the backend run it in bf16 (cuDNN on a
// GPU); fp16 and fp32 keep it fp32.
GemmDtype attention_dtype_of(ComputeMode mode);
// The element type of the activations bf16_activations names, under these options: kBF16 or kF32.
GemmDtype stored_act_dtype(const ModelOptions& options);

// The row stride of the logits the head's GEMM writes and the loss reads: the vocabulary rounded
// up to a multiple of kLogitsRowAlign elements, so that every row starts aligned for the head's
// GEMMs and the loss's vector loads (GPT-2's 50,257 logits a row are laid out 50,304 apart).
// Only the logits buffer is padded: the head's weight and gradient, the optimizer, checkpoints
// and exports keep the true vocabulary, and the pad columns are never computed, never read by
// the loss and never fed to a GEMM (docs/design.md §2, the head and the loss).
inline constexpr int64_t kLogitsRowAlign = 128;
int64_t logits_row_stride(int64_t vocab);

// The elements of a unit's 1-D tensors (norm weights, biases): what a model under bf16 compute
// widens to fp32 when it acquires the unit (everything else is read as bf16).
int64_t unit_vector_elems(const FlatLayout& layout, int unit);

// The buffers a Transformer allocates (its constructor), in bytes: `farthing plan` adds them up.
struct TransformerBufferBytes {
  int64_t params = 0;          // fp32 parameters, without a UnitStorage (kWeights)
  int64_t grads = 0;           // fp32 gradients, without a UnitStorage (kGrads)
  int64_t working = 0;         // bf16/fp16 GEMM copy, without a UnitStorage; 0 at fp32 (kWeights)
  int64_t activations = 0;     // residual stream and each stored block's activations (kActivations)
  int64_t scratch = 0;         // backward scratch, attention scratch, one logits chunk (kActivations)
  int64_t narrow_scratch = 0;  // two bf16/fp16 GEMM operand slots; 0 at fp32 (kActivations)
  int64_t inputs = 0;          // a micro-batch's tokens and targets, and the RoPE tables, on the device (kActivations)
  int64_t fp8 = 0;             // FP8 or FP4 operand slots and GEMM workspace (kActivations; fp8_linears.h,
                               // fp4_linears.h)
  int64_t activation_total() const { return activations + scratch + narrow_scratch + inputs + fp8; }
};

// What acquire_unit allocates itself for one unit over a UnitStorage, beside what the storage
// hands it, and which storage call it makes (held until release_unit, kWeights); and how its
// backward writes the unit's gradients (acquire_grads' `adds`), with the scratch that takes.
struct UnitBufferBytes {
  bool reads_bf16 = false;  // acquire_bf16_params (bf16 compute), else acquire_params
  int64_t weights = 0;      // the 1-D tensors widened to fp32 (bf16), or the 16-bit GEMM copy (fp16),
                            // and under FP8 the unit's quantized weights
  dist::UnitStorage::GradAdds grad_adds = dist::UnitStorage::GradAdds::kSeveral;
  // kOnce: the 1-D tensors' fp32 gradient sums, or the embedding's rows summed per distinct
  // token (M x C fp32), from acquire_grads to unit_grads_done (kGrads).
  int64_t grad_scratch = 0;
  // kOnce: the elements backward zeroes itself where it overwrites the unit's gradients
  // (UnitStorage::GradWrite::kOverwrite): the alignment gaps between its tensors, and an
  // embedding's table (a token the micro-batch lacks has gradient 0).
  int64_t overwrite_zeroed_elems = 0;
};

// Which units a training step over a UnitStorage holds at once (forward_backward_sum): the
// model's statement of its schedule, for `farthing plan`, which adds up what the storage and the
// model hold for each unit (ParamStore::planned_unit_bytes, unit_buffer_bytes) over these turns.
//   - The embedding unit is acquired first and stays in use to the end of backward (a tied head
//     reads it last).
//   - Beside it one other unit is in use at a time, taking turns: every block in forward, the
//     head from the final norm through the loss to its backward, every block again in backward.
//   - Once a turn's unit is acquired, the gather of the next turn's unit starts (prefetch), so it
//     is in flight beside that turn.
//   - In backward a turn accumulates its unit's gradients and hands them over before the unit
//     is released. The loss sends the output head's gradients to its weight's unit: the head's
//     own, or a tied head's embedding, whose gradients then stay beside every later turn.
//   - The last turn hands over the embedding's gradients; then backward_done, after which no
//     unit is in use. A handed-over unit's gradients may stay in the storage beside later turns
//     while they are reduced over ranks (ParamStoreOptions::reduce_bucket_bytes): the storage's
//     rule, which `farthing plan` applies over these turns.
struct UnitTurn {
  int unit = 0;
  bool backward = false;        // acquired in backward (else forward)
  bool acquires = true;         // false: the embedding's last turn (it is in use already)
  bool gathered_ahead = true;   // its gather started in the turn before (not the embedding's first)
  int prefetches = -1;          // the unit whose gather starts once this one is acquired, or -1
  int loss_grads = -1;          // the unit whose gradients the loss starts in this turn, or -1
  bool hands_over_grads = false;  // its gradients accumulate (unless already) and are handed over
};
struct UnitSchedule {
  int embedding = 0;            // in use from the first turn to the last
  std::vector<UnitTurn> turns;  // in order
};

// Private BlockHooks: block_forward (block_forward.h) reads this model's weights through them.
class Transformer : private BlockHooks {
 public:
  // What the constructor with these arguments allocates, computed with the same carving.
  static TransformerBufferBytes buffer_bytes(const TransformerSpec& spec, int64_t batch, int64_t seq,
                                             const ModelOptions& options);
  // Over a UnitStorage: what acquire_unit allocates for `unit`, and the units a training step
  // holds together (forward_trunk, loss_and_head and backward_from_head keep to it).
  // rows: batch · seq, the rows of one micro-batch.
  static UnitBufferBytes unit_buffer_bytes(const TransformerSpec& spec, int unit, const ModelOptions& options,
                                           int64_t rows);
  // How backward writes `unit`'s gradients (UnitStorage::GradAdds): kOnce where every element
  // gets one addition per backward, its whole gradient formed first — a block's and an untied
  // head's weight matrices through NnOps::matmul_add_product (the head only when its loss runs
  // in one chunk), their 1-D tensors' row sums in a scratch added once, and an untied embedding
  // without learned positions, its rows summed per distinct token first (embedding_backward_once).
  // A tied embedding is kOnce too where the head's loss runs in one chunk, and so are learned
  // positions: the micro-batch's token rows and the positions are set aside while it adds in
  // place (set_aside_embedding_rows). kSeveral for a head whose loss runs in several chunks (an
  // embedding tied to it), and units with FP8 or FP4 layers (their GEMMs accumulate as they go).
  static dist::UnitStorage::GradAdds unit_grad_adds(const TransformerSpec& spec, int unit, const ModelOptions& options,
                                                    int64_t rows);
  static UnitSchedule unit_schedule(const TransformerSpec& spec);
  // Allocates parameters, gradients and activations for batches of (batch, seq) tokens.
  Transformer(TransformerSpec spec, int64_t batch, int64_t seq, ModelOptions options = {});

  const TransformerSpec& spec() const { return spec_; }
  const ModelConfig& config() const { return spec_.config; }
  const FlatLayout& layout() const { return spec_.layout; }
  int64_t batch() const { return batch_; }
  int64_t seq() const { return seq_; }
  // The full buffers (layout.total_elems()); nullptr with a UnitStorage.
  float* params() const { return static_cast<float*>(params_.data()); }
  float* grads() const { return static_cast<float*>(grads_.data()); }
  float* param(const std::string& name) const { return params() + layout().find(name).offset_elems; }
  float* grad(const std::string& name) const { return grads() + layout().find(name).offset_elems; }

  // Weights ~ N(0, std) keyed by (seed, global index); norm weights 1, biases 0.
  void init_weights(uint64_t seed, float std = 0.02f);
  // The same values into any flat buffer of spec's layout (total_elems() floats).
  static void init_weights(const TransformerSpec& spec, float* flat, uint64_t seed, float std = 0.02f);
  // Global elements [begin, end) of them into p (p[g - begin] is element g): a unit at a time.
  static void init_weights_range(const TransformerSpec& spec, float* p, int64_t begin, int64_t end, uint64_t seed,
                                 float std = 0.02f);
  void zero_grads();

  // Documents packed into the micro-batch's sequences: doc_start (host, batch x seq) gives each
  // token the index within its sequence of its document's first token. The passes that follow
  // keep documents apart: attention sees only the keys of the query's own document, and RoPE and
  // learned positions count from the document's start (kernels/numerics/op_shapes.h). Checked
  // (each row starts a document or continues the one before) and copied to the ops' memory.
  // nullptr: each sequence is one document (the default).
  void set_document_starts(const int32_t* doc_start);

  // tokens, targets: host arrays (batch, seq), checked and copied to the ops' memory; targets < 0
  // (e.g. -100) are ignored. Returns the mean
  // loss over the counted targets and adds its gradient to grads().
  float forward_backward(const int32_t* tokens, const int32_t* targets);
  // The same loss, no gradient.
  float forward_loss(const int32_t* tokens, const int32_t* targets);

  // The trainer's form: the sum of the token losses and how many targets counted, adding the
  // gradient of (sum * loss_grad_scale) to grads(). With loss_grad_scale = 1 / (counted targets
  // of the whole global batch) every micro-batch and rank contributes to one global mean, so
  // the result does not depend on how the batch is split; fp16 loss scaling multiplies it in.
  struct LossSum {
    double sum = 0.0;
    int64_t counted = 0;
  };
  // Adds the micro-batch's loss sum to *loss_sum, a double in the ops' memory (so the host need
  // not wait for it: the trainer reads its step's sums once); returns the counted targets.
  int64_t forward_backward_sum(const int32_t* tokens, const int32_t* targets, float loss_grad_scale,
                               double* loss_sum);
  // The same, the loss sum read back (a host wait).
  LossSum forward_backward_sum(const int32_t* tokens, const int32_t* targets, float loss_grad_scale);
  LossSum forward_loss_sum(const int32_t* tokens, const int32_t* targets);
  // Full logits (batch, seq, vocab) for small shapes (tests, scoring).
  void forward_logits(const int32_t* tokens, float* logits);

  // FP8 delayed scaling: hands the amaxes that training passes gathered (in the ops' memory)
  // to the history, once a step (Fp8Linears::collect_step_amaxes); a no-op otherwise.
  // FP4: the step whose keys (Hadamard signs, stochastic rounding) the next GEMMs use; the
  // trainer sets it before each step's micro-batches. A no-op without FP4 layers.
  void set_fp4_step(uint32_t step) {
    if (fp4_) fp4_->set_step(step);
  }
  void collect_fp8_amaxes() {
    if (fp8_) fp8_->collect_step_amaxes();
  }

  // Model FLOPs of one forward+backward over batch*seq tokens (GEMMs and attention).
  double flops_per_step() const;

 private:
  struct Carver;
  struct Carved {  // where carve() put each array
    ActRef resid;
    std::vector<BlockActs> layer_acts;
    ActRef nf;
    float *nf_mean = nullptr, *nf_rstd = nullptr;
    float* att_scratch = nullptr;
    ActRef logits, dres, dn, dqkv, datt, dfc, dact;
  };
  static void carve(const ModelConfig& c, int64_t batch, int64_t seq, const ModelOptions& options, Carver& acts,
                    Carver& scratch, Carved& out);
  static std::array<int64_t, 2> narrow_slot_elems(const ModelConfig& c, int64_t batch, int64_t seq,
                                                  const ModelOptions& options);
  void refresh_working_weights();
  const void* weight_ptr(int64_t offset) const;
  // Parameter / gradient element at a global offset, from the full buffers or the unit's.
  const float* P(int64_t offset) const;
  float* G(int64_t offset);
  int unit_of(int64_t offset) const;
  int block_unit(int64_t layer) const { return unit_of(spec_.blocks[size_t(layer)].qkv_w); }
  // UnitStorage mode (no-ops otherwise): bring a unit in / send it away, hand over its grads.
  void acquire_unit(int unit);
  void release_unit(int unit);
  void unit_grads_done(int unit);
  void release_all_units();
  void embed(const int32_t* tokens);
  void scale_embedding(ActRef x);
  void block_forward(int64_t layer, const BlockActs& a, ActRef x, ActRef y);
  // BlockHooks: the block's 1-D tensors, its projections (FP8, 16-bit or fp32 operands) and
  // attention within each sequence of the micro-batch.
  const float* vector(int64_t offset) override { return P(offset); }
  void linear(ActRef y, ActRef x, int64_t w, int64_t bias, int64_t m, int64_t k, int64_t n,
              WeightOrientation orient, ActRef residual) override {
    linear_forward(y, x, w, bias, m, k, n, orient, residual);
  }
  void attention(int64_t layer, const BlockActs& a, int64_t rows) override;
  const float* norm_gain(NormSlot slot, int64_t offset, int64_t n) override;
  AttentionShape attention_shape(int64_t layer) const;
  RowPositions row_positions() const { return RowPositions(seq_, documents_ ? doc_start_ : nullptr); }
  void block_backward(int64_t layer, const BlockActs& a, ActRef x);
  void final_norm();
  // Embed, blocks, final norm (no grad); backward_follows: prefetch the last block for it.
  void forward_trunk(const int32_t* tokens, bool backward_follows = false);
  void prefetch_unit(int unit);
  void norm_forward(ActRef out, float* mean, float* rstd, ActRef x, int64_t w, int64_t b, NormSlot slot);
  void norm_backward(ActRef dx, ActRef dout, ActRef x, int64_t w, int64_t b, const float* mean, const float* rstd,
                     NormSlot slot);
  // Gemma 3's post-norm (on attention's or the MLP's output `out`, which the residual adds):
  // dout_pre (the scratch dn_) = d norm(out) / d out applied to dres_, and the norm's weight gradient.
  void post_norm_backward(ActRef dout_pre, ActRef out, const float* rstd, int64_t w, NormSlot slot);
  // The output head over rows r0 .. r0 + rows - 1 of the final norm's output: logits (rows, V),
  // rows logits_row_stride(V) apart, = nf Whead^T; and backward, from their gradient in place,
  // dn (rows, C) = dlogits Whead and dWhead += dlogits^T nf, each GEMM over the V true columns.
  void head_forward(int64_t r0, int64_t rows);
  void head_backward(int64_t r0, int64_t rows);
  // y(M,N) = residual + x(M,K) W^T (+ bias); residual: none, y itself or another array (BlockHooks::linear)
  void linear_forward(ActRef y, ActRef x, int64_t w, int64_t bias, int64_t m, int64_t k,
                      int64_t n, WeightOrientation orient, ActRef residual);
  // dx(M,K) = dy W (overwrite; a bf16 dx is the fp32 product rounded once); dW += dy^T x;
  // dbias += sum dy
  void linear_backward(ActRef dx, int64_t w, int64_t bias, ActRef dy, ActRef x,
                       int64_t m, int64_t k, int64_t n, WeightOrientation orient);
  // x as the compute's GEMM operand: in place when stored so (fp32 compute, or bf16 storage),
  // else narrowed into scratch slot `slot`.
  const void* gemm_operand(ActRef x, int64_t count, int slot);
  const void* gemm_operand(const float* x, int64_t count, int slot);
  // Sum of the token losses over the counted targets; with want_grad, each counted row's
  // logit gradient is scaled by loss_grad_scale (< 0: 1 / counted, the local mean).
  // The loss sum is added to *loss_sum (the ops' memory; unused without targets); returns the
  // counted targets. loss_and_head_read: the local mean's gradient, the sum into own_loss_sum_
  // and read back.
  int64_t loss_and_head(const int32_t* targets, bool want_grad, float* logits_out, double* loss_sum,
                        float loss_grad_scale = -1.0f);
  LossSum loss_and_head_read(const int32_t* targets, bool want_grad);
  // The chunk's `rows` rows of logits, their V true columns, to the caller's dense (rows, V) array.
  void copy_logits_out(float* dst, int64_t rows);
  void zero_own_loss_sum();
  double read_own_loss_sum();
  void backward_from_head();
  BlockActs acts_for(int64_t layer);
  // The 4-byte elements of inputs_: the loss sum (a double), tokens, targets, document starts,
  // each row's slot among the distinct tokens and the distinct tokens (M each), then cos and
  // sin when the model rotates (twice with sliding layers: their own tables), then the norm
  // gains' ones and scratch (gain_width).
  static int64_t gain_width(const ModelConfig& c);
  static int64_t input_elems(const ModelConfig& c, int64_t batch, int64_t seq);
  // Copies M host ids into the device array `to` (tokens_ or targets_).
  void upload_ids(int32_t* to, const int32_t* from);

  TransformerSpec spec_;
  int64_t batch_, seq_;
  ModelOptions options_;
  NnOps& ops_;
  Buffer params_, grads_, working_, acts_, scratch_, bf16_scratch_;
  // In the ops' memory (inputs_): a loss sum for the reading forms, the micro-batch's tokens and
  // targets, copied there from the caller's host arrays once checked, and the RoPE tables
  // (seq, head_dim / 2).
  Buffer inputs_;
  double* own_loss_sum_ = nullptr;
  int32_t *tokens_ = nullptr, *targets_ = nullptr;
  int32_t* doc_start_ = nullptr;  // set_document_starts' array, read while documents_
  // A kOnce embedding: each row's slot (its token's first occurrence in the micro-batch, counted
  // among distinct tokens) and the distinct tokens in slot order (the first distinct_tokens_).
  int32_t *token_slots_ = nullptr, *slot_tokens_ = nullptr;
  int64_t distinct_tokens_ = 0;
  bool embedding_once() const;
  void embedding_backward_once();
  // A kOnce embedding that a tied head's GEMM or learned positions add to besides its rows: where
  // backward adds in place, the micro-batch's token rows and the positions are set aside (M x C
  // and the position table, embedding_set_aside_) from the unit's acquisition until its rows are in.
  bool embedding_rows_set_aside() const;
  void set_aside_embedding_rows(const dist::UnitStorage::UnitGrads& grads);
  void restore_embedding_rows();
  Buffer embedding_set_aside_;
  int64_t documents_ = 0;          // documents in the micro-batch's sequences; 0: one a sequence
  int64_t longest_document_ = 0;   // rows of the longest of them
  float *rope_cos_ = nullptr, *rope_sin_ = nullptr;
  float *local_cos_ = nullptr, *local_sin_ = nullptr;  // the sliding layers' tables (Gemma 3), else null
  // Under RMSNorm gains 1 + w (Gemma 3): a row of ones and kNormSlots gains, gain_width_ floats each.
  float *norm_ones_ = nullptr, *norm_gains_ = nullptr;
  int64_t gain_width_ = 0;
  // Carved from acts_: residual stream (L+1) x (BT, C), stored as the activations are; per-layer
  // (or one) BlockActs; final norm.
  ActRef resid_;
  std::vector<BlockActs> layer_acts_;
  ActRef nf_;
  float *nf_mean_ = nullptr, *nf_rstd_ = nullptr;
  // Carved from scratch_.
  float* att_scratch_ = nullptr;
  // A chunk of logits (rows, V), rows logits_stride_ apart (logits_row_stride), a GEMM output
  // stored as the activations are; the loss turns it into its gradient in place.
  ActRef logits_;
  int64_t logits_stride_ = 0;
  // The gradients of the residual stream (dres_: dL/dy on entering a block, dL/dx on leaving it),
  // of a norm's output (dn_), of qkv, attention's output, the MLP's in-projection and its
  // activation: fp32, or bf16 under bf16 activations.
  ActRef dres_, dn_, dqkv_, datt_, dfc_, dact_;
  uint16_t* bf16_slots_[2] = {nullptr, nullptr};
  std::unique_ptr<Fp8Linears> fp8_;  // FP8 projections, or null
  std::unique_ptr<Fp4Linears> fp4_;  // FP4 projections, or null
  std::array<int64_t, 2> bf16_slot_elems_{};
  // UnitStorage mode: per unit, its acquired parameters, 16-bit GEMM copy and gradients; under
  // bf16 compute instead its bf16 weights (the storage's) and its 1-D tensors widened to fp32.
  std::vector<const float*> unit_params_;
  std::vector<Buffer> unit_working_;
  std::vector<const uint16_t*> unit_bf16_;
  std::vector<Buffer> unit_vectors_;
  std::vector<std::vector<const ParamEntry*>> unit_vector_entries_;  // per unit: its 1-D tensors, in order
  std::vector<float*> unit_grads_;
  std::vector<dist::UnitStorage::GradAdds> unit_grad_adds_;
  std::vector<Buffer> unit_grad_vectors_;  // kOnce units: their 1-D tensors' gradients of this backward
  // Per unit: how this backward puts its gradients in (acquire_grads' answer), and the alignment
  // gaps between its tensors ({offset in the unit, elements}), zeroed where it overwrites.
  std::vector<dist::UnitStorage::GradWrite> unit_grad_write_;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> unit_grad_gaps_;
  // dW (+)= the product: where w's unit is kOnce, written (beta 0) or added whole
  // (matmul_add_product). With a bias (offset >= 0), its gradient comes with the GEMM
  // (NnOps::matmul_bias_grad): the column sums of dy, the operand on `bias_side`.
  void weight_grad_gemm(int64_t w, GemmDtype dtype, const GemmShape& shape, const void* a, const void* b,
                        int64_t bias = -1, BiasGradOf bias_side = BiasGradOf::kA, ActRef dy = ActRef());
};


}  // namespace farthing::models
