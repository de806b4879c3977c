// nn_ops.h — the ops a transformer's forward and backward are written against.
//
// models/ calls only these (never kernels/ directly), so a model is written once and runs
// wherever a backend implements them: Backend::nn() hands out the backend's set. The CPU set
// (cpu_nn_ops.h) is the reference over kernels/cpu; the CUDA set (cuda_nn_ops.h, not yet run on
// a GPU) and the strict test device's (strict_nn_ops.h) follow it.
//
// Pointers address memory of the backend's device. Shapes are in comments: N rows of C
// channels. As in kernels/cpu/nn_cpu.h, backward ops *accumulate* into weight gradients
// (dw +=) and, where marked, into input gradients, so residual branches and tied weights add
// up without extra buffers; reductions over rows are summed in row order, so results do not
// depend on the thread count.
// Relies on: kernels/numerics/op_shapes.h. Tested by: tests/models/test_model_ops_routing.cpp
// (every op of a training step goes through here) and the model goldens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "framework/backend/act_ref.h"
#include "framework/core/tensor.h"
#include "kernels/numerics/fp4_operand.h"
#include "kernels/numerics/fp8_operand.h"
#include "kernels/numerics/gemm_plan_book.h"
#include "kernels/numerics/op_shapes.h"

namespace farthing {

using kernels::AttentionShape;
using kernels::BiasGradOf;
using kernels::Fp4Operand;
using kernels::Fp4QuantizeArgs;
using kernels::Fp8Operand;
using kernels::Fp8QuantizeArgs;
using kernels::GemmDtype;
using kernels::GemmShape;
using kernels::HeadNormShape;
using kernels::RowPositions;
using kernels::Trans;

// How a weight gradient's GEMM puts its product into C (matmul_bias_grad): added by the GEMM
// (matmul with accumulate), C written (matmul without), or the whole product added once
// (matmul_add_product).
enum class GradInto : uint8_t { kAccumulate, kOverwrite, kAddProduct };

class NnOps {
 public:
  virtual ~NnOps() = default;
  // The device whose memory the pointers below address.
  virtual Device device() const = 0;

  // C(m, n) = op(A) · op(B), or C += ... when accumulate; A and B of `dtype`, C fp32.
  virtual void matmul(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c,
                      bool accumulate) = 0;
  // C(m, n) += op(A) · op(B), the product's whole K-sum formed first and added to C once (one
  // rounding of C's old value per element), so that a running sum over calls adds whole products
  // in call order: the gradients kept in place across micro-batches (docs/parameter_store.md).
  // Onto a zero C it gives matmul's bits with accumulate. The CPU stages each tile
  // (kernels/cpu/matmul_cpu.h); cuBLASLt applies beta = 1 in its epilogue after the whole
  // K-sum (no split-K). This default forms the product in a scratch C and adds it.
  virtual void matmul_add_product(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c);
  // C(m, n) = bf16(add + op(A) · op(B) + bf16(bias)): a GEMM output stored as bf16 (qkv, the
  // MLP's in-projection, the gradients of dgrads, and with `add` the residual stream under bf16
  // activations). add (bf16, C's layout) is null, or the residual the product is added to (C
  // itself, or another array); bias (n, fp32) or null. The value rounded to nearest even, once,
  // is the fp32 GEMM's accumulated onto the widened add, with the bias rounded to bf16
  // (numerics::bf16_output_bias, the operand cuBLASLt's bias epilogue takes) then added in fp32:
  // on the CPU bit for bit copy (widened), matmul (accumulate), bias_add of the rounded bias, then
  // narrow; elsewhere within the GEMM tolerance of that.
  virtual void matmul_bf16_out(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b,
                               const float* bias, const uint16_t* add, uint16_t* c) = 0;
  // C(m, n) = (op(A) · op(B) [+ C when accumulate]) + bias, fp32 C, bias (n, fp32): a linear
  // layer's fp32 output. This default is matmul then bias_add (the CPU's, bit for bit); CUDA adds
  // the bias in cuBLASLt's epilogue (within the GEMM tolerance of that).
  virtual void matmul_bias(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const float* bias,
                           float* c, bool accumulate);
  // A weight gradient's GEMM with its bias gradient: C (+)= op(A) · op(B) as `into` says, and
  // dbias += the column sums of dy as
  // bias_backward sums them (shape.k rows of the bias's width: shape.m for BiasGradOf::kA,
  // shape.n for kB; dense, fp32 or bf16). dy is the layer's output gradient as stored; the GEMM's
  // operand on that side is dy itself or dy narrowed to the GEMM's type. This default is the GEMM
  // then bias_backward (the CPU's); CUDA sums the operand in cuBLASLt's bias-gradient epilogue
  // where it is dy itself (within the GEMM tolerance of bias_backward: another order).
  virtual void matmul_bias_grad(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c,
                                GradInto into, BiasGradOf side, ActRef dy, float* dbias);

  // FP8 GEMMs (kernels/numerics/fp8_scaling.h; the policy: backend/fp8_policy.h). Quantize a
  // row-major matrix into codes and one s_inv per tile (fp8_operand.h says what is written).
  virtual void fp8_quantize(const Fp8QuantizeArgs& args) = 0;
  // Device scratch that matmul_fp8 needs for operands of these element counts.
  virtual int64_t fp8_matmul_workspace_bytes(int64_t a_elems, int64_t b_elems, bool power_of_two) const = 0;
  // C(m, n) = op(A) · op(B), or C += ... when accumulate, of dequantized FP8 operands with fp32
  // accumulation; a and b as stored (op per shape.trans_a / trans_b). The CPU's is an exact
  // emulation with power-of-two scales (kernels/cpu/fp8_cpu.h); results agree across backends
  // within the GEMM tolerance (summation order), the quantized operands bit for bit.
  virtual void matmul_fp8(const GemmShape& shape, const Fp8Operand& a, const Fp8Operand& b, float* c,
                          bool accumulate, void* workspace) = 0;
  // How many FP8 GEMM shapes met so far run as dequantize + bf16 GEMM instead of an FP8 kernel
  // (the CUDA backend, when cuBLASLt declines; each is also reported once on stderr). 0 where
  // FP8 GEMMs are always emulated (CPU, strict device): there is no faster path to miss.
  virtual int64_t fp8_fallback_shapes() const { return 0; }
  // Bytes of device scratch the ops hold now (the CUDA set's workspace: cuDNN's, attention's bf16
  // staging, the kernels' partials), charged to the device's memory tracker as activations. 0
  // where ops take no scratch of their own beyond what they allocate and free inside a call.
  virtual int64_t workspace_bytes() const { return 0; }
  // Whether attention's backward must be deterministic (train.deterministic_attention). Only the
  // CUDA set has a choice (cuDNN's nondeterministic backward, faster); everywhere else every op
  // repeats bit for bit and this changes nothing.
  virtual void set_deterministic_attention(bool deterministic) { static_cast<void>(deterministic); }
  // GEMM algorithms (train.gemm_algorithm; docs/cuda_ops.md "GEMM plans"). Only the CUDA set
  // chooses among algorithms (cuBLASLt's); the CPU's GEMM tiles depend on the shape alone, so
  // everywhere else these keep nothing: an empty book, no records. log: time each new plan once
  // and keep a record of it (gemm_plan_records).
  virtual void set_gemm_planning(kernels::GemmAlgorithmChoice choice, bool log) {
    static_cast<void>(choice);
    static_cast<void>(log);
  }
  // The algorithms in use (once a book was adopted) or, before that under kTimed, the fastest
  // timed for each plan so far; with the device and library they are valid for.
  virtual kernels::GemmPlanBook gemm_plan_book() const { return {}; }
  // From now on every plan whose key the book holds runs its algorithm, and every other plan the
  // heuristic's first; nothing more is timed. Returns "" when adopted, else (nothing changed) why
  // the book does not apply here (another device model or cuBLASLt version), in one sentence.
  virtual std::string adopt_gemm_plan_book(const kernels::GemmPlanBook& book) {
    static_cast<void>(book);
    return "";
  }
  // Each plan's record, in the order they were completed (kernels/numerics/gemm_plan_book.h).
  virtual std::vector<kernels::GemmPlanRecord> gemm_plan_records() const { return {}; }

  // FP4 GEMMs (kernels/numerics/fp4_block.h; the policy: backend/fp4_policy.h). Quantize an
  // operand (fp4_operand.h says what is written), and C(m, n) (+)= A(m, k) · B(n, k)^T of two
  // FP4 operands with fp32 accumulation, exactly as kernels/cpu/fp4_cpu.h emulates it.
  // NOTE: the defaults emulate on the host for any backend: they copy the inputs into host
  // memory, run the CPU kernels and copy the results back (fp4_host_emulation.cpp), so a device
  // computes the CPU's bits, slowly (the strict device's test of exactly that). The CPU set runs
  // the kernels in place. The CUDA set quantizes on the device (kernels/cuda/fp4_cuda.h, the
  // CPU's bits) and multiplies through cuBLASLt's FP4 GEMM or its exact emulation on the device
  // (kernels/cuda/gemm_fp4_cublaslt.h); below sm_100 the trainer runs FP4 only where the recipe
  // opts into that emulation (train.fp4_gpu_emulation; train/loop/model_options.cpp).
  virtual void fp4_quantize(const Fp4QuantizeArgs& args);
  virtual void matmul_fp4(int64_t m, int64_t n, int64_t k, const Fp4Operand& a, const Fp4Operand& b, float* c,
                          bool accumulate, void* workspace);
  // Bytes of device scratch matmul_fp4 needs: kernels/numerics/fp4_workspace.h's for this
  // backend's engine (the emulation's here; CUDA's cuBLASLt engine, which also holds its
  // emulation). models/common/fp4_linears.h's fp4_gemm_engine says which, for plans without ops.
  virtual int64_t fp4_matmul_workspace_bytes(int64_t m, int64_t n, int64_t k, int block) const;

  // Causal GQA attention: out (B*T, Hq*D), lse (B, Hq, T) from qkv (B*T, stride); with
  // s.doc_start, each query sees only the keys of its own document (AttentionShape::first_key). out is fp32,
  // or bf16 (ActRef): each value computed in fp32, then rounded once to nearest even. qkv is fp32,
  // or bf16 (as the projection's bf16 GEMM and RoPE store it; with a bf16 out), widened exactly.
  virtual void attention_forward(const AttentionShape& s, ActRef out, float* lse, ActRef qkv) = 0;
  // dqkv (B*T, stride) is overwritten; scratch holds 2 * B * Hq * T * D floats. out (read only) is
  // the forward's output as it was stored: each row's D = rowsum(dO . O) reads those values, so a
  // bf16 out gives the gradients of an fp32 out holding the same (widened) values, bit for bit.
  // dout and dqkv are fp32, or both bf16 with a bf16 out and qkv (bf16 activations): dout widened
  // exactly, each dqkv value computed in fp32 and rounded once.
  virtual void attention_backward(const AttentionShape& s, ActRef dqkv, float* scratch, ActRef dout, ActRef out,
                                  const float* lse, ActRef qkv) = 0;

  // Decoding against a KV cache: `rows` query rows (qkv layout) at positions first_position..,
  // keys/values of positions 0 .. first_position + rows - 1 as rows of Hkv*D in the caches.
  virtual void attention_decode(const AttentionShape& s, float* out, const float* qkv, int64_t rows,
                                int64_t first_position, const float* k_cache, const float* v_cache) = 0;

  // The forward ops whose output only GEMMs read (the norms, SwiGLU, GELU) write it as fp32 or
  // as bf16 (ActRef: each value rounded once to nearest even, the bits narrow(kBF16) would give).
  // The norms read x (the residual stream) as fp32 or bf16 (widened exactly; a bf16 x comes with
  // a bf16 out).
  // out = x * rsqrt(mean(x^2) + eps) * w                 x, out (N, C); rstd (N)
  virtual void rmsnorm_forward(ActRef out, float* rstd, ActRef x, const float* w, int64_t n, int64_t c,
                               float eps) = 0;
  // dx += ..., dw += ... dx, dout and x (the residual stream's gradient, the norm's output's, and
  // the residual stream) are all fp32, or all bf16 (bf16 activations): dout and x widened
  // exactly, each dx value widened, added to in fp32 and rounded once. The weight gradient's sums
  // stay fp32.
  virtual void rmsnorm_backward(ActRef dx, float* dw, ActRef dout, ActRef x, const float* w,
                                const float* rstd, int64_t n, int64_t c) = 0;
  // out = (x - mean) * rstd * w + b (biased variance, as torch.nn.LayerNorm)
  virtual void layernorm_forward(ActRef out, float* mean, float* rstd, ActRef x, const float* w,
                                 const float* b, int64_t n, int64_t c, float eps) = 0;
  // dx += ..., dw += ..., db += ...; dx, dout and x stored as rmsnorm_backward's.
  virtual void layernorm_backward(ActRef dx, float* dw, float* db, ActRef dout, ActRef x,
                                  const float* w, const float* mean, const float* rstd, int64_t n, int64_t c) = 0;

  // RMSNorm over each q and k head of the packed projection (HeadNormShape: Qwen3's and Gemma 3's
  // q_norm and k_norm, before RoPE). out = qkv with each q head x replaced by
  // x * rsqrt(mean(x^2) + eps) * wq and each k head likewise with wk, the v heads copied;
  // rstd (rows, q_heads + k_heads). out and qkv (the projection as its GEMM stored it) are both
  // fp32 or both bf16 (widened exactly, each output rounded once).
  virtual void head_rmsnorm_forward(const HeadNormShape& s, ActRef out, float* rstd, ActRef qkv, const float* wq,
                                    const float* wk, float eps) = 0;
  // In place on d, the gradient of the forward's out (qkv's storage): each q and k head becomes the
  // gradient of the head before the norm, the v heads stay; dwq += ..., dwk += ... (fp32 sums).
  virtual void head_rmsnorm_backward(const HeadNormShape& s, ActRef d, float* dwq, float* dwk, ActRef qkv,
                                     const float* wq, const float* wk, const float* rstd) = 0;

  // Rotary embedding (rotate-half layout) in place on `heads` heads at the start of each row;
  // row r is at position pos.of(r) (r % seq, or from its document's start when pos carries
  // doc_start: kernels/numerics/op_shapes.h); cos/sin (seq, head_dim / 2); inverse rotates by -angle. x is
  // fp32, or bf16 (each pair widened, rotated in fp32 and rounded to nearest even once).
  virtual void rope_apply(ActRef x, int64_t rows, RowPositions pos, int64_t heads, int64_t head_dim, int64_t stride,
                          const float* cos, const float* sin, bool inverse) = 0;

  // act = silu(gate) * up, gu rows [gate (H) | up (H)]; backward overwrites dgu. gu (as the MLP's
  // in-projection stored it) is read as fp32 or bf16 (widened exactly); a bf16 gu comes with a
  // bf16 act. The backward's arrays are all fp32, or all bf16 (bf16 activations store both
  // gradients too: dact as its GEMM rounds it, dgu rounded once as it is written).
  virtual void swiglu_forward(ActRef act, ActRef gu, int64_t n, int64_t h) = 0;
  virtual void swiglu_backward(ActRef dgu, ActRef dact, ActRef gu, int64_t n, int64_t h) = 0;
  // act = gelu_tanh(gate) * up (GeGLU: Gemma 3's MLP, the GELU of gelu_forward), gu and act laid
  // out and stored as swiglu's, the backward's arrays as swiglu_backward's.
  virtual void geglu_forward(ActRef act, ActRef gu, int64_t n, int64_t h) = 0;
  virtual void geglu_backward(ActRef dgu, ActRef dact, ActRef gu, int64_t n, int64_t h) = 0;
  // out = x * s + add, count elements (kernels/numerics/scale_add.h): the embedding's scale (add
  // empty: out = x * s, rounded once) and the residual add after a post-norm (s = 1: x + add,
  // rounded once). out may be x or add; all three fp32 or all bf16 (widened exactly).
  virtual void scale_add(ActRef out, ActRef x, float s, ActRef add, int64_t count) = 0;
  // out = gelu_tanh(x); backward overwrites dx. x as swiglu's gu, the backward's arrays as its.
  virtual void gelu_forward(ActRef out, ActRef x, int64_t count) = 0;
  virtual void gelu_backward(ActRef dx, ActRef dout, ActRef x, int64_t count) = 0;

  // out[r] = wte[tok[r]] (+ wpe[pos.of(r)]); backward: dwte[tok[r]] += dout[r], dwpe likewise
  // (wpe / dwpe may be null). tokens are device memory. out (the residual stream) is fp32 or bf16
  // (the fp32 sum rounded once); dout (its gradient) fp32 or bf16, widened exactly; the sums stay
  // fp32.
  virtual void embedding_forward(ActRef out, const int32_t* tokens, const float* wte, const float* wpe,
                                 int64_t n, RowPositions pos, int64_t c) = 0;
  // The same lookup from bf16 tables (each value widened exactly): bitwise the fp32 lookup.
  virtual void embedding_forward_bf16(ActRef out, const int32_t* tokens, const uint16_t* wte, const uint16_t* wpe,
                                      int64_t n, RowPositions pos, int64_t c) = 0;
  virtual void embedding_backward(float* dwte, float* dwpe, ActRef dout, const int32_t* tokens, int64_t n,
                                  RowPositions pos, int64_t c) = 0;

  // out[r] += bias (rows of `stride`); dbias += sum over rows of dout (fp32 sums; a bf16 dout,
  // a gradient stored as bf16, widened exactly).
  virtual void bias_add(float* out, const float* bias, int64_t n, int64_t c, int64_t stride) = 0;
  virtual void bias_backward(float* dbias, ActRef dout, int64_t n, int64_t c, int64_t stride) = 0;

  // Cross-entropy over rows of logits (R, V), row r at element r * stride (stride >= V: the
  // model's logits rows are padded, models/common/transformer.h's logits_row_stride), in place:
  // each row's V values become their gradient (softmax - onehot) * grad_scale, or zeros where
  // target < 0; the pad columns V .. stride - 1 are neither read nor written. The logits are
  // fp32, or bf16 (a GEMM output under bf16 activations): widened exactly, every sum in fp32
  // (double for the loss), each gradient value rounded once. Adds the sum of the rows' losses to
  // *loss_sum, one double in this device's memory: the host reads the loss once per step, not
  // once per call.
  virtual void cross_entropy_rows(ActRef logits, const int32_t* targets, int64_t rows, int64_t vocab, int64_t stride,
                                  float grad_scale, bool want_grad, double* loss_sum) = 0;

  // dst = src rounded to the 16-bit GEMM operand type (kBF16 or kF16), nearest-even.
  virtual void narrow(GemmDtype dtype, uint16_t* dst, const float* src, int64_t count) = 0;
  // dst = src widened from the 16-bit type to fp32 (exact).
  virtual void widen(GemmDtype dtype, float* dst, const uint16_t* src, int64_t count) = 0;
  // dst = src / dst = 0, count floats (either side of copy may be host memory).
  virtual void copy(float* dst, const float* src, int64_t count) = 0;
  virtual void zero(float* dst, int64_t count) = 0;
  // dst[i] += src[i], count floats, each sum rounded once (gradients summed over micro-batches).
  virtual void accumulate(float* dst, const float* src, int64_t count) = 0;
};

}  // namespace farthing
