// fp8_linears.cpp — see fp8_linears.h.
#include "models/common/fp8_linears.h"

#include <algorithm>

#include "framework/core/error.h"

namespace farthing::models {

namespace nm = farthing::numerics;

namespace {

int64_t align64(int64_t bytes) { return (bytes + 63) / 64 * 64; }

bool selected(const Fp8Recipe& recipe, bool attention) {
  return recipe.layers == Fp8Layers::kAll || (recipe.layers == Fp8Layers::kAttention) == attention;
}

// A stored weight (rows, cols): (N, K) for torch's Linear, (K, N) for GPT-2's Conv1D.
int64_t weight_rows(const Fp8Projection& p, WeightOrientation o) { return o == WeightOrientation::kOutIn ? p.n : p.k; }
int64_t weight_cols(const Fp8Projection& p, WeightOrientation o) { return o == WeightOrientation::kOutIn ? p.k : p.n; }

int64_t weight_bytes(const Fp8Projection& p, const Fp8Recipe& recipe) {
  const Fp8Tiling tiling = fp8_tiling_of(recipe, Fp8Role::kWeight, false);
  return align64(p.k * p.n) + align64(nm::fp8_scale_count(tiling, p.n, p.k) * 4);
}

// The largest activation/gradient operand (elements) and its most scales over both tilings.
struct SlotSize {
  int64_t elems = 0, scales = 1;
};
SlotSize slot_size(const std::vector<Fp8Projection>& projections, int64_t m) {
  SlotSize s;
  for (const Fp8Projection& p : projections) {
    for (const int64_t d : {p.k, p.n}) {
      s.elems = std::max(s.elems, m * d);
      s.scales = std::max({s.scales, nm::fp8_scale_count(Fp8Tiling::kRow1x128, m, d),
                           nm::fp8_scale_count(Fp8Tiling::kCol128x1, m, d)});
    }
  }
  return s;
}

int64_t workspace_operand_elems(const std::vector<Fp8Projection>& projections, int64_t m) {
  int64_t elems = 0;
  for (const Fp8Projection& p : projections) elems = std::max({elems, m * p.k, m * p.n, p.k * p.n});
  return elems;
}

}  // namespace

std::vector<Fp8Projection> Fp8Linears::projections(const TransformerSpec& spec, const Fp8Recipe& recipe) {
  std::vector<Fp8Projection> out;
  for (const BlockOffsets& b : spec.blocks) {
    for (const BlockProjection& bp : block_projections(spec.config, b)) {
      if (!selected(recipe, bp.attention)) continue;
      int unit = 0;
      for (const ParamEntry& e : spec.layout.entries()) {
        if (e.offset_elems == bp.weight) unit = e.unit;
      }
      out.push_back(Fp8Projection{bp.weight, unit, bp.k, bp.n});
    }
  }
  return out;
}

int64_t Fp8Linears::history_tensors(const TransformerSpec& spec, const Fp8Recipe& recipe) {
  return int64_t(projections(spec, recipe).size()) * kFp8Roles;
}

numerics::Fp8GemmEngine fp8_gemm_engine(Device device) {
  return device.kind == DeviceKind::kCuda ? numerics::Fp8GemmEngine::kCublasLt : numerics::Fp8GemmEngine::kEmulated;
}

int64_t Fp8Linears::buffer_bytes(const TransformerSpec& spec, int64_t batch, int64_t seq, const Fp8Recipe& recipe,
                                 numerics::Fp8GemmEngine engine) {
  const std::vector<Fp8Projection> ps = projections(spec, recipe);
  const int64_t m = batch * seq;
  const SlotSize s = slot_size(ps, m);
  const int64_t operand = workspace_operand_elems(ps, m);
  return 2 * (align64(s.elems) + align64(s.scales * 4)) + align64(scalar_floats(recipe, ps) * 4) +
         align64(numerics::fp8_matmul_workspace_bytes(engine, operand, operand, recipe.power_of_two_scales));
}

int64_t Fp8Linears::scalar_floats(const Fp8Recipe& recipe, const std::vector<Fp8Projection>& projections) {
  return recipe.scaling == Fp8Scaling::kTensorDelayed ? 2 * int64_t(projections.size()) * kFp8Roles : 0;
}

int64_t Fp8Linears::flat_weight_bytes(const TransformerSpec& spec, const Fp8Recipe& recipe) {
  int64_t bytes = 0;
  for (const Fp8Projection& p : projections(spec, recipe)) bytes += weight_bytes(p, recipe);
  return bytes;
}

int64_t Fp8Linears::unit_bytes(const TransformerSpec& spec, int unit, const Fp8Recipe& recipe) {
  int64_t bytes = 0;
  for (const Fp8Projection& p : projections(spec, recipe)) {
    if (p.unit == unit) bytes += weight_bytes(p, recipe);
  }
  return bytes;
}

Fp8Linears::Fp8Linears(const TransformerSpec& spec, int64_t batch, int64_t seq, const Fp8Options& options,
                       NnOps& ops, bool flat)
    : recipe_(*options.recipe), history_(options.history), ops_(ops), projections_(projections(spec, recipe_)) {
  FARTHING_CHECK(recipe_.scaling != Fp8Scaling::kTensorDelayed ||
                     (history_ != nullptr && history_->tensors() == int64_t(projections_.size()) * kFp8Roles),
                 "fp8 delayed scaling needs an amax history of ", projections_.size() * kFp8Roles, " tensors");
  orientation_ = spec.orientation;
  for (size_t i = 0; i < projections_.size(); ++i) index_[projections_[i].weight] = i;
  weights_.resize(projections_.size());
  unit_codes_.resize(flat ? 1 : spec.layout.units().size());

  const int64_t m = batch * seq;
  const SlotSize s = slot_size(projections_, m);
  slot_elems_ = s.elems;
  slot_scales_ = s.scales;
  const int64_t slot_bytes = align64(s.elems) + align64(s.scales * 4);
  slots_buffer_ = Buffer(ops.device(), size_t(2 * slot_bytes), MemoryCategory::kActivations);
  for (int i = 0; i < 2; ++i) {
    auto* base = static_cast<uint8_t*>(slots_buffer_.data()) + i * slot_bytes;
    slots_[i].codes = base;
    slots_[i].scale_inv = reinterpret_cast<float*>(base + align64(s.elems));
  }
  if (const int64_t floats = scalar_floats(recipe_, projections_); floats > 0) {
    scalars_ = Buffer(ops.device(), size_t(align64(floats * 4)), MemoryCategory::kActivations);
    tensors_ = floats / 2;
    given_scales_ = static_cast<float*>(scalars_.data());
    step_amaxes_ = given_scales_ + tensors_;
    ops_.zero(step_amaxes_, tensors_);  // +0: the start of every tensor's max
  }
  const int64_t operand = workspace_operand_elems(projections_, m);
  workspace_ = Buffer(ops.device(),
                      size_t(align64(ops.fp8_matmul_workspace_bytes(operand, operand, recipe_.power_of_two_scales))),
                      MemoryCategory::kActivations);
}

void Fp8Linears::quantize_unit(int unit, const uint16_t* bf16_base, int64_t base_offset) {
  int64_t bytes = 0;
  for (const Fp8Projection& p : projections_) {
    if (unit < 0 || p.unit == unit) bytes += weight_bytes(p, recipe_);
  }
  if (bytes == 0) return;
  Buffer& buffer = unit_codes_[size_t(unit < 0 ? 0 : unit)];
  buffer = Buffer(ops_.device(), size_t(bytes), MemoryCategory::kWeights);
  auto* at = static_cast<uint8_t*>(buffer.data());
  for (size_t i = 0; i < projections_.size(); ++i) {
    const Fp8Projection& p = projections_[i];
    if (unit >= 0 && p.unit != unit) continue;
    Fp8QuantizeArgs a;
    a.x_bf16 = bf16_base + (p.weight - base_offset);
    a.rows = weight_rows(p, orientation_);
    a.cols = weight_cols(p, orientation_);
    a.tiling = fp8_tiling_of(recipe_, Fp8Role::kWeight, false);
    a.format = recipe_.weight;
    a.margin = recipe_.margin;
    a.power_of_two = recipe_.power_of_two_scales;
    a.codes = at;
    a.scale_inv = reinterpret_cast<float*>(at + align64(p.k * p.n));
    run_quantize(a, int64_t(i) * kFp8Roles + int64_t(Fp8Role::kWeight));
    weights_[i] = Fp8Operand{a.codes, a.scale_inv, a.rows, a.cols, a.tiling, a.format, a.power_of_two};
    at += weight_bytes(p, recipe_);
  }
}

void Fp8Linears::release_unit(int unit) {
  for (size_t i = 0; i < projections_.size(); ++i) {
    if (unit < 0 || projections_[i].unit == unit) weights_[i] = Fp8Operand{};
  }
  unit_codes_[size_t(unit < 0 ? 0 : unit)] = Buffer();
}

void Fp8Linears::run_quantize(Fp8QuantizeArgs args, int64_t tensor) {
  if (recipe_.scaling == Fp8Scaling::kTensorDelayed) {
    // NOTE: a tensor without history yet (its first step) is scaled from its own amax.
    if (history_->has_history(tensor)) {
      refresh_given_scales();
      args.given_scale = given_scales_ + tensor;
    }
    if (observing_) args.amax = step_amaxes_ + tensor;  // folded in (fp8_operand.h)
  }
  ops_.fp8_quantize(args);
}

void Fp8Linears::refresh_given_scales() {
  if (scales_version_ == history_->version()) return;
  std::vector<float> scales(size_t(tensors_), 1.0f);
  for (int64_t t = 0; t < tensors_; ++t) {
    const Fp8Format format = fp8_format_of(recipe_, Fp8Role(t % kFp8Roles));
    if (history_->has_history(t)) scales[size_t(t)] = history_->scale(t, recipe_, format);
  }
  ops_.copy(given_scales_, scales.data(), tensors_);  // host to the ops' memory
  scales_version_ = history_->version();
}

void Fp8Linears::collect_step_amaxes() {
  if (tensors_ == 0) return;
  std::vector<float> amaxes(static_cast<size_t>(tensors_));
  ops_.copy(amaxes.data(), step_amaxes_, tensors_);  // the ops' memory to the host: once a step
  for (int64_t t = 0; t < tensors_; ++t) history_->observe(t, amaxes[size_t(t)]);
  ops_.zero(step_amaxes_, tensors_);
}

Fp8Operand Fp8Linears::quantize(int slot, const float* x, int64_t rows, int64_t cols, size_t p, Fp8Role role,
                                bool reduced_over_rows) {
  Fp8QuantizeArgs a;
  a.x_f32 = x;
  a.rows = rows;
  a.cols = cols;
  a.tiling = fp8_tiling_of(recipe_, role, reduced_over_rows);
  a.format = fp8_format_of(recipe_, role);
  a.margin = recipe_.margin;
  a.power_of_two = recipe_.power_of_two_scales;
  a.codes = slots_[slot].codes;
  a.scale_inv = slots_[slot].scale_inv;
  FARTHING_CHECK(rows * cols <= slot_elems_ && nm::fp8_scale_count(a.tiling, rows, cols) <= slot_scales_,
                 "fp8 operand (", rows, " x ", cols, ") exceeds its slot");
  run_quantize(a, int64_t(p) * kFp8Roles + int64_t(role));
  return Fp8Operand{a.codes, a.scale_inv, rows, cols, a.tiling, a.format, a.power_of_two};
}

const Fp8Operand& Fp8Linears::weight_operand(size_t p) const {
  FARTHING_CHECK(weights_[p].codes != nullptr, "fp8 weight at element ", projections_[p].weight,
                 " is used but its unit was not quantized");
  return weights_[p];
}

void Fp8Linears::forward(float* y, const float* x, int64_t weight, int64_t m, WeightOrientation orient,
                         bool accumulate) {
  const size_t p = index_.at(weight);
  const Fp8Projection& pr = projections_[p];
  const Fp8Operand xq = quantize(0, x, m, pr.k, p, Fp8Role::kInput, false);
  GemmShape s{m, pr.n, pr.k};
  s.trans_b = orient == WeightOrientation::kOutIn ? Trans::kT : Trans::kN;
  ops_.matmul_fp8(s, xq, weight_operand(p), y, accumulate, workspace_.data());
}

void Fp8Linears::backward(float* dx, float* dw, int64_t weight, const float* dy, const float* x, int64_t m,
                          WeightOrientation orient) {
  const size_t p = index_.at(weight);
  const Fp8Projection& pr = projections_[p];
  // dx (M, K) = dy (M, N) . W: dy reduced over its columns.
  const Fp8Operand dy_rows = quantize(0, dy, m, pr.n, p, Fp8Role::kGradOutput, false);
  GemmShape sx{m, pr.k, pr.n};
  sx.trans_b = orient == WeightOrientation::kOutIn ? Trans::kN : Trans::kT;
  ops_.matmul_fp8(sx, dy_rows, weight_operand(p), dx, false, workspace_.data());
  // dW += dy^T x (W as (N, K)) or x^T dy (W as (K, N)): both reduced over the M rows. Per-tensor
  // scaling reuses dy's codes; block scaling needs them in tiles down the columns.
  const Fp8Operand dy_cols = recipe_.scaling == Fp8Scaling::kBlock
                                 ? quantize(0, dy, m, pr.n, p, Fp8Role::kGradOutput, true)
                                 : dy_rows;
  const Fp8Operand x_cols = quantize(1, x, m, pr.k, p, Fp8Role::kInput, true);
  if (orient == WeightOrientation::kOutIn) {
    GemmShape sw{pr.n, pr.k, m, 0, 0, 0, Trans::kT, Trans::kN};
    ops_.matmul_fp8(sw, dy_cols, x_cols, dw, true, workspace_.data());
  } else {
    GemmShape sw{pr.k, pr.n, m, 0, 0, 0, Trans::kT, Trans::kN};
    ops_.matmul_fp8(sw, x_cols, dy_cols, dw, true, workspace_.data());
  }
}

}  // namespace farthing::models
