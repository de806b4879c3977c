// transformer.cpp — see transformer.h. Each function is one line of the model's maths;
// shapes in comments use M = batch * seq rows, C = dim, H = hidden, F = H (GPT-2) or 2H
// (Llama gate|up), Sq = (Hq + 2 Hkv) * head_dim, V = vocab.
#include "models/common/transformer.h"
#include "framework/backend/buffer.h"
#include "models/common/rope.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "framework/backend/backend.h"
#include "kernels/numerics/bf16.h"

namespace farthing::models {

namespace {

int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

// The unit whose span holds global element `offset` (units are in offset order).
int unit_holding(const FlatLayout& layout, int64_t offset) {
  const auto& units = layout.units();
  const auto after = std::upper_bound(units.begin(), units.end(), offset,
                                      [](int64_t o, const ParamUnit& u) { return o < u.begin_elems; });
  FARTHING_CHECK(after != units.begin(), "offset ", offset, " precedes the first unit");
  return int(after - units.begin()) - 1;
}

uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

// Carves consecutive 64-byte-aligned float arrays out of one buffer (or, with no base, counts them).
struct Transformer::Carver {
  float* base;
  int64_t used = 0;
  float* take(int64_t n) {
    float* p = base ? base + used : nullptr;
    used += round16(n);
    return p;
  }
  // n activations of `dtype` (kF32 or kBF16; bf16 takes half the floats).
  ActRef take_act(int64_t n, GemmDtype dtype) {
    if (dtype != GemmDtype::kBF16) return ActRef(take(n));
    return ActRef::bf16(reinterpret_cast<uint16_t*>(take((n + 1) / 2)));
  }
};

GemmDtype gemm_dtype_of(ComputeMode mode) {
  return mode == ComputeMode::kBF16 ? GemmDtype::kBF16
         : mode == ComputeMode::kF16 ? GemmDtype::kF16
                                      : GemmDtype::kF32;
}

GemmDtype attention_dtype_of(ComputeMode mode) {
  return mode == ComputeMode::kBF16 ? GemmDtype::kBF16 : GemmDtype::kF32;
}

int64_t logits_row_stride(int64_t vocab) { return (vocab + kLogitsRowAlign - 1) / kLogitsRowAlign * kLogitsRowAlign; }

GemmDtype stored_act_dtype(const ModelOptions& options) {
  const bool bf16 = options.compute == ComputeMode::kBF16 && options.bf16_activations &&
                    options.fp8.recipe == nullptr && options.fp4.recipe == nullptr;
  return bf16 ? GemmDtype::kBF16 : GemmDtype::kF32;
}

Transformer::Transformer(TransformerSpec spec, int64_t batch, int64_t seq, ModelOptions options)
    : spec_(std::move(spec)),
      batch_(batch),
      seq_(seq),
      options_(options),
      ops_(options.ops != nullptr ? *options.ops : backend_for(Device::cpu()).nn()) {
  const ModelConfig& c = spec_.config;
  c.validate();
  FARTHING_CHECK(batch > 0 && seq > 0 && seq <= c.max_seq_len, "model '", c.name, "': batch(",
                 batch, ") and seq(", seq, ") must be positive and seq <= max_seq_len(",
                 c.max_seq_len, ")");
  FARTHING_CHECK(options.loss_chunk_rows > 0, "loss_chunk_rows must be positive");
  FARTHING_CHECK(options.fp8.recipe == nullptr || options.compute == ComputeMode::kBF16,
                 "model '", c.name, "': FP8 linear layers run on top of bf16 compute");
  FARTHING_CHECK(options.fp4.recipe == nullptr || (options.compute == ComputeMode::kBF16 && options.fp8.recipe == nullptr),
                 "model '", c.name, "': FP4 linear layers run on top of bf16 compute, without FP8 layers");
  const int64_t n = spec_.layout.total_elems();
  if (options.unit_storage == nullptr) {
    params_ = Buffer(ops_.device(), size_t(n) * 4, MemoryCategory::kWeights);
    grads_ = Buffer(ops_.device(), size_t(n) * 4, MemoryCategory::kGrads);
    ops_.zero(params(), n);
    ops_.zero(grads(), n);
    if (options.compute != ComputeMode::kF32) {
      working_ = Buffer(ops_.device(), size_t(n) * 2, MemoryCategory::kWeights);
    }
  } else {
    const size_t units = spec_.layout.units().size();
    unit_params_.assign(units, nullptr);
    unit_working_.resize(units);
    unit_grads_.assign(units, nullptr);
    unit_bf16_.assign(units, nullptr);
    unit_vectors_.resize(units);
    unit_vector_entries_.resize(units);
    for (const ParamEntry& e : spec_.layout.entries()) {  // the 1-D tensors widened under bf16 compute
      if (e.shape.rank == 1) unit_vector_entries_[size_t(e.unit)].push_back(&e);
    }
    unit_grad_vectors_.resize(units);
    unit_grad_write_.assign(units, dist::UnitStorage::GradWrite::kAdd);
    unit_grad_gaps_.resize(units);
    std::vector<int64_t> cursor;  // per unit: the end of its last tensor so far
    for (const ParamUnit& unit : spec_.layout.units()) cursor.push_back(unit.begin_elems);
    for (const ParamEntry& e : spec_.layout.entries()) {  // the alignment gaps before each tensor
      const ParamUnit& unit = spec_.layout.units()[size_t(e.unit)];
      int64_t& end = cursor[size_t(e.unit)];
      if (e.offset_elems > end) unit_grad_gaps_[size_t(e.unit)].push_back({end - unit.begin_elems, e.offset_elems - end});
      end = e.offset_elems + e.numel();
    }
    for (size_t u = 0; u < units; ++u) unit_grad_adds_.push_back(unit_grad_adds(spec_, int(u), options, batch * seq));
  }

  // Sized by carving from nothing, then carved from the buffers: buffer_bytes() sizes the same way.
  Carver acts_size{nullptr}, scratch_size{nullptr};
  Carved sized;
  carve(c, batch, seq, options, acts_size, scratch_size, sized);
  acts_ = Buffer(ops_.device(), size_t(acts_size.used) * 4, MemoryCategory::kActivations);
  scratch_ = Buffer(ops_.device(), size_t(scratch_size.used) * 4, MemoryCategory::kActivations);
  Carver acts{static_cast<float*>(acts_.data())}, scratch{static_cast<float*>(scratch_.data())};
  Carved carved;
  carve(c, batch, seq, options, acts, scratch, carved);
  resid_ = carved.resid;
  layer_acts_ = std::move(carved.layer_acts);
  nf_ = carved.nf;
  nf_mean_ = carved.nf_mean;
  nf_rstd_ = carved.nf_rstd;
  dres_ = carved.dres;
  dn_ = carved.dn;
  dqkv_ = carved.dqkv;
  datt_ = carved.datt;
  dfc_ = carved.dfc;
  dact_ = carved.dact;
  att_scratch_ = carved.att_scratch;
  logits_ = carved.logits;
  logits_stride_ = logits_row_stride(c.vocab_size);
  bf16_slot_elems_ = narrow_slot_elems(c, batch, seq, options);
  if (bf16_slot_elems_[0] > 0) {
    bf16_scratch_ = Buffer(ops_.device(), size_t(bf16_slot_elems_[0] + bf16_slot_elems_[1]) * 2,
                           MemoryCategory::kActivations);
    bf16_slots_[0] = static_cast<uint16_t*>(bf16_scratch_.data());
    bf16_slots_[1] = bf16_slots_[0] + bf16_slot_elems_[0];
  }

  if (options.fp8.recipe != nullptr) {
    fp8_ = std::make_unique<Fp8Linears>(spec_, batch, seq, options.fp8, ops_, options.unit_storage == nullptr);
  }
  if (options.fp4.recipe != nullptr) fp4_ = std::make_unique<Fp4Linears>(spec_, batch, seq, options.fp4, ops_);
  inputs_ = Buffer(ops_.device(), size_t(input_elems(c, batch, seq)) * 4, MemoryCategory::kActivations);
  own_loss_sum_ = static_cast<double*>(inputs_.data());
  tokens_ = reinterpret_cast<int32_t*>(own_loss_sum_ + 1);
  targets_ = tokens_ + batch * seq;
  doc_start_ = targets_ + batch * seq;
  token_slots_ = doc_start_ + batch * seq;
  slot_tokens_ = token_slots_ + batch * seq;
  float* after_ids = reinterpret_cast<float*>(slot_tokens_ + batch * seq);
  if (c.family == ModelFamily::kLlama) {
    std::vector<float> cos, sin;
    rope_tables(c, seq, cos, sin);
    rope_cos_ = after_ids;
    rope_sin_ = rope_cos_ + cos.size();
    ops_.copy(rope_cos_, cos.data(), int64_t(cos.size()));  // host to the ops' memory
    ops_.copy(rope_sin_, sin.data(), int64_t(sin.size()));
    after_ids = rope_sin_ + sin.size();
    if (!c.sliding_layers.empty()) {
      rope_tables(c, seq, cos, sin, /*sliding=*/true);
      local_cos_ = after_ids;
      local_sin_ = local_cos_ + cos.size();
      ops_.copy(local_cos_, cos.data(), int64_t(cos.size()));
      ops_.copy(local_sin_, sin.data(), int64_t(sin.size()));
      after_ids = local_sin_ + sin.size();
    }
  }
  gain_width_ = gain_width(c);
  if (gain_width_ > 0) {
    norm_ones_ = after_ids;
    norm_gains_ = norm_ones_ + gain_width_;
    const std::vector<float> ones(size_t(gain_width_), 1.0f);
    ops_.copy(norm_ones_, ones.data(), gain_width_);
  }
}

int64_t Transformer::gain_width(const ModelConfig& c) {
  return c.norm_plus_one ? std::max(c.dim, c.head_dim()) : 0;
}

int64_t Transformer::input_elems(const ModelConfig& c, int64_t batch, int64_t seq) {
  const int64_t tables = c.sliding_layers.empty() ? 1 : 2;
  const int64_t rope = c.family == ModelFamily::kLlama ? tables * 2 * seq * (c.head_dim() / 2) : 0;
  return 2 + 5 * batch * seq + rope + (1 + kNormSlots) * gain_width(c);  // 2: the loss sum, a double
}

const float* Transformer::norm_gain(NormSlot slot, int64_t offset, int64_t n) {
  float* gain = norm_gains_ + int64_t(slot) * gain_width_;
  norm_gain_plus_one(ops_, gain, norm_ones_, P(offset), n);
  return gain;
}

void Transformer::set_document_starts(const int32_t* doc_start) {
  if (doc_start == nullptr) {
    documents_ = 0;
    return;
  }
  int64_t documents = 0, longest = 0;
  for (int64_t b = 0; b < batch_; ++b) {
    for (int64_t t = 0; t < seq_; ++t) {
      const int32_t start = doc_start[b * seq_ + t];
      const int32_t before = t > 0 ? doc_start[b * seq_ + t - 1] : 0;
      // A row starts its own document (start == t) or continues the one before it.
      FARTHING_CHECK(start == t || (start == before && start < t), "document start ", start, " at row ", t,
                     " of sequence ", b, ": expected ", t, " (a new document) or ", before,
                     " (the document of the row before)");
      documents += start == t;
      longest = std::max<int64_t>(longest, t - start + 1);
    }
  }
  upload_ids(doc_start_, doc_start);
  documents_ = documents;
  longest_document_ = longest;
}

void Transformer::upload_ids(int32_t* to, const int32_t* from) {
  const int64_t M = batch_ * seq_;
  const Device device = ops_.device();
  backend_for(device).copy(Tensor(to, DType::kI32, Shape{M}, device), Tensor(const_cast<int32_t*>(from), DType::kI32, Shape{M}));
}

// Slot 0: what linear_forward narrows (x, where it is fp32) and linear_backward's dy where it is
// fp32 (up to the widest projection, or a chunk of logits at their padded stride). Slot 1:
// linear_backward's x. Under bf16 activations every GEMM operand is stored as bf16, the logits
// and their gradient too: neither slot is needed.
std::array<int64_t, 2> Transformer::narrow_slot_elems(const ModelConfig& c, int64_t batch, int64_t seq,
                                                      const ModelOptions& options) {
  if (options.compute == ComputeMode::kF32) return {0, 0};
  const int64_t M = batch * seq, C = c.dim, H = c.hidden_dim, F = c.family == ModelFamily::kLlama ? 2 * H : H;
  const int64_t R = std::min(options.loss_chunk_rows, M);
  const bool bf16_inputs = stored_act_dtype(options) == GemmDtype::kBF16;
  if (bf16_inputs) return {0, 0};
  // Slot 1 holds linear_backward's x: a norm's output (C), the MLP's activation (H) or attention's
  // output (attn_dim, wider than C where head_dim is set apart).
  return {round16(std::max(M * std::max({C, H, F, c.qkv_dim()}), R * logits_row_stride(c.vocab_size))),
          round16(M * std::max({C, H, c.attn_dim()}))};
}

// The activations (residual stream, each stored block's activations, the final norm) and the
// backward scratch, carved in this order from two buffers.
void Transformer::carve(const ModelConfig& c, int64_t batch, int64_t seq, const ModelOptions& options, Carver& acts,
                        Carver& scratch, Carved& out) {
  const int64_t M = batch * seq, C = c.dim, H = c.hidden_dim, Sq = c.qkv_dim();
  const int64_t F = c.family == ModelFamily::kLlama ? 2 * H : H;
  const int64_t R = std::min(options.loss_chunk_rows, M);
  const int64_t sets = options.checkpointing == Checkpointing::kPerBlock ? 1 : c.n_layers;
  const GemmDtype stored = stored_act_dtype(options);
  out.resid = acts.take_act((c.n_layers + 1) * M * C, stored);
  for (int64_t s = 0; s < sets; ++s) {
    BlockActs a;
    a.n1 = acts.take_act(M * C, stored);
    a.n1_mean = acts.take(M);
    a.n1_rstd = acts.take(M);
    if (c.qk_norm) {
      a.qkv_raw = acts.take_act(M * Sq, stored);
      a.qk_rstd = acts.take(M * (c.n_heads + c.n_kv_heads));
    }
    a.qkv = acts.take_act(M * Sq, stored);
    a.att = acts.take_act(M * c.attn_dim(), stored);
    a.lse = acts.take(batch * c.n_heads * seq);
    a.mid = acts.take_act(M * C, stored);
    a.n2 = acts.take_act(M * C, stored);
    a.n2_mean = acts.take(M);
    a.n2_rstd = acts.take(M);
    a.fc = acts.take_act(M * F, stored);
    a.act = acts.take_act(M * H, stored);
    if (c.sandwich_norms) {
      a.attn_out = acts.take_act(M * C, stored);
      a.attn_out_rstd = acts.take(M);
      a.mlp_out = acts.take_act(M * C, stored);
      a.mlp_out_rstd = acts.take(M);
    }
    out.layer_acts.push_back(a);
  }
  out.nf = acts.take_act(M * C, stored);
  out.nf_mean = acts.take(M);
  out.nf_rstd = acts.take(M);

  out.dres = scratch.take_act(M * C, stored);
  out.dn = scratch.take_act(M * C, stored);
  out.dqkv = scratch.take_act(M * Sq, stored);
  out.datt = scratch.take_act(M * c.attn_dim(), stored);
  out.dfc = scratch.take_act(M * F, stored);
  out.dact = scratch.take_act(M * H, stored);
  out.att_scratch = scratch.take(2 * batch * c.n_heads * seq * c.head_dim());
  out.logits = scratch.take_act(R * logits_row_stride(c.vocab_size), stored);  // rows padded: logits_row_stride
}

TransformerBufferBytes Transformer::buffer_bytes(const TransformerSpec& spec, int64_t batch, int64_t seq,
                                                 const ModelOptions& options) {
  const int64_t n = spec.layout.total_elems();
  TransformerBufferBytes b;
  if (options.unit_storage == nullptr) {
    b.params = b.grads = n * 4;
    b.working = options.compute == ComputeMode::kF32 ? 0 : n * 2;
  }
  Carver acts{nullptr}, scratch{nullptr};
  Carved sized;
  carve(spec.config, batch, seq, options, acts, scratch, sized);
  b.activations = acts.used * 4;
  b.scratch = scratch.used * 4;
  const std::array<int64_t, 2> slots = narrow_slot_elems(spec.config, batch, seq, options);
  b.narrow_scratch = (slots[0] + slots[1]) * 2;
  b.inputs = input_elems(spec.config, batch, seq) * 4;
  if (options.fp8.recipe != nullptr) {
    const numerics::Fp8GemmEngine engine =
        options.ops != nullptr ? fp8_gemm_engine(options.ops->device()) : options.fp8.planned_engine;
    b.fp8 = Fp8Linears::buffer_bytes(spec, batch, seq, *options.fp8.recipe, engine);
    if (options.unit_storage == nullptr) b.working += Fp8Linears::flat_weight_bytes(spec, *options.fp8.recipe);
  }
  if (options.fp4.recipe != nullptr) {
    const numerics::Fp4GemmEngine engine =
        options.ops != nullptr ? fp4_gemm_engine(options.ops->device()) : options.fp4.planned_engine;
    b.fp8 += Fp4Linears::buffer_bytes(spec, batch, seq, *options.fp4.recipe, engine);
  }
  return b;
}

void Transformer::init_weights(uint64_t seed, float std) {
  FARTHING_CHECK(options_.unit_storage == nullptr, "init_weights: a model over a UnitStorage has no parameter "
                 "buffer; initialise a flat buffer with init_weights(spec, ...) and hand it to the storage");
  init_weights(spec_, params(), seed, std);
}

void Transformer::init_weights(const TransformerSpec& spec, float* p, uint64_t seed, float std) {
  init_weights_range(spec, p, 0, spec.layout.total_elems(), seed, std);
}

void Transformer::init_weights_range(const TransformerSpec& spec, float* p, int64_t begin, int64_t end, uint64_t seed,
                                     float std) {
  // p[g - begin] is global element g: the values depend only on (seed, g), not on the range.
  std::memset(p, 0, size_t(end - begin) * sizeof(float));
  for (const ParamEntry& e : spec.layout.entries()) {
    const int64_t first = std::max(begin, e.offset_elems), last = std::min(end, e.offset_elems + e.numel());
    if (first >= last) continue;
    // NOTE: norm gains start at 1 (Gemma 3's w of 1 + w at 0) and biases at 0, as in the reference
    // implementations.
    const bool one = std::find(spec.ones.begin(), spec.ones.end(), e.offset_elems) != spec.ones.end();
    const bool zero = std::find(spec.zeros.begin(), spec.zeros.end(), e.offset_elems) != spec.zeros.end();
    if (one || zero || e.name.ends_with(".bias")) {
      std::fill(p + (first - begin), p + (last - begin), one ? 1.0f : 0.0f);
      continue;
    }
#pragma omp parallel for schedule(static)
    for (int64_t g = first; g < last; ++g) {
      const uint64_t r1 = splitmix(seed ^ splitmix(2 * uint64_t(g))), r2 = splitmix(seed ^ splitmix(2 * uint64_t(g) + 1));
      const double u1 = (double(r1 >> 11) + 1.0) * (1.0 / 9007199254740992.0);
      const double u2 = double(r2 >> 11) * (1.0 / 9007199254740992.0);
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
      p[g - begin] = float(z * double(std));
    }
  }
}

void Transformer::zero_grads() {
  if (options_.unit_storage == nullptr) ops_.zero(grads(), layout().total_elems());
}

int Transformer::unit_of(int64_t offset) const { return unit_holding(layout(), offset); }

int64_t unit_vector_elems(const FlatLayout& layout, int unit) {
  int64_t n = 0;
  for (const ParamEntry& e : layout.entries()) {
    if (e.unit == unit && e.shape.rank == 1) n += e.numel();
  }
  return n;
}

const float* Transformer::P(int64_t offset) const {
  if (options_.unit_storage == nullptr) return params() + offset;
  const int u = unit_of(offset);
  if (unit_bf16_[size_t(u)] != nullptr) {  // bf16 compute: the unit's 1-D tensors, widened on acquire
    int64_t position = 0;
    for (const ParamEntry* e : unit_vector_entries_[size_t(u)]) {
      if (e->offset_elems == offset) return static_cast<const float*>(unit_vectors_[size_t(u)].data()) + position;
      position += e->numel();
    }
    FARTHING_FAIL("element ", offset, " of unit ", layout().units()[size_t(u)].name, " is read as fp32 under bf16 "
                  "compute, but only the starts of 1-D tensors (norm weights, biases) are widened");
  }
  FARTHING_CHECK(unit_params_[size_t(u)] != nullptr, "unit ", layout().units()[size_t(u)].name,
                 " is used but was not acquired");
  return unit_params_[size_t(u)] + (offset - layout().units()[size_t(u)].begin_elems);
}

float* Transformer::G(int64_t offset) {
  if (options_.unit_storage == nullptr) return grads() + offset;
  const int u = unit_of(offset);
  const bool once = unit_grad_adds_[size_t(u)] == dist::UnitStorage::GradAdds::kOnce;
  float*& g = unit_grads_[size_t(u)];
  if (g == nullptr) {
    const dist::UnitStorage::UnitGrads acquired = options_.unit_storage->acquire_grads(u, unit_grad_adds_[size_t(u)]);
    g = acquired.data;
    unit_grad_write_[size_t(u)] = acquired.write;
    FARTHING_CHECK(once || acquired.write == dist::UnitStorage::GradWrite::kAdd, "unit ",
                   layout().units()[size_t(u)].name, "'s gradients take several additions, but the storage "
                   "handed out a buffer to overwrite");
    if (acquired.write == dist::UnitStorage::GradWrite::kOverwrite) {  // no tensor writes the gaps between them
      for (const auto& [at, count] : unit_grad_gaps_[size_t(u)]) ops_.zero(g + at, count);
    }
    if (once && u == unit_of(spec_.tok_emb) && embedding_rows_set_aside()) set_aside_embedding_rows(acquired);
    const int64_t n = unit_vector_elems(layout(), u);
    if (once && n > 0) {  // planned: UnitBufferBytes::grad_scratch
      unit_grad_vectors_[size_t(u)] = Buffer(ops_.device(), size_t(n) * 4, MemoryCategory::kGrads);
      ops_.zero(static_cast<float*>(unit_grad_vectors_[size_t(u)].data()), n);
    }
  }
  if (once) {
    // NOTE (numerics): a 1-D tensor's gradient gets one addition per row (norms, biases), so it
    // sums from zero here and is written to, or added to, the unit's gradients once, in
    // unit_grads_done.
    int64_t position = 0;
    for (const ParamEntry* e : unit_vector_entries_[size_t(u)]) {
      if (e->offset_elems == offset) return static_cast<float*>(unit_grad_vectors_[size_t(u)].data()) + position;
      position += e->numel();
    }
  }
  return g + (offset - layout().units()[size_t(u)].begin_elems);
}

dist::UnitStorage::GradAdds Transformer::unit_grad_adds(const TransformerSpec& spec, int unit,
                                                        const ModelOptions& options, int64_t rows) {
  using Adds = dist::UnitStorage::GradAdds;
  const FlatLayout& layout = spec.layout;
  // A tied head's chunks add to the embedding's unit, as an untied head's to its own.
  if (unit == unit_holding(layout, spec.head_w) && rows > options.loss_chunk_rows) return Adds::kSeveral;
  if (options.fp4.recipe != nullptr) return Adds::kSeveral;
  if (options.fp8.recipe != nullptr && Fp8Linears::unit_bytes(spec, unit, *options.fp8.recipe) > 0) return Adds::kSeveral;
  return Adds::kOnce;
}

// NOTE (numerics): a kOnce unit's product is written (beta 0) or added whole
// (matmul_add_product, the same product): P, or C + P. P is the bits 0 + P would have, but for
// a -0 product (0 + -0 is +0); the running sums then read ((P0 + P1) + P2) on one rank or over
// ranks alike, since the reduction starts from rank 0's own value.
void Transformer::weight_grad_gemm(int64_t w, GemmDtype dtype, const GemmShape& shape, const void* a, const void* b,
                                   int64_t bias, BiasGradOf bias_side, ActRef dy) {
  float* dw = G(w);
  const int u = unit_of(w);
  GradInto into = GradInto::kAddProduct;
  if (options_.unit_storage == nullptr || unit_grad_adds_[size_t(u)] != dist::UnitStorage::GradAdds::kOnce) {
    into = GradInto::kAccumulate;
  } else if (unit_grad_write_[size_t(u)] == dist::UnitStorage::GradWrite::kOverwrite) {
    into = GradInto::kOverwrite;
  }
  if (bias >= 0) {
    ops_.matmul_bias_grad(dtype, shape, a, b, dw, into, bias_side, dy, G(bias));
  } else if (into == GradInto::kAddProduct) {
    ops_.matmul_add_product(dtype, shape, a, b, dw);
  } else {
    ops_.matmul(dtype, shape, a, b, dw, into == GradInto::kAccumulate);
  }
}

// What acquire_unit below allocates beside the storage's buffers.
UnitBufferBytes Transformer::unit_buffer_bytes(const TransformerSpec& spec, int unit, const ModelOptions& options,
                                               int64_t rows) {
  UnitBufferBytes b;
  b.grad_adds = unit_grad_adds(spec, unit, options, rows);
  if (b.grad_adds == dist::UnitStorage::GradAdds::kOnce) {
    b.grad_scratch = unit_vector_elems(spec.layout, unit) * 4;
    const ParamUnit& u = spec.layout.units()[size_t(unit)];
    int64_t tensors = 0;
    for (const ParamEntry& e : spec.layout.entries()) tensors += e.unit == unit ? e.numel() : 0;
    b.overwrite_zeroed_elems = u.span_elems() - tensors;  // the gaps (unit_grad_gaps_)
    if (unit == unit_holding(spec.layout, spec.tok_emb)) {  // embedding_backward_once, set_aside_embedding_rows
      const int64_t C = spec.config.dim, positions = spec.pos_emb >= 0 ? spec.config.max_seq_len * C : 0;
      b.grad_scratch += (rows * C + positions) * 4;
      // Tied, the head's GEMM writes the table; untied, its rows are added onto zeros.
      if (unit != unit_holding(spec.layout, spec.head_w)) b.overwrite_zeroed_elems += spec.config.vocab_size * C;
      b.overwrite_zeroed_elems += positions;
    }
  }
  b.reads_bf16 = options.compute == ComputeMode::kBF16;
  if (b.reads_bf16) {
    b.weights = unit_vector_elems(spec.layout, unit) * 4;  // unit_vectors_
    if (options.fp8.recipe != nullptr) b.weights += Fp8Linears::unit_bytes(spec, unit, *options.fp8.recipe);
  } else if (options.compute != ComputeMode::kF32) {
    b.weights = spec.layout.units()[size_t(unit)].span_elems() * 2;  // unit_working_
  }
  return b;
}

void Transformer::acquire_unit(int u) {
  if (options_.unit_storage == nullptr || unit_params_[size_t(u)] != nullptr || unit_bf16_[size_t(u)] != nullptr) return;
  if (options_.compute == ComputeMode::kBF16) {
    // NOTE: the GEMMs read the store's bf16 weights as they are (the same bits that narrowing an
    // exactly widened copy would give); only the 1-D tensors (norm weights, biases) are widened,
    // and the embedding is looked up from bf16 rows.
    const uint16_t* w = options_.unit_storage->acquire_bf16_params(u);
    unit_bf16_[size_t(u)] = w;
    const int64_t n = unit_vector_elems(layout(), u);
    unit_vectors_[size_t(u)] = Buffer(ops_.device(), size_t(n) * 4, MemoryCategory::kWeights);
    auto* dst = static_cast<float*>(unit_vectors_[size_t(u)].data());
    const int64_t begin = layout().units()[size_t(u)].begin_elems;
    for (const ParamEntry* e : unit_vector_entries_[size_t(u)]) {
      ops_.widen(GemmDtype::kBF16, dst, w + (e->offset_elems - begin), e->numel());
      dst += e->numel();
    }
    if (fp8_) fp8_->quantize_unit(u, w, begin);
    return;
  }
  const float* p = options_.unit_storage->acquire_params(u);
  unit_params_[size_t(u)] = p;
  if (options_.compute != ComputeMode::kF32) {  // the unit's 16-bit GEMM copy
    const ParamUnit& unit = layout().units()[size_t(u)];
    const int64_t n = unit.span_elems();
    unit_working_[size_t(u)] = Buffer(ops_.device(), size_t(n) * 2, MemoryCategory::kWeights);
    auto* w = static_cast<uint16_t*>(unit_working_[size_t(u)].data());
    ops_.narrow(gemm_dtype_of(options_.compute), w, p, n);
  }
}

void Transformer::release_unit(int u) {
  if (options_.unit_storage == nullptr || (unit_params_[size_t(u)] == nullptr && unit_bf16_[size_t(u)] == nullptr)) {
    return;
  }
  unit_working_[size_t(u)] = Buffer();
  unit_vectors_[size_t(u)] = Buffer();
  if (fp8_) fp8_->release_unit(u);
  unit_params_[size_t(u)] = nullptr;
  unit_bf16_[size_t(u)] = nullptr;
  options_.unit_storage->release_params(u);
}

void Transformer::unit_grads_done(int u) {
  if (options_.unit_storage == nullptr || unit_grads_[size_t(u)] == nullptr) return;
  if (unit_grad_vectors_[size_t(u)].data() != nullptr) {  // the 1-D tensors' sums, each written or added once
    const auto* sums = static_cast<const float*>(unit_grad_vectors_[size_t(u)].data());
    const int64_t begin = layout().units()[size_t(u)].begin_elems;
    const bool overwrite = unit_grad_write_[size_t(u)] == dist::UnitStorage::GradWrite::kOverwrite;
    for (const ParamEntry* e : unit_vector_entries_[size_t(u)]) {
      float* kept = unit_grads_[size_t(u)] + (e->offset_elems - begin);
      if (overwrite) {
        ops_.copy(kept, sums, e->numel());
      } else {
        ops_.accumulate(kept, sums, e->numel());
      }
      sums += e->numel();
    }
    unit_grad_vectors_[size_t(u)] = Buffer();
  }
  unit_grads_[size_t(u)] = nullptr;
  options_.unit_storage->grads_ready(u);
}

void Transformer::prefetch_unit(int u) {
  if (options_.unit_storage != nullptr && unit_params_[size_t(u)] == nullptr && unit_bf16_[size_t(u)] == nullptr) {
    options_.unit_storage->prefetch_params(u);
  }
}

void Transformer::release_all_units() {
  for (size_t u = 0; u < unit_params_.size(); ++u) release_unit(int(u));
}

void Transformer::refresh_working_weights() {
  if (options_.unit_storage != nullptr) return;  // converted per unit on acquire
  auto* w = static_cast<uint16_t*>(working_.data());
  if (options_.compute != ComputeMode::kF32) ops_.narrow(gemm_dtype_of(options_.compute), w, params(), layout().total_elems());
  if (fp8_) fp8_->quantize_unit(-1, w, 0);
}

const void* Transformer::weight_ptr(int64_t offset) const {
  if (options_.compute == ComputeMode::kF32) return P(offset);
  if (options_.unit_storage == nullptr) return static_cast<const uint16_t*>(working_.data()) + offset;
  const int u = unit_of(offset);
  if (unit_bf16_[size_t(u)] != nullptr) return unit_bf16_[size_t(u)] + (offset - layout().units()[size_t(u)].begin_elems);
  return static_cast<const uint16_t*>(unit_working_[size_t(u)].data()) +
         (offset - layout().units()[size_t(u)].begin_elems);
}

const void* Transformer::gemm_operand(ActRef x, int64_t count, int slot) {
  if (options_.compute != ComputeMode::kF32 && x.dtype == gemm_dtype_of(options_.compute)) return x.data;
  return gemm_operand(static_cast<const float*>(x.f32()), count, slot);
}

const void* Transformer::gemm_operand(const float* x, int64_t count, int slot) {
  if (options_.compute == ComputeMode::kF32) return x;
  FARTHING_CHECK(count <= bf16_slot_elems_[size_t(slot)], "16-bit GEMM operand of ", count,
                 " elements exceeds scratch slot ", slot, " of ", bf16_slot_elems_[size_t(slot)]);
  ops_.narrow(gemm_dtype_of(options_.compute), bf16_slots_[slot], x, count);
  return bf16_slots_[slot];
}

void Transformer::linear_forward(ActRef y, ActRef x, int64_t w, int64_t bias, int64_t m,
                                 int64_t kdim, int64_t n, WeightOrientation orient, ActRef residual) {
  const GemmDtype dt = gemm_dtype_of(options_.compute);
  GemmShape s{m, n, kdim};
  s.trans_b = orient == WeightOrientation::kOutIn ? Trans::kT : Trans::kN;  // W (N,K) or (K,N)
  const bool accumulate = residual.data != nullptr;
  if (y.is_bf16()) {  // stored as bf16: the residual and the bias join the fp32 sum before its one rounding
    const uint16_t* add = accumulate ? residual.bf16() : nullptr;
    ops_.matmul_bf16_out(dt, s, gemm_operand(x, m * kdim, 0), weight_ptr(w), bias >= 0 ? P(bias) : nullptr, add,
                         y.bf16());
    return;
  }
  if (accumulate && residual.data != y.data) ops_.copy(y.f32(), residual.f32(), m * n);
  if (fp8_ && fp8_->covers(w)) {
    fp8_->forward(y.f32(), x.f32(), w, m, orient, accumulate);
    if (bias >= 0) ops_.bias_add(y.f32(), P(bias), m, n, n);
  } else if (fp4_ && fp4_->forward_covers(w)) {
    fp4_->forward(y.f32(), x.f32(), static_cast<const uint16_t*>(weight_ptr(w)), w, m, orient, accumulate);
    if (bias >= 0) ops_.bias_add(y.f32(), P(bias), m, n, n);
  } else if (bias >= 0) {  // the bias in the GEMM's epilogue, where the backend has one
    ops_.matmul_bias(dt, s, gemm_operand(x, m * kdim, 0), weight_ptr(w), P(bias), y.f32(), accumulate);
  } else {
    ops_.matmul(dt, s, gemm_operand(x, m * kdim, 0), weight_ptr(w), y.f32(), accumulate);
  }
}

void Transformer::linear_backward(ActRef dx, int64_t w, int64_t bias, ActRef dy, ActRef x, int64_t m,
                                  int64_t kdim, int64_t n, WeightOrientation orient) {
  if (fp8_ && fp8_->covers(w)) {
    fp8_->backward(dx.f32(), G(w), w, dy.f32(), x.f32(), m, orient);
    if (bias >= 0) ops_.bias_backward(G(bias), dy, m, n, n);
    return;
  }
  if (fp4_ && fp4_->backward_covers(w)) {
    fp4_->backward(dx.f32(), G(w), static_cast<const uint16_t*>(weight_ptr(w)), w, dy.f32(), x.f32(), m, orient);
    if (bias >= 0) ops_.bias_backward(G(bias), dy, m, n, n);
    return;
  }
  const GemmDtype dt = gemm_dtype_of(options_.compute);
  const void* dy_op = gemm_operand(dy, m * n, 0);
  const void* x_op = gemm_operand(x, m * kdim, 1);
  // dx (M, K) = dy (M, N) . W
  GemmShape sx{m, kdim, n};
  sx.trans_b = orient == WeightOrientation::kOutIn ? Trans::kN : Trans::kT;
  sx.ldb = orient == WeightOrientation::kOutIn ? kdim : n;
  if (dx.is_bf16()) {
    ops_.matmul_bf16_out(dt, sx, dy_op, weight_ptr(w), nullptr, nullptr, dx.bf16());
  } else {
    ops_.matmul(dt, sx, dy_op, weight_ptr(w), dx.f32(), false);
  }
  // dW += dy^T x  (W as (N, K)) or x^T dy (W as (K, N)); dbias += the column sums of dy, with the
  // GEMM that reads dy (its sums over the GEMM's k, the rows).
  if (orient == WeightOrientation::kOutIn) {
    GemmShape sw{n, kdim, m, n, kdim, kdim, Trans::kT, Trans::kN};
    weight_grad_gemm(w, dt, sw, dy_op, x_op, bias, BiasGradOf::kA, dy);
  } else {
    GemmShape sw{kdim, n, m, kdim, n, n, Trans::kT, Trans::kN};
    weight_grad_gemm(w, dt, sw, x_op, dy_op, bias, BiasGradOf::kB, dy);
  }
}

void Transformer::norm_forward(ActRef out, float* mean, float* rstd, ActRef x, int64_t w, int64_t b, NormSlot slot) {
  block_norm_forward(spec_, ops_, *this, out, mean, rstd, x, w, b, batch_ * seq_, slot);
}

void Transformer::norm_backward(ActRef dx, ActRef dout, ActRef x, int64_t w, int64_t b, const float* mean,
                                const float* rstd, NormSlot slot) {
  const ModelConfig& c = config();
  const int64_t M = batch_ * seq_;
  if (c.family == ModelFamily::kGpt2) {
    ops_.layernorm_backward(dx, G(w), G(b), dout, x, P(w), mean, rstd, M, c.dim);
  } else {
    ops_.rmsnorm_backward(dx, G(w), dout, x, norm_weight(c, *this, slot, w, c.dim), rstd, M, c.dim);
  }
}

void Transformer::post_norm_backward(ActRef dout_pre, ActRef out, const float* rstd, int64_t w, NormSlot slot) {
  const int64_t MC = batch_ * seq_ * config().dim;
  backend_for(ops_.device()).fill_bytes(dout_pre.data, 0, size_t(MC * dout_pre.element_bytes()));  // the op adds
  norm_backward(dout_pre, dres_, out, w, -1, nullptr, rstd, slot);
}

BlockActs Transformer::acts_for(int64_t layer) {
  return layer_acts_[size_t(options_.checkpointing == Checkpointing::kPerBlock ? 0 : layer)];
}

void Transformer::embed(const int32_t* tokens) {
  const ModelConfig& c = config();
  const int64_t M = batch_ * seq_;
  for (int64_t i = 0; i < M; ++i) {
    FARTHING_CHECK(tokens[i] >= 0 && tokens[i] < c.vocab_size, "token ", tokens[i], " at position ",
                   i, " is outside the vocabulary [0, ", c.vocab_size, ")");
  }
  // Checked on the host, then copied to the ops' memory (where backward reads them again).
  upload_ids(tokens_, tokens);
  if (embedding_once()) {  // each row's slot among the distinct tokens, and those tokens
    std::vector<int32_t> slots(size_t(M), 0), distinct(size_t(M), 0);
    std::unordered_map<int32_t, int32_t> slot_of;
    slot_of.reserve(size_t(M));
    distinct_tokens_ = 0;
    for (int64_t i = 0; i < M; ++i) {
      const auto [it, fresh] = slot_of.try_emplace(tokens[i], int32_t(distinct_tokens_));
      if (fresh) distinct[size_t(distinct_tokens_++)] = tokens[i];
      slots[size_t(i)] = it->second;
    }
    upload_ids(token_slots_, slots.data());
    upload_ids(slot_tokens_, distinct.data());
  }
  if (options_.unit_storage != nullptr && options_.compute == ComputeMode::kBF16) {
    const auto* wpe = spec_.pos_emb >= 0 ? static_cast<const uint16_t*>(weight_ptr(spec_.pos_emb)) : nullptr;
    ops_.embedding_forward_bf16(resid_, tokens_, static_cast<const uint16_t*>(weight_ptr(spec_.tok_emb)), wpe, M,
                                row_positions(), c.dim);
    scale_embedding(resid_);
    return;
  }
  ops_.embedding_forward(resid_, tokens_, P(spec_.tok_emb), spec_.pos_emb >= 0 ? P(spec_.pos_emb) : nullptr, M,
                         row_positions(), c.dim);
  scale_embedding(resid_);
}

// Gemma 3: x = embedding * sqrt(dim) (in the weights' dtype); the backward scales dL/dx likewise.
void Transformer::scale_embedding(ActRef x) {
  const ModelConfig& c = config();
  if (c.scaled_embedding) ops_.scale_add(x, x, embedding_scale(c, gemm_dtype_of(options_.compute)), ActRef(), batch_ * seq_ * c.dim);
}

// The block's maths is block_forward's (block_forward.h), shared with the KV-cache decoder.
void Transformer::block_forward(int64_t layer, const BlockActs& a, ActRef x, ActRef y) {
  models::block_forward(spec_, ops_, *this, layer, a, x, y,
                        BlockRows{batch_ * seq_, row_positions(), rope_cos_, rope_sin_, local_cos_, local_sin_});
}

AttentionShape Transformer::attention_shape(int64_t layer) const {
  AttentionShape s = layer_attention_shape(config(), layer, batch_, seq_, attention_dtype_of(options_.compute));
  s.doc_start = documents_ ? doc_start_ : nullptr;
  s.documents = documents_;
  s.longest_document = longest_document_;
  return s;
}

void Transformer::attention(int64_t layer, const BlockActs& a, int64_t rows) {
  FARTHING_CHECK(rows == batch_ * seq_, "training attention runs whole micro-batches: ", rows, " rows");
  ops_.attention_forward(attention_shape(layer), a.att, a.lse, a.qkv);
}

void Transformer::block_backward(int64_t layer, const BlockActs& a, ActRef x) {
  const ModelConfig& c = config();
  const BlockOffsets& w = spec_.blocks[size_t(layer)];
  const int64_t M = batch_ * seq_, C = c.dim, H = c.hidden_dim, Sq = c.qkv_dim(), D = c.head_dim();
  const bool llama = c.family == ModelFamily::kLlama;
  const WeightOrientation o = spec_.orientation;
  const int64_t F = llama ? 2 * H : H;
  // dres_ holds dL/dy on entry and dL/dx on exit (the residual passes it through).
  if (c.sandwich_norms) {  // y = mid + norm(mlp_out): dn_ = dL/d mlp_out
    post_norm_backward(dn_, a.mlp_out, a.mlp_out_rstd, w.mlp_post_norm_w, NormSlot::kMlpPost);
    linear_backward(dact_, w.mlp_out_w, w.mlp_out_b, dn_, a.act, M, H, C, o);
  } else {
    linear_backward(dact_, w.mlp_out_w, w.mlp_out_b, dres_, a.act, M, H, C, o);
  }
  if (llama && c.gelu_gate) {
    ops_.geglu_backward(dfc_, dact_, a.fc, M, H);
  } else if (llama) {
    ops_.swiglu_backward(dfc_, dact_, a.fc, M, H);
  } else {
    ops_.gelu_backward(dfc_, dact_, a.fc, M * H);
  }
  linear_backward(dn_, w.mlp_in_w, w.mlp_in_b, dfc_, a.n2, M, C, F, o);
  norm_backward(dres_, dn_, a.mid, w.norm2_w, w.norm2_b, a.n2_mean, a.n2_rstd, NormSlot::kMlpPre);
  if (c.sandwich_norms) {  // mid = x + norm(attn_out): dn_ = dL/d attn_out
    post_norm_backward(dn_, a.attn_out, a.attn_out_rstd, w.attn_post_norm_w, NormSlot::kAttnPost);
    linear_backward(datt_, w.attn_out_w, w.attn_out_b, dn_, a.att, M, c.attn_dim(), C, o);
  } else {
    linear_backward(datt_, w.attn_out_w, w.attn_out_b, dres_, a.att, M, c.attn_dim(), C, o);
  }
  ops_.attention_backward(attention_shape(layer), dqkv_, att_scratch_, datt_, a.att, a.lse, a.qkv);
  if (llama) {
    const BlockRows tables{M, row_positions(), rope_cos_, rope_sin_, local_cos_, local_sin_};
    ops_.rope_apply(dqkv_, M, row_positions(), c.n_heads + c.n_kv_heads, D, Sq, tables.cos_of(c, layer),
                    tables.sin_of(c, layer), true);
  }
  if (c.qk_norm) {  // dqkv becomes the gradient of the projection before the q/k norms
    ops_.head_rmsnorm_backward(qk_norm_shape(c, M), dqkv_, G(w.q_norm_w), G(w.k_norm_w), a.qkv_raw,
                               norm_weight(c, *this, NormSlot::kQ, w.q_norm_w, D),
                               norm_weight(c, *this, NormSlot::kK, w.k_norm_w, D), a.qk_rstd);
  }
  linear_backward(dn_, w.qkv_w, w.qkv_b, dqkv_, a.n1, M, C, Sq, o);
  norm_backward(dres_, dn_, x, w.norm1_w, w.norm1_b, a.n1_mean, a.n1_rstd, NormSlot::kInput);
}

void Transformer::final_norm() {
  const int64_t MC = batch_ * seq_ * config().dim;
  norm_forward(nf_, nf_mean_, nf_rstd_, resid_.offset(config().n_layers * MC), spec_.final_norm_w,
               spec_.final_norm_b, NormSlot::kFinal);
}

int64_t Transformer::loss_and_head(const int32_t* targets, bool want_grad, float* logits_out, double* loss_sum,
                                  float loss_grad_scale) {
  const OpPhaseScope phase(OpPhase::kHeadLoss);
  const ModelConfig& c = config();
  const int64_t M = batch_ * seq_, V = c.vocab_size;
  const int64_t R = std::min(options_.loss_chunk_rows, M);
  int64_t counted = 0;
  if (targets) {
    for (int64_t i = 0; i < M; ++i) {
      FARTHING_CHECK(targets[i] < V, "target ", targets[i], " at position ", i,
                     " is outside the vocabulary [0, ", V, ")");
      counted += targets[i] >= 0;
    }
    upload_ids(targets_, targets);
  }
  // NOTE: mean over counted targets; with none counted the loss is 0 and so is its gradient.
  const float grad_scale =
      loss_grad_scale >= 0.0f ? loss_grad_scale : (counted > 0 ? float(1.0 / double(counted)) : 0.0f);
  for (int64_t r0 = 0; r0 < M; r0 += R) {
    const int64_t rows = std::min(R, M - r0);
    head_forward(r0, rows);
    if (logits_out) copy_logits_out(logits_out + r0 * V, rows);
    if (!targets) continue;
    // Now their gradient; the pad columns of each row stay as they were, unread.
    ops_.cross_entropy_rows(logits_, targets_ + r0, rows, V, logits_stride_, grad_scale, want_grad, loss_sum);
    if (want_grad) head_backward(r0, rows);
  }
  return counted;
}

// logits (rows, V; row stride Vp) = nf Whead^T. The head is never an FP8 or FP4 layer and has no
// bias: linear_forward's plain GEMM, with C's rows Vp apart.
void Transformer::head_forward(int64_t r0, int64_t rows) {
  const int64_t C = config().dim, V = config().vocab_size;
  const GemmDtype dt = gemm_dtype_of(options_.compute);
  GemmShape s{rows, V, C};
  s.trans_b = Trans::kT;  // Whead (V, C)
  s.ldc = logits_stride_;
  const void* x = gemm_operand(nf_.offset(r0 * C), rows * C, 0);
  if (logits_.is_bf16()) {
    ops_.matmul_bf16_out(dt, s, x, weight_ptr(spec_.head_w), nullptr, nullptr, logits_.bf16());
  } else {
    ops_.matmul(dt, s, x, weight_ptr(spec_.head_w), logits_.f32(), false);
  }
}

// From the chunk's logit gradients (rows, V; row stride Vp): dn (rows, C) = dlogits Whead and
// dWhead (V, C) += dlogits^T nf. Both GEMMs run over the V true columns (K = V, or M = V), so
// the pad columns never enter them.
void Transformer::head_backward(int64_t r0, int64_t rows) {
  const int64_t C = config().dim, V = config().vocab_size, Vp = logits_stride_;
  const GemmDtype dt = gemm_dtype_of(options_.compute);
  // fp32 logits under 16-bit compute are narrowed whole rows at a time (pad columns included,
  // which no GEMM reads), so the narrowed copy keeps the stride.
  const void* dy = gemm_operand(logits_, (rows - 1) * Vp + V, 0);
  const void* x = gemm_operand(nf_.offset(r0 * C), rows * C, 1);
  const ActRef dx = dn_.offset(r0 * C);
  GemmShape sx{rows, C, V};
  sx.lda = Vp;
  sx.ldb = C;  // Whead (V, C) as stored
  if (dx.is_bf16()) {
    ops_.matmul_bf16_out(dt, sx, dy, weight_ptr(spec_.head_w), nullptr, nullptr, dx.bf16());
  } else {
    ops_.matmul(dt, sx, dy, weight_ptr(spec_.head_w), dx.f32(), false);
  }
  const GemmShape sw{V, C, rows, Vp, C, C, Trans::kT, Trans::kN};
  weight_grad_gemm(spec_.head_w, dt, sw, dy, x);
}

// A chunk's logits to the caller's dense fp32 array (host or the ops' memory): the rows' extent
// is copied to the host as it is stored (bf16 two to a 4-byte word; the chunk's allocation is
// whole rows of Vp, an even count, so the last word is the buffer's own), each row's V true
// columns kept and widened exactly, and the result copied to dst.
void Transformer::copy_logits_out(float* dst, int64_t rows) {
  const int64_t V = config().vocab_size, Vp = logits_stride_, extent = (rows - 1) * Vp + V;
  std::vector<float> values(size_t(rows * V));
  if (logits_.is_bf16()) {
    std::vector<uint16_t> bits(size_t(extent + 1) / 2 * 2);
    ops_.copy(reinterpret_cast<float*>(bits.data()), reinterpret_cast<const float*>(logits_.bf16()), (extent + 1) / 2);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < V; ++i) values[size_t(r * V + i)] = numerics::bf16_to_f32(bits[size_t(r * Vp + i)]);
    }
  } else {
    std::vector<float> stored(static_cast<size_t>(extent));
    ops_.copy(stored.data(), logits_.f32(), extent);
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(values.data() + r * V, stored.data() + r * Vp, size_t(V) * sizeof(float));
    }
  }
  ops_.copy(dst, values.data(), rows * V);
}

// own_loss_sum_ serves the callers that want the loss at once (evaluation, scoring, tests): the
// read is a host wait. The trainer keeps its sums on the device and reads them once a step.
void Transformer::zero_own_loss_sum() { backend_for(ops_.device()).fill_bytes(own_loss_sum_, 0, sizeof(double)); }

double Transformer::read_own_loss_sum() {
  double sum = 0.0;
  backend_for(ops_.device())
      .copy(Tensor(&sum, DType::kF64, Shape{1}), Tensor(own_loss_sum_, DType::kF64, Shape{1}, ops_.device()));
  return sum;
}

Transformer::LossSum Transformer::loss_and_head_read(const int32_t* targets, bool want_grad) {
  zero_own_loss_sum();
  LossSum loss;
  loss.counted = loss_and_head(targets, want_grad, nullptr, own_loss_sum_);
  loss.sum = read_own_loss_sum();
  return loss;
}

namespace {
float mean_of(const Transformer::LossSum& s) { return s.counted > 0 ? float(s.sum / double(s.counted)) : 0.0f; }

// FP8 delayed scaling records amaxes during training steps only (not evaluation or scoring).
struct ObservingFp8 {
  Fp8Linears* fp8;
  explicit ObservingFp8(Fp8Linears* f) : fp8(f) {
    if (fp8) fp8->set_observing(true);
  }
  ~ObservingFp8() {
    if (fp8) fp8->set_observing(false);
  }
};
}  // namespace

float Transformer::forward_backward(const int32_t* tokens, const int32_t* targets) {
  const ObservingFp8 observing(fp8_.get());
  forward_trunk(tokens, /*backward_follows=*/true);
  const float loss = mean_of(loss_and_head_read(targets, true));
  backward_from_head();
  return loss;
}

int64_t Transformer::forward_backward_sum(const int32_t* tokens, const int32_t* targets, float loss_grad_scale,
                                          double* loss_sum) {
  FARTHING_CHECK(loss_grad_scale >= 0.0f, "loss_grad_scale must be >= 0, got ", loss_grad_scale);
  const ObservingFp8 observing(fp8_.get());
  forward_trunk(tokens, /*backward_follows=*/true);
  const int64_t counted = loss_and_head(targets, true, nullptr, loss_sum, loss_grad_scale);
  backward_from_head();
  return counted;
}

Transformer::LossSum Transformer::forward_backward_sum(const int32_t* tokens, const int32_t* targets,
                                                       float loss_grad_scale) {
  zero_own_loss_sum();
  LossSum loss;
  loss.counted = forward_backward_sum(tokens, targets, loss_grad_scale, own_loss_sum_);
  loss.sum = read_own_loss_sum();
  return loss;
}

Transformer::LossSum Transformer::forward_loss_sum(const int32_t* tokens, const int32_t* targets) {
  forward_trunk(tokens);
  const LossSum loss = loss_and_head_read(targets, false);
  release_all_units();
  return loss;
}

// The turns that forward_trunk, loss_and_head and backward_from_head (below) take over a
// UnitStorage; see UnitSchedule.
UnitSchedule Transformer::unit_schedule(const TransformerSpec& spec) {
  const FlatLayout& layout = spec.layout;
  const int64_t L = spec.config.n_layers;
  auto block = [&](int64_t l) { return unit_holding(layout, spec.blocks[size_t(l)].qkv_w); };
  const int embedding = unit_holding(layout, spec.tok_emb), head = unit_holding(layout, spec.final_norm_w);
  UnitSchedule s;
  s.embedding = embedding;
  // forward_trunk: the embedding, then each block, each turn prefetching the next one's unit.
  s.turns.push_back({.unit = embedding, .gathered_ahead = false, .prefetches = L > 0 ? block(0) : head});
  for (int64_t l = 0; l < L; ++l) s.turns.push_back({.unit = block(l), .prefetches = l + 1 < L ? block(l + 1) : head});
  // The head: acquired for the final norm, prefetching the last block for backward; the loss
  // starts the output head's gradients (in the embedding's unit when tied); its backward ends it.
  s.turns.push_back({.unit = head,
                     .prefetches = L > 0 ? block(L - 1) : -1,
                     .loss_grads = unit_holding(layout, spec.head_w),
                     .hands_over_grads = true});
  // backward_from_head: each block again in reverse, then the embedding's gradients.
  for (int64_t l = L - 1; l >= 0; --l) {
    s.turns.push_back({.unit = block(l), .backward = true, .prefetches = l > 0 ? block(l - 1) : -1,
                       .hands_over_grads = true});
  }
  s.turns.push_back({.unit = embedding, .backward = true, .acquires = false, .hands_over_grads = true});
  return s;
}

bool Transformer::embedding_once() const {
  return options_.unit_storage != nullptr &&
         unit_grad_adds_[size_t(unit_of(spec_.tok_emb))] == dist::UnitStorage::GradAdds::kOnce;
}

// NOTE (numerics): the embedding's backward adds one row per token. Summed first per distinct
// token, from zero and in row order (the rows' slots), then added to the unit's gradients once
// per token (each distinct token one row), every element gets one addition: kept + (r1 + r2),
// the accumulator's sum. The scratch holds M rows, the most a micro-batch has distinct.
// Written rather than added (kOverwrite), the table is zeroed first: a token the micro-batch
// lacks has gradient 0, so the zeroing is the table's own (0 + s is s: a sum from zero is never -0).
void Transformer::embedding_backward_once() {
  const int64_t M = batch_ * seq_, C = config().dim;
  if (embedding_rows_set_aside()) {
    // The rows go onto the head's product (tied) or zeros (positions) in row order, as onto an
    // accumulator; then, in place, the set-aside running sums are added back.
    ops_.embedding_backward(G(spec_.tok_emb), spec_.pos_emb >= 0 ? G(spec_.pos_emb) : nullptr, dres_, tokens_, M,
                            row_positions(), C);
    restore_embedding_rows();
    return;
  }
  Buffer rows(ops_.device(), size_t(M * C) * 4, MemoryCategory::kGrads);  // planned: UnitBufferBytes::grad_scratch
  auto* sums = static_cast<float*>(rows.data());
  ops_.zero(sums, distinct_tokens_ * C);
  ops_.embedding_backward(sums, nullptr, dres_, token_slots_, M, row_positions(), C);
  float* table = G(spec_.tok_emb);
  if (unit_grad_write_[size_t(unit_of(spec_.tok_emb))] == dist::UnitStorage::GradWrite::kOverwrite) {
    ops_.zero(table, config().vocab_size * C);
  }
  ops_.embedding_backward(table, nullptr, ActRef(sums), slot_tokens_, distinct_tokens_, row_positions(), C);
}

bool Transformer::embedding_rows_set_aside() const {
  return embedding_once() && (spec_.pos_emb >= 0 || unit_of(spec_.head_w) == unit_of(spec_.tok_emb));
}

// NOTE (numerics): a tied embedding gets the head's dense product P and then the micro-batch's
// rows, and learned positions a row per sequence. Added in place onto a running sum K, the
// accumulator's bits are K + ((P + r_a) + r_b): so, where this backward adds (a later micro-batch
// kept in place), the rows of the micro-batch's distinct tokens and the positions are set aside
// before the head's GEMM (copied out, and zeroed: x + (-x) is +0), the GEMM adds P (K + P where
// no token is, 0 + P where one is), the rows are added in row order, and the set-aside K is
// added back: ((P + r_a) + r_b) + K, which is the same value (addition commutes). Written
// (kOverwrite), the head's GEMM writes the table and the positions are zeroed. The scratch is
// M x C (the most distinct tokens a micro-batch has) and the position table, not V x C.
void Transformer::set_aside_embedding_rows(const dist::UnitStorage::UnitGrads& grads) {
  const ModelConfig& c = config();
  const int64_t M = batch_ * seq_, C = c.dim, positions = spec_.pos_emb >= 0 ? c.max_seq_len * C : 0;
  const int64_t begin = layout().units()[size_t(unit_of(spec_.tok_emb))].begin_elems;
  embedding_set_aside_ = Buffer(ops_.device(), size_t(M * C + positions) * 4, MemoryCategory::kGrads);  // planned: UnitBufferBytes::grad_scratch
  float* wpe = positions > 0 ? grads.data + (spec_.pos_emb - begin) : nullptr;
  if (grads.write == dist::UnitStorage::GradWrite::kOverwrite) {
    if (wpe != nullptr) ops_.zero(wpe, positions);
    return;
  }
  auto* rows = static_cast<float*>(embedding_set_aside_.data());
  if (unit_of(spec_.head_w) == unit_of(spec_.tok_emb)) {
    float* wte = grads.data + (spec_.tok_emb - begin);
    ops_.embedding_forward(ActRef(rows), slot_tokens_, wte, nullptr, distinct_tokens_, row_positions(), C);
    ops_.scale_add(ActRef(rows), ActRef(rows), -1.0f, ActRef(), distinct_tokens_ * C);
    ops_.embedding_backward(wte, nullptr, ActRef(rows), slot_tokens_, distinct_tokens_, row_positions(), C);
  }
  if (wpe != nullptr) {
    ops_.copy(rows + M * C, wpe, positions);
    ops_.zero(wpe, positions);
  }
}

void Transformer::restore_embedding_rows() {
  const int u = unit_of(spec_.tok_emb);
  if (unit_grad_write_[size_t(u)] == dist::UnitStorage::GradWrite::kAdd) {
    const ModelConfig& c = config();
    const int64_t M = batch_ * seq_, C = c.dim;
    auto* rows = static_cast<float*>(embedding_set_aside_.data());
    if (unit_of(spec_.head_w) == u) {
      ops_.scale_add(ActRef(rows), ActRef(rows), -1.0f, ActRef(), distinct_tokens_ * C);
      ops_.embedding_backward(G(spec_.tok_emb), nullptr, ActRef(rows), slot_tokens_, distinct_tokens_, row_positions(), C);
    }
    if (spec_.pos_emb >= 0) ops_.accumulate(G(spec_.pos_emb), rows + M * C, c.max_seq_len * C);
  }
  embedding_set_aside_ = Buffer();
}

// Final norm, blocks in reverse, embeddings: after loss_and_head left d(final norm out) in dn_.
void Transformer::backward_from_head() {
  const OpPhaseScope phase(OpPhase::kBackward);
  const ModelConfig& c = config();
  const int64_t M = batch_ * seq_, MC = M * c.dim;
  backend_for(ops_.device()).fill_bytes(dres_.data, 0, size_t(MC * dres_.element_bytes()));  // +0 in fp32 and bf16
  norm_backward(dres_, dn_, resid_.offset(c.n_layers * MC), spec_.final_norm_w, spec_.final_norm_b,
                nf_mean_, nf_rstd_, NormSlot::kFinal);
  // The head unit (final norm, and the output head when untied) is finished; a tied head's
  // gradient went to the embedding unit, which stays until the very end.
  const int head = unit_of(spec_.final_norm_w);
  unit_grads_done(head);
  release_unit(head);
  for (int64_t l = c.n_layers - 1; l >= 0; --l) {
    BlockActs a = acts_for(l);
    const int unit = block_unit(l);
    acquire_unit(unit);  // ZeRO-3: gathered again for backward
    if (l > 0) prefetch_unit(block_unit(l - 1));
    if (options_.checkpointing == Checkpointing::kPerBlock) {
      // Recompute the block from its stored input; it rewrites resid(l+1) with equal bits.
      const OpPhaseScope recompute(OpPhase::kRecompute);
      block_forward(l, a, resid_.offset(l * MC), resid_.offset((l + 1) * MC));
    }
    block_backward(l, a, resid_.offset(l * MC));
    unit_grads_done(unit);
    release_unit(unit);
  }
  scale_embedding(dres_);  // dL/d(embedding row) = sqrt(dim) dL/dx under Gemma 3's scale
  if (embedding_once()) {
    embedding_backward_once();
  } else {
    ops_.embedding_backward(G(spec_.tok_emb), spec_.pos_emb >= 0 ? G(spec_.pos_emb) : nullptr, dres_, tokens_, M,
                            row_positions(), c.dim);
  }
  const int embedding = unit_of(spec_.tok_emb);
  unit_grads_done(embedding);
  release_unit(embedding);
  if (options_.unit_storage != nullptr) options_.unit_storage->backward_done();  // reductions still in flight finish
}

// Embedding, every block and the final norm: the forward every pass shares.
void Transformer::forward_trunk(const int32_t* tokens, bool backward_follows) {
  const OpPhaseScope phase(OpPhase::kForward);
  const ModelConfig& c = config();
  const int64_t MC = batch_ * seq_ * c.dim;
  const int head = unit_of(spec_.final_norm_w);
  refresh_working_weights();
  // UnitStorage mode: each unit is acquired just before use, and the next one's gather starts
  // right after, so it overlaps this unit's compute (ZeRO-3's prefetch). unit_schedule states
  // this order, and backward_from_head's, for `farthing plan`: change them together.
  acquire_unit(unit_of(spec_.tok_emb));  // kept through backward (a tied head reads it last)
  prefetch_unit(c.n_layers > 0 ? block_unit(0) : head);
  embed(tokens);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    BlockActs a = acts_for(l);
    const int unit = block_unit(l);
    acquire_unit(unit);
    prefetch_unit(l + 1 < c.n_layers ? block_unit(l + 1) : head);
    block_forward(l, a, resid_.offset(l * MC), resid_.offset((l + 1) * MC));
    release_unit(unit);
  }
  acquire_unit(head);
  if (backward_follows && c.n_layers > 0) prefetch_unit(block_unit(c.n_layers - 1));
  final_norm();
}

float Transformer::forward_loss(const int32_t* tokens, const int32_t* targets) {
  return mean_of(forward_loss_sum(tokens, targets));
}

void Transformer::forward_logits(const int32_t* tokens, float* logits) {
  forward_trunk(tokens);
  loss_and_head(nullptr, false, logits, nullptr);
  release_all_units();
}

double Transformer::flops_per_step() const { return training_flops_per_step(config(), batch_, seq_); }

}  // namespace farthing::models
