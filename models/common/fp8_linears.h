// fp8_linears.h — the linear layers a Transformer computes in FP8 (train.precision: fp8).
//
// Forward, dgrad and wgrad of each selected block projection run as FP8 GEMMs with fp32
// accumulation (NnOps::matmul_fp8); everything else stays as under bf16 compute. Per GEMM:
//   forward   y(M,N)  = x(M,K) · W^T          x: input role, tiles along K; W: weight role
//   dgrad     dx(M,K) = dy(M,N) · W           dy: grad-output role, tiles along N
//   wgrad     dW     += dy^T x (or x^T dy)    dy and x reduced over M: tiles down the columns
// Which tiles, formats and scales: framework/backend/fp8_policy.h. Weights are quantized from
// the bf16 weights when their unit is acquired (once per acquisition, freed with the unit), so
// the codes are the same at every ZeRO stage. Activations and gradients are quantized into two
// slots just before each GEMM. Under delayed scaling each (projection, role) pair is one tensor
// of the trainer's Fp8AmaxHistory, observed only in training steps (not in evaluation). Its
// scales and amaxes stay in the ops' memory: the scales are copied there once whenever the history
// moves, each cast folds its amax into its tensor's slot there, and collect_step_amaxes reads a
// whole step's amaxes back at once, so no cast waits for the device (one transfer a step).
// Sizes are stated for `farthing plan` (buffer_bytes, unit_bytes), as the Transformer's are.
// Relies on: framework/backend/nn_ops.h, framework/backend/fp8_policy.h, transformer_spec.h.
// Tested by: tests/models/test_fp8_model.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "framework/backend/buffer.h"
#include "framework/backend/fp8_policy.h"
#include "framework/backend/nn_ops.h"
#include "kernels/numerics/fp8_workspace.h"
#include "models/common/transformer_spec.h"

namespace farthing::models {

struct Fp8Options {
  const Fp8Recipe* recipe = nullptr;  // nullptr: no FP8 (not owned)
  Fp8AmaxHistory* history = nullptr;  // kTensorDelayed: the trainer's history (not owned)
  // Sizing without ops (`farthing plan`): whose GEMM workspace Transformer::buffer_bytes counts.
  // With ops, the ops' device decides (fp8_gemm_engine).
  numerics::Fp8GemmEngine planned_engine = numerics::Fp8GemmEngine::kEmulated;
};

// The FP8 GEMM engine of ops on `device`: cuBLASLt on CUDA, the emulation elsewhere.
numerics::Fp8GemmEngine fp8_gemm_engine(Device device);

// One FP8 projection: its weight's global offset, its unit and its GEMM dims (K in, N out).
struct Fp8Projection {
  int64_t weight = -1;
  int unit = 0;
  int64_t k = 0, n = 0;
};

class Fp8Linears {
 public:
  static std::vector<Fp8Projection> projections(const TransformerSpec& spec, const Fp8Recipe& recipe);
  // The tensors a delayed-scaling history needs: three roles per projection.
  static int64_t history_tensors(const TransformerSpec& spec, const Fp8Recipe& recipe);
  // The constructor's buffers (operand slots, scalars, GEMM workspace), bytes (kActivations);
  // without a UnitStorage also every weight's codes (flat_weight_bytes, kWeights).
  static int64_t buffer_bytes(const TransformerSpec& spec, int64_t batch, int64_t seq, const Fp8Recipe& recipe,
                              numerics::Fp8GemmEngine engine);
  static int64_t flat_weight_bytes(const TransformerSpec& spec, const Fp8Recipe& recipe);
  // What quantize_unit allocates for one unit's weights (kWeights).
  static int64_t unit_bytes(const TransformerSpec& spec, int unit, const Fp8Recipe& recipe);

  Fp8Linears(const TransformerSpec& spec, int64_t batch, int64_t seq, const Fp8Options& options, NnOps& ops,
             bool flat);

  bool covers(int64_t weight) const { return index_.count(weight) != 0; }
  // Quantizes the FP8 weights of `unit` (-1: every unit, flat mode) from bf16 weights, where
  // bf16_base holds global element base_offset.
  void quantize_unit(int unit, const uint16_t* bf16_base, int64_t base_offset);
  void release_unit(int unit);
  // Delayed scaling records amaxes only while observing (the trainer's forward and backward).
  void set_observing(bool observing) { observing_ = observing; }
  // Delayed scaling: hands the amaxes the casts gathered since the last call to the history
  // (Fp8AmaxHistory::observe) and clears them; the trainer calls it once a step, before it
  // reduces them over the ranks. A no-op under the other scalings.
  void collect_step_amaxes();

  void forward(float* y, const float* x, int64_t weight, int64_t m, WeightOrientation orient, bool accumulate);
  // dx (M, K) overwritten; dw (the weight's gradient) accumulated.
  void backward(float* dx, float* dw, int64_t weight, const float* dy, const float* x, int64_t m,
                WeightOrientation orient);

 private:
  struct Slot {
    uint8_t* codes = nullptr;
    float* scale_inv = nullptr;
  };
  // Quantizes a (rows, cols) fp32 matrix into a slot for `role` of projection p.
  Fp8Operand quantize(int slot, const float* x, int64_t rows, int64_t cols, size_t p, Fp8Role role,
                      bool reduced_over_rows);
  // Quantizes with the given tiling/format; under delayed scaling also reads the history's scale
  // and records the amax of tensor `tensor`.
  void run_quantize(Fp8QuantizeArgs args, int64_t tensor);
  // Copies the history's scales of the tensors that have one into given_scales_, when the
  // history moved since the last copy.
  void refresh_given_scales();
  // The floats of scalars_: delayed scaling's scale and step amax per tensor, or none.
  static int64_t scalar_floats(const Fp8Recipe& recipe, const std::vector<Fp8Projection>& projections);
  const Fp8Operand& weight_operand(size_t projection) const;

  Fp8Recipe recipe_;
  Fp8AmaxHistory* history_;
  NnOps& ops_;
  std::vector<Fp8Projection> projections_;
  WeightOrientation orientation_ = WeightOrientation::kOutIn;
  int64_t slot_elems_ = 0, slot_scales_ = 0;
  std::map<int64_t, size_t> index_;            // weight offset -> projection
  std::vector<Fp8Operand> weights_;            // per projection, valid while its unit is quantized
  std::vector<Buffer> unit_codes_;             // per unit (or one, flat)
  Buffer slots_buffer_, scalars_, workspace_;
  Slot slots_[2];
  int64_t tensors_ = 0;             // delayed scaling's tensors (kFp8Roles per projection), or 0
  float* given_scales_ = nullptr;   // ops' memory, per tensor: this step's scale (delayed)
  float* step_amaxes_ = nullptr;    // ops' memory, per tensor: amaxes folded since the last collect
  uint64_t scales_version_ = ~uint64_t(0);  // the history version given_scales_ holds
  bool observing_ = false;
};

}  // namespace farthing::models
