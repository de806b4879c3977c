// roofline.cpp — see roofline.h. The ops and their operands follow models/common/transformer.cpp
// (linear_forward / linear_backward, the blocks' norms, attention and activations); byte counts
// are each operand read or written once.
#include "train/plan/roofline.h"

#include <algorithm>
#include <string>

#include "models/common/transformer.h"
#include "train/plan/memory_estimate.h"

namespace farthing::train {

namespace {

constexpr double kFp32 = 4.0, kBf16 = 2.0;

// Rows under construction, summed by op name (the same op of every layer is one row).
class RowSet {
 public:
  explicit RowSet(std::vector<RooflineRow>& rows) : rows_(rows) {}
  // calls of `shape` (its count set here), each doing `flops` and moving `built` / `design` bytes.
  void add(const std::string& op, int64_t calls, RooflineCall shape, double flops, double built, double design,
           bool fp8 = false) {
    if (calls == 0) return;
    auto it = std::find_if(rows_.begin(), rows_.end(), [&](const RooflineRow& r) { return r.op == op; });
    if (it == rows_.end()) {
      rows_.push_back({op, 0, 0.0, 0.0, 0.0, fp8, {}});
      it = rows_.end() - 1;
    }
    it->calls += calls;
    it->flops += double(calls) * flops;
    it->bytes_built += double(calls) * built;
    it->bytes_design += double(calls) * design;
    shape.count = calls;
    auto same = std::find_if(it->shapes.begin(), it->shapes.end(), [&](const RooflineCall& c) { return c.same_shape(shape); });
    if (same == it->shapes.end()) {
      it->shapes.push_back(shape);
    } else {
      same->count += calls;
    }
  }
  // An elementwise or row-wise op moving `elems` activation elements (each read or written once):
  // 4 bytes each as built, 2 in the design.
  void activations(const std::string& op, int64_t calls, const RooflineCall& shape, double elems, double flops = 0.0) {
    add(op, calls, shape, flops, kFp32 * elems, kBf16 * elems);
  }

 private:
  std::vector<RooflineRow>& rows_;
};

}  // namespace

const RooflineDevice* roofline_device(const std::string& name) {
  // Datasheets: NVIDIA H100 SXM5 and H200 SXM (dense BF16 989.4 TFLOP/s, FP8 1,978.9; HBM3 3.35
  // TB/s, HBM3e 4.8 TB/s); GeForce RTX 4090 (BF16 with fp32 accumulation 165.2, FP8 330.3;
  // GDDR6X 1,008 GB/s).
  static const RooflineDevice kDevices[] = {
      {"h100", 989.4e12, 1978.9e12, 3.35e12},
      {"h200", 989.4e12, 1978.9e12, 4.8e12},
      {"rtx4090", 165.2e12, 330.3e12, 1.008e12},
  };
  for (const RooflineDevice& d : kDevices) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

RooflineStep roofline_step(const RooflineInputs& in) {
  const models::ModelConfig& c = in.model;
  RooflineStep step;
  step.inputs = in;
  step.model_flops = models::training_flops_per_step(c, in.micro_batch, in.seq) * double(in.grad_accum);
  RowSet rows(step.rows);

  const bool gpt2 = c.family == models::ModelFamily::kGpt2;
  const double n = double(in.micro_batch * in.seq), C = double(c.dim), H = double(c.hidden_dim);
  const double Sq = double(c.qkv_dim()), d = double(c.head_dim());
  const double A = double(c.attn_dim());  // attention's output width
  const double heads = double(c.n_heads), kv_heads = double(c.n_kv_heads), T = double(in.seq);
  const double F = gpt2 ? H : 2 * H;  // the up projection's width (gate and up together for SwiGLU)
  const int64_t micro = in.grad_accum, L = c.n_layers * micro;
  const int64_t block_forwards = L * (in.recompute ? 2 : 1);
  const std::string norm = gpt2 ? "layernorm" : "rmsnorm";
  using Op = RooflineOp;
  const int64_t tokens = in.micro_batch * in.seq;
  // A call's shape: op, then m, n, k as RooflineOp says for it.
  const auto call = [](Op op, int64_t m, int64_t n_ = 0, int64_t k = 0, bool ta = false, bool tb = false) {
    return RooflineCall{op, 0, m, n_, k, ta, tb};
  };
  const RooflineCall row_norm = call(Op::kNormForward, tokens, c.dim), row_norm_bwd = call(Op::kNormBackward, tokens, c.dim);

  const bool acts_bf16 = in.acts_bf16();
  const double act_bytes = acts_bf16 ? kBf16 : kFp32;

  // A linear layer y (n, out) = x (n, in) W^T, forward `fwd_calls` times and backward L times.
  // As built: x, y, dy (y's gradient, which dgrad and wgrad read) and dx (x's gradient, which
  // dgrad writes) are fp32 unless `stored` says bf16. An fp32 x or dy is narrowed to bf16 first
  // (read 4, write 2 bytes each). A bias is added in the forward GEMM's epilogue (read with the
  // GEMM: bf16 for a bf16 y, fp32 otherwise) and its gradient written by the weight gradient's
  // (fp32, then added to the kept gradient: written, read, and the gradient read and written),
  // as CUDA runs them (NnOps::matmul_bias, matmul_bf16_out, matmul_bias_grad); under FP8 the bias
  // add and the bias backward are their own kernels. dW is accumulated in fp32 (read + write).
  // `residual`: y is the residual stream, the product added to its input (the out and down
  // projections). Stored as bf16, the GEMM reads that input as its C and writes y as D; in fp32,
  // y is a copy of the input that the GEMM accumulates onto (the "residual add" row). Design:
  // bf16 in and out, no narrowing, the residual read as the GEMM's C. The GEMMs' shapes are
  // linear_forward / linear_backward's with W stored (out, in). `out_stride` (0: out_dim): the row
  // stride of y and dy as stored, the head's padded logits rows (models::logits_row_stride), whose
  // traffic is counted at that stride; the GEMMs still run over out_dim.
  struct Bf16Arrays {
    bool x = false, y = false, dy = false, dx = false, residual = false;
  };
  const auto linear = [&](const std::string& name, int64_t fwd_calls, int64_t bwd_calls, int64_t out_dim,
                          int64_t in_dim, bool fp8, bool bias, Bf16Arrays stored, int64_t m_rows,
                          int64_t out_stride = 0) {
    const double out = double(out_dim), inp = double(in_dim), n = double(m_rows);
    const double out_row = double(out_stride > 0 ? out_stride : out_dim);  // y's and dy's elements a row
    const double flops = 2.0 * n * out * inp, weight = kBf16 * out * inp, dweight = 2.0 * kFp32 * out * inp;
    const double y_bytes = stored.y ? kBf16 : kFp32, dx_bytes = stored.dx ? kBf16 : kFp32;
    const double c_read = stored.residual ? y_bytes * n * out : 0.0;  // the residual input, as the GEMM's C
    const bool epilogue_bias = bias && !fp8;
    // The bias the epilogue reads (y's type), and the bias gradient it writes, then added.
    const double bias_read = epilogue_bias ? y_bytes * out : 0.0, bias_design = epilogue_bias ? kBf16 * out : 0.0;
    const double bias_grad = epilogue_bias ? 4.0 * kFp32 * out : 0.0;
    RooflineCall forward = call(Op::kGemm, m_rows, out_dim, in_dim, false, true);
    forward.bf16_out = stored.y;
    forward.adds_residual = forward.bf16_out && stored.residual;
    forward.bias = epilogue_bias;
    forward.ldc = out_stride;
    rows.add(name + " fwd", fwd_calls, forward, flops,
             kBf16 * n * inp + weight + y_bytes * n * out_row + c_read + bias_read,
             kBf16 * n * inp + weight + kBf16 * n * out_row + (stored.residual ? kBf16 * n * out : 0.0) + bias_design,
             fp8);
    if (stored.residual && !stored.y) {  // y = a copy of the residual input, which the GEMM then reads as C
      rows.add("residual add", fwd_calls, call(Op::kResidualAdd, m_rows * out_dim), 0.0, 2.0 * kFp32 * n * out, 0.0);
    }
    RooflineCall dgrad = call(Op::kGemm, m_rows, in_dim, out_dim, false, false);
    dgrad.bf16_out = stored.dx;
    dgrad.lda = out_stride;
    rows.add(name + " dgrad", bwd_calls, dgrad, flops,
             kBf16 * n * out_row + weight + dx_bytes * n * inp, kBf16 * n * out_row + weight + kBf16 * n * inp, fp8);
    RooflineCall wgrad = call(Op::kGemm, out_dim, in_dim, m_rows, true, false);
    wgrad.bias = epilogue_bias;
    wgrad.lda = out_stride;
    rows.add(name + " wgrad", bwd_calls, wgrad, flops, kBf16 * n * (out_row + inp) + dweight + bias_grad,
             kBf16 * n * (out_row + inp) + dweight + bias_grad, fp8);
    // Forward narrows x; backward narrows dy and x, one call each (each only where it is fp32).
    const std::string narrow = "narrow GEMM operands to bf16";
    if (!stored.x) rows.add(narrow, fwd_calls, call(Op::kNarrow, m_rows * in_dim), 0.0, (kFp32 + kBf16) * n * inp, 0.0);
    if (!stored.dy) {
      rows.add(narrow, bwd_calls, call(Op::kNarrow, m_rows * int64_t(out_row)), 0.0, (kFp32 + kBf16) * n * out_row, 0.0);
    }
    if (!stored.x) rows.add(narrow, bwd_calls, call(Op::kNarrow, m_rows * in_dim), 0.0, (kFp32 + kBf16) * n * inp, 0.0);
    if (fp8) {  // the operands quantized to FP8 (1 byte) first: x and W forward, dy and x backward
      const RooflineCall quantize = call(Op::kFp8Quantize, m_rows, out_dim, in_dim);
      rows.add("fp8 quantize operands", fwd_calls, quantize, 0.0, (kFp32 + 1) * n * inp + (kBf16 + 1) * out * inp,
               (kBf16 + 1) * n * inp + (kBf16 + 1) * out * inp);
      rows.add("fp8 quantize operands", bwd_calls, quantize, 0.0, (kFp32 + 1) * n * (out + inp),
               (kBf16 + 1) * n * (out + inp));
    }
    if (bias && !epilogue_bias) {  // FP8's GEMMs have no bias epilogue here
      rows.activations("bias add", fwd_calls, call(Op::kBiasAdd, m_rows, out_dim), 2.0 * n * out);
      RooflineCall bias_backward = call(Op::kBiasBackward, m_rows, out_dim);
      bias_backward.bf16_out = stored.dy;  // reads a bf16 dy
      rows.add("bias backward", bwd_calls, bias_backward, 0.0, (stored.dy ? kBf16 : kFp32) * n * out + kFp32 * out,
               kBf16 * n * out + kFp32 * out);
    }
  };

  // A norm's forward reads x (the residual stream) and writes its output (a GEMM input), both
  // stored as the activations are; design: bf16 both.
  const auto norm_forward = [&](int64_t calls) {
    rows.add(norm + " forward", calls, row_norm, 4.0 * n * C, 2.0 * act_bytes * n * C, kBf16 * 2.0 * n * C);
  };

  // The blocks.
  norm_forward(block_forwards);
  linear("matmul qkv", block_forwards, L, c.qkv_dim(), c.dim, in.fp8, gpt2 || c.qkv_bias,
         {.x = acts_bf16, .y = acts_bf16, .dy = acts_bf16, .dx = acts_bf16}, tokens);
  if (!gpt2) {  // forward on qkv as stored, backward (inverse) on its gradient as stored
    RooflineCall rope = call(Op::kRope, tokens, c.n_heads + c.n_kv_heads, c.head_dim());
    rope.bf16_out = acts_bf16;
    const double rotated = 2.0 * n * (heads + kv_heads) * d;
    rows.add("rope", block_forwards + L, rope, 0.0, act_bytes * rotated, kBf16 * rotated);
  }
  // Causal attention: q k^T and p v over T(T+1)/2 pairs per head; the backward recomputes the
  // scores (flash-attention style): 2.5x the forward's FLOPs. The forward reads q, k, v and writes
  // the output (a GEMM input) and the softmax statistics (fp32 in both designs); the backward also
  // reads the output and its gradient, and writes dq, dk, dv (all four stored as the activations).
  const double attn_flops = 4.0 * double(in.micro_batch) * heads * d * T * (T + 1) / 2;
  const double lse = kFp32 * double(in.micro_batch) * heads * T;
  rows.add("attention forward", block_forwards, call(Op::kAttentionForward, tokens), attn_flops,
           act_bytes * n * (Sq + A) + lse, kBf16 * n * (Sq + A) + lse);
  rows.add("attention backward", L, call(Op::kAttentionBackward, tokens), 2.5 * attn_flops,
           act_bytes * n * 2 * (Sq + A) + lse, kBf16 * n * 2 * (Sq + A) + lse);
  linear("matmul o", block_forwards, L, c.dim, c.attn_dim(), in.fp8, gpt2,
         {.x = acts_bf16, .y = acts_bf16, .dy = acts_bf16, .dx = acts_bf16, .residual = true}, tokens);
  norm_forward(block_forwards);
  const int64_t hidden = c.hidden_dim, up_width = gpt2 ? hidden : 2 * hidden;
  linear("matmul up (gate_up)", block_forwards, L, up_width, c.dim, in.fp8, gpt2,
         {.x = acts_bf16, .y = acts_bf16, .dy = acts_bf16, .dx = acts_bf16}, tokens);
  // The activation's forward reads the up projection and writes a GEMM input; its backward reads
  // the up projection and the gradient, and writes the up projection's gradient (all three stored
  // as the activations are).
  if (gpt2) {
    rows.add("gelu forward", block_forwards, call(Op::kGeluForward, tokens * hidden), 0.0,
             2.0 * act_bytes * n * H, kBf16 * 2.0 * n * H);
    rows.add("gelu backward", L, call(Op::kGeluBackward, tokens * hidden), 0.0, act_bytes * 3.0 * n * H,
             kBf16 * 3.0 * n * H);
  } else {
    rows.add("swiglu forward", block_forwards, call(Op::kSwigluForward, tokens, hidden), 0.0,
             act_bytes * n * (F + H), kBf16 * n * (F + H));
    rows.add("swiglu backward", L, call(Op::kSwigluBackward, tokens, hidden), 0.0, act_bytes * n * (2 * F + H),
             kBf16 * n * (2 * F + H));
  }
  linear("matmul down", block_forwards, L, c.dim, hidden, in.fp8, gpt2,
         {.x = acts_bf16, .y = acts_bf16, .dy = acts_bf16, .dx = acts_bf16, .residual = true}, tokens);
  // Backward of the two norms: read dy (the norm output's gradient) and x, and add into the
  // residual stream's gradient (read and write), which is how the gradient stream's residual adds
  // happen: there is no separate add. All four stored as the activations are.
  const auto norm_backward = [&](int64_t calls) {
    rows.add(norm + " backward", calls, row_norm_bwd, 8.0 * n * C, 4.0 * act_bytes * n * C, kBf16 * 4.0 * n * C);
  };
  norm_backward(2 * L);

  // Outside the blocks: embedding, the final norm, the head (bf16 whatever train.precision says),
  // and the loss over the logits (read, then written back as gradients, in chunks).
  // The embedding's forward reads table rows and writes the residual stream's first array.
  rows.add("embedding forward", micro, call(Op::kEmbeddingForward, tokens, c.dim, c.vocab_size), 0.0,
           (kFp32 + act_bytes) * n * C, kBf16 * 2.0 * n * C);
  // The embedding's backward reads the residual stream's gradient (stored as the activations are)
  // and adds it into fp32 table rows (read and write).
  rows.add("embedding backward", micro, call(Op::kEmbeddingBackward, tokens, c.dim, c.vocab_size), 0.0,
           (act_bytes + 2.0 * kFp32) * n * C, kBf16 * 3.0 * n * C);
  if (in.embedding_rows_once) {
    // Summed per distinct token first (docs/parameter_store.md, "Gradients in place"): the slots
    // zeroed, then each added to its table row, read and write. Every token distinct, the most
    // a micro-batch can have: a bound.
    rows.add("zero embedding row sums", micro, call(Op::kZero, tokens * c.dim), 0.0, kFp32 * n * C, 0.0);
    rows.add("embedding backward", micro, call(Op::kEmbeddingBackward, tokens, c.dim, c.vocab_size), 0.0,
             3.0 * kFp32 * n * C, 0.0);
  }
  if (in.embedding_rows_set_aside && micro > 1) {
    // Kept in place, each later micro-batch sets its token rows aside (gathered, negated and
    // added: 8 + 8 + 12 bytes an element) and adds them back (negated, added: 8 + 12), and copies,
    // zeroes and adds back the position table (8 + 4 + 12). Every token distinct: a bound.
    const double positions = gpt2 ? double(c.max_seq_len) * C : 0.0;
    rows.add("embedding rows set aside", micro - 1, call(Op::kEmbeddingBackward, tokens, c.dim, c.vocab_size), 0.0,
             12.0 * kFp32 * n * C + 6.0 * kFp32 * positions, 0.0);
  }
  norm_forward(micro);
  norm_backward(micro);
  // The logits are a GEMM output stored as the activations are; the loss reads them and writes
  // their gradient in place, which the head's GEMMs read. In chunks of loss_chunk_rows rows
  // (transformer.cpp's loss_and_head): each chunk's three GEMMs read the whole head weight again
  // and read and write its whole fp32 gradient, so small chunks multiply that traffic. The logits
  // rows are padded to logits_row_stride (GPT-2: 50,304 for 50,257): their traffic is counted at
  // that stride, the FLOPs over the true vocabulary.
  const int64_t chunk = in.loss_chunk_rows > 0 ? std::min(in.loss_chunk_rows, tokens) : tokens;
  const int64_t full_chunks = tokens / chunk, last_chunk = tokens % chunk;
  const int64_t Vp = models::logits_row_stride(c.vocab_size);
  for (const auto& [chunks, rows_each] : {std::pair{full_chunks, chunk}, std::pair{int64_t(last_chunk > 0), last_chunk}}) {
    if (chunks == 0) continue;
    linear("matmul lm head", micro * chunks, micro * chunks, c.vocab_size, c.dim, false, false,
           {.x = acts_bf16, .y = acts_bf16, .dy = acts_bf16, .dx = acts_bf16}, rows_each, Vp);
    const double logits = double(rows_each) * double(Vp);
    RooflineCall loss = call(Op::kCrossEntropy, rows_each, c.vocab_size);
    loss.ldc = Vp;
    rows.add("cross-entropy (+grad)", micro * chunks, loss, 0.0, 2.0 * act_bytes * logits, kBf16 * 2.0 * logits);
  }

  // Gradient bookkeeping: each micro-batch zeroes what of the accumulators is added to rather
  // than written, and keeps their sums (a copy, read 4 and write 4 bytes, or a narrowing, 4 and
  // 2, at the first micro-batch; an add, read 8 and write 4, at the later ones, timed as the
  // add); of the gradients kept in place, the step's first micro-batch zeroes what is not written
  // (an embedding's table). Design: every unit in place, written.
  const double zeroed = double(in.grad_zeroed_elems), kept = double(in.grad_kept_from_accumulator_elems);
  const double zeroed_once = double(in.grad_zeroed_once_elems);
  if (zeroed > 0) {
    rows.add("zero gradient accumulators", micro, call(Op::kZero, in.grad_zeroed_elems), 0.0, kFp32 * zeroed,
             kFp32 * zeroed / double(micro));
  }
  if (kept > 0) {
    const RooflineCall keep = call(Op::kResidualAdd, in.grad_kept_from_accumulator_elems);
    rows.add("keep gradients", 1, keep, 0.0, (kFp32 + double(in.kept_grad_bytes)) * kept, 0.0);
    rows.add("keep gradients", micro - 1, keep, 0.0, 3.0 * kFp32 * kept, 0.0);
  }
  if (zeroed_once > 0) {
    rows.add("zero kept gradients", 1, call(Op::kZero, in.grad_zeroed_once_elems), 0.0, kFp32 * zeroed_once,
             kFp32 * zeroed_once);
  }

  // The optimizer step, once per optimizer step.
  rows.add("optimizer step", 1, call(Op::kOptimizerStep, 0), 0.0, in.optimizer_bytes, in.optimizer_bytes);
  return step;
}

RooflineInputs roofline_inputs(const recipe::RunConfig& config, const models::ModelConfig& model,
                               const MemoryEstimate& estimate) {
  RooflineInputs in;
  in.model = model;
  in.micro_batch = config.train.micro_batch;
  in.seq = config.data.seq_len;
  in.grad_accum = config.train.grad_accum;
  in.recompute = config.model.activation_checkpointing == models::Checkpointing::kPerBlock;
  in.fp8 = config.train.precision == recipe::Precision::kFp8;
  in.loss_chunk_rows = config.model.loss_chunk_rows;
  in.optimizer_bytes = optimizer_step_bytes(estimate);
  in.grad_zeroed_elems = estimate.grad_zeroed_elems;
  in.grad_kept_from_accumulator_elems = estimate.grad_kept_from_accumulator_elems;
  in.grad_zeroed_once_elems = estimate.grad_zeroed_once_elems;
  in.kept_grad_bytes = estimate.grad_bytes_per_elem > 0 ? estimate.grad_bytes_per_elem : 4;
  in.embedding_rows_once = estimate.embedding_rows_once;
  in.embedding_rows_set_aside = estimate.embedding_rows_set_aside;
  return in;
}

double optimizer_step_bytes(const MemoryEstimate& e) {
  const double owned = double(e.optimizer.owned_elems);
  return owned * (2.0 * kBf16 + double(e.grad_bytes_per_elem)) + 2.0 * double(e.optimizer.master) +
         2.0 * double(e.optimizer.state());
}

double roofline_seconds(const RooflineRow& row, const RooflineDevice& device, bool design) {
  const double compute = row.flops / (row.fp8 ? device.fp8_flops : device.bf16_flops);
  const double memory = (design ? row.bytes_design : row.bytes_built) / device.bytes_per_s;
  return std::max(compute, memory);
}

double roofline_step_seconds(const RooflineStep& step, const RooflineDevice& device, bool design) {
  double seconds = 0.0;
  for (const RooflineRow& row : step.rows) seconds += roofline_seconds(row, device, design);
  return seconds;
}

}  // namespace farthing::train
