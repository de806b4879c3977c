// fp4_linears.cpp — see fp4_linears.h.
#include "models/common/fp4_linears.h"

#include <algorithm>

#include "framework/core/error.h"
#include "kernels/numerics/hadamard.h"

namespace farthing::models {

namespace nm = farthing::numerics;

namespace {

int64_t align64(int64_t bytes) { return (bytes + 63) / 64 * 64; }

// The carving of the one buffer, shared by buffer_bytes and the constructor.
struct Fp4BufferLayout {
  int64_t slot_elems = 0;  // the largest operand
  int64_t codes = 0, scales = 0, slot = 0;  // bytes of one slot's parts and of a slot
  int64_t cast_workspace = 0, signs = 0, gemm_workspace = 0;
  int64_t total() const { return 2 * slot + cast_workspace + signs + gemm_workspace; }
};

Fp4BufferLayout buffer_layout(const std::vector<Fp4Projection>& projections, int64_t m, const Fp4Recipe& recipe,
                              nm::Fp4GemmEngine engine) {
  Fp4BufferLayout l;
  int64_t gemm = 0;
  const auto gemm_bytes = [&](int64_t rows, int64_t cols, int64_t k) {
    return nm::fp4_matmul_workspace_bytes(engine, rows, cols, k, recipe.block);
  };
  for (const Fp4Projection& p : projections) {
    l.slot_elems = std::max({l.slot_elems, m * p.k, m * p.n, p.k * p.n});
    gemm = std::max({gemm, gemm_bytes(m, p.n, p.k), gemm_bytes(m, p.k, p.n), gemm_bytes(p.n, p.k, m)});
  }
  // Scales: at most one per block of a row; a row of the largest operand may be as short as one
  // block's tail, so bound by elements (every block holds at least one element).
  l.codes = align64(l.slot_elems);
  l.scales = align64(l.slot_elems);
  l.slot = l.codes + l.scales + 64;  // + the tensor's decode scale
  l.cast_workspace = align64(l.slot_elems * 4);
  l.signs = align64(int64_t(std::max(recipe.rht_size, 1)) * 4);
  l.gemm_workspace = align64(gemm);
  return l;
}

}  // namespace

std::vector<Fp4Projection> Fp4Linears::projections(const TransformerSpec& spec, const Fp4Recipe& recipe) {
  const int blocks = int(spec.blocks.size());
  const int fp4_blocks = blocks - fp4_bf16_last_blocks(recipe, blocks);
  std::vector<Fp4Projection> out;
  for (int i = 0; i < fp4_blocks; ++i) {
    for (const BlockProjection& bp : block_projections(spec.config, spec.blocks[size_t(i)])) {
      out.push_back({bp.weight, bp.k, bp.n});
    }
  }
  return out;
}

numerics::Fp4GemmEngine fp4_gemm_engine(Device device) {
  return device.kind == DeviceKind::kCuda ? numerics::Fp4GemmEngine::kCublasLt : numerics::Fp4GemmEngine::kEmulated;
}

int64_t Fp4Linears::buffer_bytes(const TransformerSpec& spec, int64_t batch, int64_t seq, const Fp4Recipe& recipe,
                                 numerics::Fp4GemmEngine engine) {
  const std::vector<Fp4Projection> ps = projections(spec, recipe);
  return ps.empty() ? 0 : buffer_layout(ps, batch * seq, recipe, engine).total();
}

Fp4Linears::Fp4Linears(const TransformerSpec& spec, int64_t batch, int64_t seq, const Fp4Options& options,
                       NnOps& ops)
    : recipe_(*options.recipe), seed_(options.seed), ops_(ops), projections_(projections(spec, recipe_)) {
  for (size_t i = 0; i < projections_.size(); ++i) index_[projections_[i].weight] = i;
  if (projections_.empty()) return;
  const Fp4BufferLayout l = buffer_layout(projections_, batch * seq, recipe_, fp4_gemm_engine(ops.device()));
  buffer_ = Buffer(ops.device(), size_t(l.total()), MemoryCategory::kActivations);
  auto* at = static_cast<uint8_t*>(buffer_.data());
  for (Slot& s : slots_) {
    s.codes = at;
    s.scales = at + l.codes;
    s.decode_scale = reinterpret_cast<float*>(at + l.codes + l.scales);
    at += l.slot;
  }
  slot_elems_ = l.slot_elems;
  cast_workspace_ = reinterpret_cast<float*>(at);
  signs_ = reinterpret_cast<float*>(at + l.cast_workspace);
  gemm_workspace_ = at + l.cast_workspace + l.signs;
}

Fp4Operand Fp4Linears::quantize(int slot, Source src, int64_t rows, int64_t cols, Fp4Gemm gemm, Fp4OperandRole role) {
  FARTHING_CHECK(rows * cols <= slot_elems_, "fp4 operand (", rows, " x ", cols, ") exceeds its slot");
  Fp4QuantizeArgs a;
  a.x_f32 = src.f32;
  a.x_bf16 = src.bf16;
  a.rows = rows;
  a.cols = cols;
  a.transposed = src.transposed;
  a.block = recipe_.block;
  a.scale = recipe_.scale;
  a.block_2d = fp4_block_2d(recipe_, role);
  if (fp4_uses_rht(recipe_, gemm)) {
    a.rht_size = recipe_.rht_size;
    a.rht_signs = signs_;
  }
  a.stochastic = fp4_rounds_stochastically(recipe_, gemm, role);
  a.sr_prescale = a.stochastic && recipe_.sr_prescale;
  if (a.stochastic) {
    a.key = nm::RandomKey{seed_, step_, nm::RandomPurpose::kFp4Gradient};
    a.first_index = stochastic_casts_++ << 40;
  }
  a.codes = slots_[slot].codes;
  a.scales = slots_[slot].scales;
  a.decode_scale = slots_[slot].decode_scale;
  a.workspace = cast_workspace_;
  ops_.fp4_quantize(a);
  return Fp4Operand{a.codes, a.scales, a.decode_scale, rows, cols, a.block, a.scale};
}

void Fp4Linears::gemm(size_t p, Fp4Gemm g, float* c, bool accumulate, int64_t m, int64_t n, int64_t k, Source a,
                      Fp4OperandRole a_role, Source b, Fp4OperandRole b_role) {
  if (fp4_uses_rht(recipe_, g)) {  // the same signs for both operands: (R a)·(R b) = a·b
    const int size = recipe_.rht_size;
    const nm::RandomKey key{seed_, step_, nm::RandomPurpose::kHadamardSigns};
    std::vector<float> signs(static_cast<size_t>(size));
    const uint64_t first = (uint64_t(p) * 3 + uint64_t(g)) * uint64_t(size);
    for (int i = 0; i < size; ++i) signs[size_t(i)] = nm::hadamard_sign(key, first + uint64_t(i));
    ops_.copy(signs_, signs.data(), size);  // host to the ops' memory
  }
  const Fp4Operand qa = quantize(0, a, m, k, g, a_role);
  const Fp4Operand qb = quantize(1, b, n, k, g, b_role);
  ops_.matmul_fp4(m, n, k, qa, qb, c, accumulate, gemm_workspace_);
}

void Fp4Linears::forward(float* y, const float* x, const uint16_t* w, int64_t weight, int64_t m,
                         WeightOrientation orient, bool accumulate) {
  const size_t p = index_.at(weight);
  const Fp4Projection& pr = projections_[p];
  // W as (N, K): stored so for torch's Linear, transposed for GPT-2's Conv1D (K, N).
  gemm(p, Fp4Gemm::kForward, y, accumulate, m, pr.n, pr.k, Source{x, nullptr, false}, Fp4OperandRole::kInput,
       Source{nullptr, w, orient == WeightOrientation::kInOut}, Fp4OperandRole::kWeight);
}

void Fp4Linears::backward(float* dx, float* dw, const uint16_t* w, int64_t weight, const float* dy, const float* x,
                          int64_t m, WeightOrientation orient) {
  const size_t p = index_.at(weight);
  const Fp4Projection& pr = projections_[p];
  // dx (M, K) = dy (M, N) · (W^T as (K, N))^T.
  gemm(p, Fp4Gemm::kDgrad, dx, false, m, pr.k, pr.n, Source{dy, nullptr, false}, Fp4OperandRole::kGradOutput,
       Source{nullptr, w, orient == WeightOrientation::kOutIn}, Fp4OperandRole::kWeight);
  // dW: reduced over the M rows, so both operands are the transposes of dy (M, N) and x (M, K).
  const Source dy_t{dy, nullptr, true}, x_t{x, nullptr, true};
  if (orient == WeightOrientation::kOutIn) {
    gemm(p, Fp4Gemm::kWgrad, dw, true, pr.n, pr.k, m, dy_t, Fp4OperandRole::kGradOutput, x_t, Fp4OperandRole::kInput);
  } else {
    gemm(p, Fp4Gemm::kWgrad, dw, true, pr.k, pr.n, m, x_t, Fp4OperandRole::kInput, dy_t, Fp4OperandRole::kGradOutput);
  }
}

}  // namespace farthing::models
