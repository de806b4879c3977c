// fp4_linears.h — the linear layers a Transformer computes in FP4 (train.precision: nvfp4 |
// mxfp4), following a recipe of framework/backend/fp4_policy.h.
//
// Per block projection (K in, N out; M rows), each GEMM in FP4 reads two operands quantized just
// before it, both stored with the GEMM's reduced dimension as columns (fp4_operand.h):
//   forward  y(M,N)   = x(M,K) · W(N,K)^T
//   dgrad    dx(M,K)  = dy(M,N) · (W^T)(K,N)^T
//   wgrad    dW(N,K) += (dy^T)(N,M) · (x^T)(K,M)^T       (GPT-2's Conv1D: dW(K,N), operands swapped)
// A GEMM that the recipe leaves out (mxfp4's forward) and every projection of the last
// bf16_last_fraction of the blocks run as under bf16 compute (the Transformer's own path).
// Weights are quantized from the bf16 weights at each GEMM, with round to nearest (2D tiles give
// the same codes for W and W^T, so forward and backward see one quantized weight).
// NOTE: randomness is keyed, not stateful. The Hadamard signs of GEMM g of projection p in step s
// come from Philox (train.seed, s, kHadamardSigns) at indices (3p + g) * rht_size + i; stochastic
// rounding's bits from (train.seed, s, kFp4Gradient) at (c << 40) + element, c counting this
// step's stochastic casts. So a resumed run, which restarts at step s with the seed in its
// checkpoint, draws what the straight run drew. (c depends on the order of the casts, which is
// the same at any thread count but not across world sizes: ranks see other micro-batches.)
// Relies on: framework/backend/nn_ops.h, fp4_policy.h, transformer_spec.h.
// Tested by: tests/models/test_fp4_layer_grads.cpp (each layer's y, dx and dW against a reference
// quantizer), tests/train/loop/test_train_fp4.sh (through the trainer), tests/kernels/test_fp4_cpu.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "framework/backend/buffer.h"
#include "framework/backend/fp4_policy.h"
#include "framework/backend/nn_ops.h"
#include "kernels/numerics/fp4_workspace.h"
#include "models/common/transformer_spec.h"

namespace farthing::models {

struct Fp4Options {
  const Fp4Recipe* recipe = nullptr;  // nullptr: no FP4 (not owned)
  uint64_t seed = 0;                  // train.seed: keys the Hadamard signs and stochastic rounding
  // The GEMM engine a plan (no ops yet) sizes the workspace for; with ops, their device decides.
  numerics::Fp4GemmEngine planned_engine = numerics::Fp4GemmEngine::kEmulated;
};

// The FP4 GEMM engine of a device: cuBLASLt's (with its exact device emulation) on CUDA, the
// host emulation's elsewhere.
numerics::Fp4GemmEngine fp4_gemm_engine(Device device);

// One FP4 projection: its weight's global offset and its GEMM dims (K in, N out).
struct Fp4Projection {
  int64_t weight = -1;
  int64_t k = 0, n = 0;
};

class Fp4Linears {
 public:
  // The projections of every block but the last fp4_bf16_last_blocks, in block order.
  static std::vector<Fp4Projection> projections(const TransformerSpec& spec, const Fp4Recipe& recipe);
  // What the constructor allocates (kActivations): two operand slots, the cast's fp32 workspace,
  // the Hadamard signs and the GEMM workspace.
  static int64_t buffer_bytes(const TransformerSpec& spec, int64_t batch, int64_t seq, const Fp4Recipe& recipe,
                              numerics::Fp4GemmEngine engine);

  Fp4Linears(const TransformerSpec& spec, int64_t batch, int64_t seq, const Fp4Options& options, NnOps& ops);

  bool forward_covers(int64_t weight) const {
    return fp4_gemm_in_fp4(recipe_, Fp4Gemm::kForward) && index_.count(weight) != 0;
  }
  bool backward_covers(int64_t weight) const { return index_.count(weight) != 0; }
  // The step whose keys the next GEMMs use; restarts the count of stochastic casts.
  void set_step(uint32_t step) {
    step_ = step;
    stochastic_casts_ = 0;
  }

  // w: the stored bf16 weight ((N, K) for kOutIn, (K, N) for kInOut).
  void forward(float* y, const float* x, const uint16_t* w, int64_t weight, int64_t m, WeightOrientation orient,
               bool accumulate);
  // dx (M, K) overwritten; dw (the weight's gradient) accumulated.
  void backward(float* dx, float* dw, const uint16_t* w, int64_t weight, const float* dy, const float* x, int64_t m,
                WeightOrientation orient);

 private:
  struct Source {  // what an operand is cast from: fp32 or bf16, stored as (rows, cols) or transposed
    const float* f32 = nullptr;
    const uint16_t* bf16 = nullptr;
    bool transposed = false;
  };
  Fp4Operand quantize(int slot, Source src, int64_t rows, int64_t cols, Fp4Gemm gemm, Fp4OperandRole role);
  // C (m, n) (+)= A (m, k) · B (n, k)^T, with GEMM `gemm` of projection p's Hadamard signs when it uses them.
  void gemm(size_t p, Fp4Gemm gemm, float* c, bool accumulate, int64_t m, int64_t n, int64_t k, Source a,
            Fp4OperandRole a_role, Source b, Fp4OperandRole b_role);

  Fp4Recipe recipe_;
  uint64_t seed_ = 0;
  NnOps& ops_;
  std::vector<Fp4Projection> projections_;
  std::map<int64_t, size_t> index_;  // weight offset -> projection
  Buffer buffer_;
  struct Slot {
    uint8_t* codes = nullptr;
    uint8_t* scales = nullptr;
    float* decode_scale = nullptr;
  };
  Slot slots_[2];
  int64_t slot_elems_ = 0;
  float* cast_workspace_ = nullptr;
  float* signs_ = nullptr;  // rht_size floats
  void* gemm_workspace_ = nullptr;
  uint32_t step_ = 0;
  uint64_t stochastic_casts_ = 0;
};

}  // namespace farthing::models
