// param_store.cpp — see param_store.h. planned_bytes and planned_unit_bytes state what the
// constructor and the unit calls below allocate; each allocation names the figure it answers to.
#include "framework/dist/param_store.h"

#include <algorithm>

#include "framework/backend/buffer.h"
#include "framework/core/error.h"

namespace farthing::dist {

namespace {

// Zero-fills `bytes` bytes (a multiple of 4) of device memory through the float fill.
void zero_bytes(NnOps& ops, void* data, int64_t bytes) { ops.zero(static_cast<float*>(data), bytes / 4); }

}  // namespace

DType kept_gradient_dtype(const ParamStoreOptions& options, int world_size) {
  // NOTE (numerics): a sum over micro-batches or ranks is added in fp32; one backward's gradient
  // (already accumulated in fp32 within the unit) is read once by the optimizer, so bf16 can keep
  // it, unless the run asks for fp32 (train.grad_dtype: the default under precision fp32).
  FARTHING_CHECK(options.one_backward_grad_dtype == DType::kBF16 || options.one_backward_grad_dtype == DType::kF32,
                 "ParamStoreOptions: one backward's gradients are kept as bf16 or f32, not ",
                 dtype_name(options.one_backward_grad_dtype));
  return options.grad_accum * world_size > 1 ? DType::kF32 : options.one_backward_grad_dtype;
}

bool grads_in_place(const ParamStoreOptions& options, int world_size, UnitStorage::GradAdds adds) {
  // NOTE (numerics): a kept fp32 sum that each backward writes (the step's first) or adds its
  // whole gradient to (the later ones) is exactly the sum an accumulator's copy and adds make:
  // g0, then ((g0 + g1) + g2). Over ranks the reduction needs each backward's own gradient,
  // except at stage 1 with one backward a step: every rank then writes its gradient into its
  // whole kept copy and the all-reduce sums the copies in place, in rank order. A bf16 kept
  // gradient would round the fp32 sum the model forms; fused, nothing is kept.
  if (adds != UnitStorage::GradAdds::kOnce || options.optimizer_in_backward ||
      kept_gradient_dtype(options, world_size) != DType::kF32) {
    return false;
  }
  return world_size == 1 || (options.zero_stage == 1 && options.grad_accum == 1);
}

ParamStore::ParamStore(const ZeroLayout& zero, Communicator& comm, Backend& backend, ParamStoreOptions options)
    : zero_(zero), comm_(comm), backend_(backend), options_(options), shards_(zero.owned_shards()) {
  FARTHING_CHECK(options_.zero_stage >= 1 && options_.zero_stage <= 3, "distributed.zero_stage must be 1, 2 or 3, not ",
                 options_.zero_stage);
  FARTHING_CHECK(comm_.world_size() == zero_.world_size() && comm_.rank() == zero_.rank(),
                 "ParamStore: the ZeRO layout is for rank ", zero_.rank(), " of ", zero_.world_size(),
                 " but the communicator is rank ", comm_.rank(), " of ", comm_.world_size());
  const size_t units = zero_.units().size();
  shard_of_unit_.assign(units, -1);
  compact_offset_.assign(shards_.size(), 0);
  int64_t owned_total = 0;
  for (size_t s = 0; s < shards_.size(); ++s) {
    const int64_t g = int64_t(shards_[s].global_offset);
    for (size_t u = 0; u < units; ++u) {
      if (g >= zero_.units()[u].begin && g < zero_.aligned_end(u)) shard_of_unit_[u] = int(s);
    }
    compact_offset_[s] = owned_total;
    owned_total += int64_t(shards_[s].numel);
  }
  const Device device = backend_.device();
  const ParamStoreBytes bytes = planned_bytes(zero_, options_);
  whole_weights_ = options_.zero_stage < 3;
  whole_grads_ = options_.zero_stage == 1;
  grad_dtype_ = kept_gradient_dtype(options_, zero_.world_size());
  weights_ = Buffer(device, size_t(bytes.weights), MemoryCategory::kWeights);
  if (bytes.grads > 0) grads_ = Buffer(device, size_t(bytes.grads), MemoryCategory::kGrads);
  if (zero_.world_size() > 1 && options_.zero_stage < 3) collectives_ = std::make_unique<ZeroCollectives>(zero_, comm_);
  if (bytes.master_copy > 0) master_whole_ = Buffer(device, size_t(bytes.master_copy), MemoryCategory::kWeights);
  // Alignment gaps between units belong to no unit and are never computed with; zero them once
  // so checkpoints and gathers only ever move defined values.
  zero_bytes(backend_.nn(), weights_.data(), int64_t(weights_.bytes()));
  if (grads_.data() != nullptr) zero_bytes(backend_.nn(), grads_.data(), int64_t(grads_.bytes()));
  params_.resize(units);
  gathered_.resize(units);
  accumulators_.resize(units);
  in_place_.assign(units, false);
  pending_.resize(units);
  grad_adds_.assign(units, GradAdds::kSeveral);
}

ParamStoreBytes ParamStore::planned_bytes(const ZeroLayout& zero, const ParamStoreOptions& options) {
  const int64_t whole = zero.global_elems(), owned = zero.owned_elems();
  const bool several_hold_whole = zero.world_size() > 1 && options.zero_stage < 3;
  ParamStoreBytes b;
  b.weights = (options.zero_stage < 3 ? whole : owned) * 2;
  if (!options.optimizer_in_backward) {
    b.grads = (options.zero_stage == 1 ? whole : owned) *
              int64_t(dtype_size_bytes(kept_gradient_dtype(options, zero.world_size())));
  }
  if (several_hold_whole && options.compute_from_master) b.master_copy = whole * 4;
  if (several_hold_whole) b.staging = ZeroCollectives::staging_bytes(zero);
  return b;
}

int64_t mpi_all_reduce_temp_bytes(int64_t n, int world, int64_t elem_bytes) {
  if (n == 0 || world == 1) return 0;
  return 2 * ((n + world - 1) / world) * world * elem_bytes;
}

// Each figure is what the call named beside it allocates (below in this file); keep them together.
ParamStoreUnitBytes ParamStore::planned_unit_bytes(const ZeroLayout& zero, const ParamStoreOptions& options,
                                                   size_t unit, UnitStorage::GradAdds adds) {
  const int64_t shard = zero.shard_elems(unit), padded = zero.padded_elems(unit);
  const int64_t span = zero.aligned_end(unit) - zero.units()[unit].begin;
  const int world = zero.world_size();
  const bool solo = world == 1;
  const bool local = solo || options.zero_stage < 3;  // unit_is_local()
  const bool gather_f32 = options.compute_from_master;
  ParamStoreUnitBytes b;
  // start_gather: the send slot (L_u elements of bf16, or of the fp32 master) and the receive
  // buffer (P_u): the fp32 parameters themselves when the master is gathered, else bf16.
  if (!local) {
    b.gathering.comm = shard * (gather_f32 ? 4 : 2);
    if (gather_f32) b.gathering.weights = padded * 4;
    else b.gathering.comm += padded * 2;
  }
  // acquire_params: P_u fp32 parameters. Where local they are widened from this rank's copy;
  // gathered, the received fp32 master becomes them (nothing new), or the received bf16 is
  // widened into them with both alive; then the gather's buffers go.
  b.params.held.weights = padded * 4;
  if (local) {
    b.params.peak = b.params.held;
  } else {
    b.params.peak = b.gathering;
    if (!gather_f32) b.params.peak.weights += padded * 4;
  }
  // acquire_bf16_params: nothing where local (this rank's own weights are read); gathered, the
  // received bf16 is kept until release (the send slot goes).
  if (!local) {
    b.bf16_params.peak = b.gathering;
    b.bf16_params.held.comm = padded * 2;
  }
  // acquire_grads: an fp32 accumulator of P_u (zero-filled, or to be written), or nothing in place.
  b.accumulator = grads_in_place(options, world, adds) ? 0 : padded * 4;
  // grads_ready: stage 1 all-reduces the accumulator's span, or the kept gradients' where in
  // place, in place (MpiCommunicator's temporaries); stages 2-3 reduce-scatter the accumulator
  // into this rank's block (L_u fp32), the communicator receiving every rank's block of it (P_u fp32).
  b.reducing.grads = b.accumulator;
  if (!solo && options.zero_stage == 1) b.reducing.comm = mpi_all_reduce_temp_bytes(span, world, 4);
  if (!solo && options.zero_stage >= 2) b.reducing.comm = shard * 4 + padded * 4;
  if (options.optimizer_in_backward) {
    // The hook reads this rank's block (the accumulator already gone) or the accumulator itself,
    // and, where gradients are kept in bf16, a bf16 copy of the owned part.
    if (!solo && options.zero_stage >= 2) b.stepping.comm = shard * 4;
    else b.stepping.grads = b.accumulator;
    if (kept_gradient_dtype(options, world) == DType::kBF16) {
      b.stepping.grads += zero.owned(unit, zero.rank()).size() * 2;
    }
  }
  return b;
}

uint16_t* ParamStore::weight_at(int64_t global) const {
  auto* base = static_cast<uint16_t*>(weights_.data());
  if (whole_weights_) return base + global;
  for (size_t s = 0; s < shards_.size(); ++s) {
    const int64_t begin = int64_t(shards_[s].global_offset);
    if (global >= begin && global < begin + int64_t(shards_[s].numel)) {
      return base + compact_offset_[s] + (global - begin);
    }
  }
  FARTHING_FAIL("global element ", global, " is not held by rank ", zero_.rank(), " (ZeRO-3 keeps owned shards only)");
}

Tensor ParamStore::weights(size_t shard) const {
  const optim::ShardSpec& s = shards_.at(shard);
  return Tensor(weight_at(int64_t(s.global_offset)), DType::kBF16, Shape{int64_t(s.numel)}, backend_.device());
}

Tensor ParamStore::grads(size_t shard) const {
  const optim::ShardSpec& s = shards_.at(shard);
  if (grads_.data() == nullptr) return Tensor();
  const int64_t index = whole_grads_ ? int64_t(s.global_offset) : compact_offset_[shard];
  auto* base = static_cast<std::byte*>(grads_.data()) + size_t(index) * dtype_size_bytes(grad_dtype_);
  return Tensor(base, grad_dtype_, Shape{int64_t(s.numel)}, backend_.device());
}

void ParamStore::set_initial_weights(int64_t begin, int64_t count, const float* values) {
  const Device device = backend_.device();
  auto narrow_range = [&](int64_t from, int64_t to) {  // global [from, to), inside [begin, begin + count)
    if (from >= to) return;
    backend_.cast(Tensor(weight_at(from), DType::kBF16, Shape{to - from}, device),
                  Tensor(const_cast<float*>(values) + (from - begin), DType::kF32, Shape{to - from}, device),
                  CastOptions{});
  };
  const int64_t end = begin + count;
  if (whole_weights_) {
    narrow_range(begin, end);
  } else {
    for (const optim::ShardSpec& s : shards_) {
      narrow_range(std::max(begin, int64_t(s.global_offset)), std::min(end, int64_t(s.global_offset + s.numel)));
    }
  }
  if (master_whole_.data() != nullptr) {
    backend_.nn().copy(static_cast<float*>(master_whole_.data()) + begin, values, count);
  }
}

void ParamStore::publish_weights() {
  if (!collectives_) return;
  collectives_->gather_owned(weights_.data(), DType::kBF16);
  if (master_whole_.data() == nullptr) return;
  auto* dst = static_cast<float*>(master_whole_.data());
  for (size_t s = 0; s < shards_.size(); ++s) {
    const int64_t n = int64_t(shards_[s].numel);
    backend_.nn().copy(dst + shards_[s].global_offset, master_(s), n);
  }
  collectives_->gather_owned(dst, DType::kF32);
}

// A unit's parameters from what this rank holds: its whole span at stages 1-2 (or at world 1).
void ParamStore::fill_local_params(int unit, float* dst) {
  const size_t u = size_t(unit);
  const int64_t begin = zero_.units()[u].begin, span = zero_.aligned_end(u) - begin;
  const Device device = backend_.device();
  if (options_.compute_from_master) {
    // At world 1 the owned master is the whole unit; over several ranks its gathered copy.
    const float* src = master_whole_.data() != nullptr ? static_cast<const float*>(master_whole_.data()) + begin
                                                      : master_(size_t(shard_of(unit)));
    backend_.nn().copy(dst, src, span);
  } else {
    backend_.cast(Tensor(dst, DType::kF32, Shape{span}, device), Tensor(weight_at(begin), DType::kBF16, Shape{span}, device),
                  CastOptions{});
  }
  backend_.nn().zero(dst + span, zero_.padded_elems(u) - span);
}

void ParamStore::start_gather(int unit, Pending& p) {
  const size_t u = size_t(unit);
  const int64_t shard = zero_.shard_elems(u), padded = zero_.padded_elems(u);
  const UnitRange owned = zero_.owned(u, zero_.rank());
  const DType dtype = options_.compute_from_master ? DType::kF32 : DType::kBF16;
  const size_t elem = dtype_size_bytes(dtype);
  const Device device = backend_.device();
  // Every rank sends its shard slot (owned elements, zeros past them); the gathered slots in rank
  // order are the unit's padded span.
  p.send = Buffer(device, size_t(shard) * elem, MemoryCategory::kCommBuffers);  // planned: gathering
  zero_bytes(backend_.nn(), p.send.data(), int64_t(p.send.bytes()));
  if (!owned.empty()) {
    const void* src = options_.compute_from_master ? static_cast<const void*>(master_(size_t(shard_of(unit))))
                                                   : static_cast<const void*>(weight_at(owned.begin));
    backend_.copy(Tensor(p.send.data(), dtype, Shape{owned.size()}, device),
                  Tensor(const_cast<void*>(src), dtype, Shape{owned.size()}, device));
  }
  // fp32 (the master) lands directly in the parameters; bf16 in a buffer widened on acquire.
  p.received = dtype == DType::kF32 ? Buffer(device, size_t(padded) * 4, MemoryCategory::kWeights)
                                    : Buffer(device, size_t(padded) * 2, MemoryCategory::kCommBuffers);
  p.handle = comm_.all_gather_async(p.received.view(dtype, Shape{padded}), p.send.view(dtype, Shape{shard}));
  bytes_sent_ += (comm_.world_size() - 1) * shard * int64_t(elem);
}

void ParamStore::prefetch_params(int unit) {
  if (unit_is_local()) return;  // nothing to move: acquire widens what this rank holds
  const size_t u = size_t(unit);
  if (params_[u].data() != nullptr || gathered_[u].data() != nullptr || pending_[u]) return;
  pending_[u] = std::make_unique<Pending>();
  start_gather(unit, *pending_[u]);
}

const float* ParamStore::acquire_params(int unit) {
  const size_t u = size_t(unit);
  FARTHING_CHECK(params_[u].data() == nullptr, "unit ", unit, " acquired twice");
  const int64_t padded = zero_.padded_elems(u);
  const Device device = backend_.device();
  if (unit_is_local()) {
    // NOTE: the whole unit is here, so no gather: its parameters are widened (or copied) from
    // this rank's own copy, with no send or receive buffer and no communicator thread.
    params_[u] = Buffer(device, size_t(padded) * 4, MemoryCategory::kWeights);  // planned: params
    fill_local_params(unit, static_cast<float*>(params_[u].data()));
    return static_cast<const float*>(params_[u].data());
  }
  std::unique_ptr<Pending> p = std::move(pending_[u]);
  if (!p) {  // not prefetched: gather now
    p = std::make_unique<Pending>();
    start_gather(unit, *p);
  }
  p->handle.wait_on_device();  // the compute reads the gathered unit after the gather; the host goes on
  if (options_.compute_from_master) {
    params_[u] = std::move(p->received);
  } else {
    params_[u] = Buffer(device, size_t(padded) * 4, MemoryCategory::kWeights);  // planned: params.peak
    backend_.cast(params_[u].view(DType::kF32, Shape{padded}), p->received.view(DType::kBF16, Shape{padded}),
                  CastOptions{});
  }
  return static_cast<const float*>(params_[u].data());
}

const uint16_t* ParamStore::acquire_bf16_params(int unit) {
  const size_t u = size_t(unit);
  FARTHING_CHECK(params_[u].data() == nullptr && gathered_[u].data() == nullptr, "unit ", unit, " acquired twice");
  FARTHING_CHECK(!options_.compute_from_master, "ParamStore: bf16 parameters asked for while the compute reads the "
                 "fp32 master (precision fp32)");
  if (unit_is_local()) return weight_at(zero_.units()[u].begin);  // this rank's own bf16 weights
  std::unique_ptr<Pending> p = std::move(pending_[u]);
  if (!p) {  // not prefetched: gather now
    p = std::make_unique<Pending>();
    start_gather(unit, *p);
  }
  p->handle.wait_on_device();  // the compute reads the gathered unit after the gather; the host goes on
  gathered_[u] = std::move(p->received);  // the unit's padded span, rank slots in order (planned: bf16_params)
  return static_cast<const uint16_t*>(gathered_[u].data());
}

void ParamStore::release_params(int unit) {
  params_[size_t(unit)] = Buffer();
  gathered_[size_t(unit)] = Buffer();
}

UnitStorage::UnitGrads ParamStore::acquire_grads(int unit, GradAdds adds) {
  const size_t u = size_t(unit);
  FARTHING_CHECK(accumulators_[u].data() == nullptr && !in_place_[u], "unit ", unit,
                 "'s gradients acquired twice in one backward");
  const int64_t begin = zero_.units()[u].begin, padded = zero_.padded_elems(u);
  const OpPhaseScope phase(OpPhase::kGradients);
  grad_adds_[u] = adds;
  if (grads_in_place(options_, zero_.world_size(), adds)) {
    // This rank holds the unit's kept gradients whole (alone, or at stage 1): they address the
    // unit's span. The step's first backward writes them, the later ones add; what lies past
    // the unit's end was zeroed with the rest when they were made, and nothing writes it.
    FARTHING_CHECK(whole_grads_ || zero_.owned(u, zero_.rank()).begin == begin, "ParamStore: unit ", unit,
                   " is not held whole for its gradients in place");
    float* kept = static_cast<float*>(grads_.data()) + (whole_grads_ ? begin : compact_offset_[size_t(shard_of(unit))]);
    in_place_[u] = true;
    return {kept, micro_batch_ == 0 ? GradWrite::kOverwrite : GradWrite::kAdd};
  }
  accumulators_[u] = Buffer(backend_.device(), size_t(padded) * 4, MemoryCategory::kGrads);  // planned: accumulator
  auto* acc = static_cast<float*>(accumulators_[u].data());
  if (adds == GradAdds::kOnce) {
    // The model writes the unit's span: only the padding past its end, which the reduction and
    // the kept gradients read too, is zeroed here.
    const int64_t written = zero_.units()[u].end - begin;
    if (padded > written) backend_.nn().zero(acc + written, padded - written);
    return {acc, GradWrite::kOverwrite};
  }
  backend_.nn().zero(acc, padded);
  return {acc, GradWrite::kAdd};
}

// Global elements [begin, end) of the summed gradient, from src, into the kept gradients:
// written by micro-batch 0, added by the later ones (micro_batch: the pass that computed them).
void ParamStore::keep_gradients(int unit, int64_t micro_batch, const float* src, int64_t begin, int64_t end) {
  const int64_t n = end - begin;
  if (n == 0) return;
  const OpPhaseScope phase(OpPhase::kGradients);
  const int64_t index = whole_grads_ ? begin : compact_offset_[size_t(shard_of(unit))];
  const Device device = backend_.device();
  if (grad_dtype_ == DType::kBF16) {  // one backward: the cast is the whole story
    auto* dst = static_cast<uint16_t*>(grads_.data()) + index;
    backend_.cast(Tensor(dst, DType::kBF16, Shape{n}, device), Tensor(const_cast<float*>(src), DType::kF32, Shape{n}, device),
                  CastOptions{});
    return;
  }
  float* dst = static_cast<float*>(grads_.data()) + index;
  if (micro_batch == 0) {
    backend_.nn().copy(dst, src, n);
  } else {
    backend_.nn().accumulate(dst, src, n);
  }
}

void ParamStore::grads_ready(int unit) {
  const size_t u = size_t(unit);
  const bool in_place = in_place_[u];
  in_place_[u] = false;
  if (in_place && zero_.world_size() == 1) return;  // already where they are kept: nothing to copy, add or reduce
  const int64_t begin = zero_.units()[u].begin, span = zero_.aligned_end(u) - begin;
  const int64_t shard = zero_.shard_elems(u), padded = zero_.padded_elems(u);
  const Device device = backend_.device();
  Reduction r;
  r.unit = unit;
  r.micro_batch = micro_batch_;
  r.in_place = in_place;
  r.accumulator = std::move(accumulators_[u]);
  // In place (stage 1, one backward a step): this rank's gradients were written into its kept copy.
  auto* acc = in_place ? static_cast<float*>(grads_.data()) + begin : static_cast<float*>(r.accumulator.data());
  // The sum over ranks: in place over the unit's span (stage 1), or into this rank's block (2-3).
  if (zero_.world_size() > 1 && options_.zero_stage == 1) {
    r.handle = comm_.all_reduce_async(Tensor(acc, DType::kF32, Shape{span}, device), ReduceOp::kSum);
    bytes_sent_ += 2 * (comm_.world_size() - 1) * ((span + comm_.world_size() - 1) / comm_.world_size()) * 4;
  } else if (zero_.world_size() > 1) {
    r.mine = Buffer(device, size_t(shard) * 4, MemoryCategory::kCommBuffers);  // planned: reducing
    r.handle = comm_.reduce_scatter_async(r.mine.view(DType::kF32, Shape{shard}),
                                          Tensor(acc, DType::kF32, Shape{padded}, device), ReduceOp::kSum);
    bytes_sent_ += (comm_.world_size() - 1) * shard * 4;
  }
  r.bytes = planned_unit_bytes(zero_, options_, u, grad_adds_[u]).reducing.total();
  reductions_bytes_ += r.bytes;
  reductions_.push_back(std::move(r));
  // Alone there is nothing to wait for: the sum is this rank's own.
  const int64_t bucket = zero_.world_size() > 1 ? options_.reduce_bucket_bytes : 0;
  while (!reductions_.empty() && reductions_bytes_ > bucket) finish_oldest_reduction();
}

void ParamStore::backward_done() {
  while (!reductions_.empty()) finish_oldest_reduction();
}

void ParamStore::finish_oldest_reduction() {
  Reduction r = std::move(reductions_.front());
  reductions_.pop_front();
  reductions_bytes_ -= r.bytes;
  // The compute that reads the sum runs after the reduction; the host goes on (a device
  // communicator's own stream), or has waited (MPI). The communicator's temporaries go here.
  r.handle.wait_on_device();
  if (r.in_place) return;  // the all-reduce summed the kept gradients themselves
  const size_t u = size_t(r.unit);
  const int64_t begin = zero_.units()[u].begin, span = zero_.aligned_end(u) - begin;
  const UnitRange owned = zero_.owned(u, zero_.rank());
  const Device device = backend_.device();
  const float* acc = static_cast<const float*>(r.accumulator.data());
  const float* owned_sum = r.mine.data() != nullptr ? static_cast<const float*>(r.mine.data()) : acc + (owned.begin - begin);
  if (options_.optimizer_in_backward) {
    // The accumulator goes first where the sum landed in this rank's own block.
    if (r.mine.data() != nullptr) r.accumulator = Buffer();
    const int s = owned.empty() ? -1 : shard_of(r.unit);
    Tensor g = s < 0 ? Tensor() : Tensor(const_cast<float*>(owned_sum), DType::kF32, Shape{owned.size()}, device);
    // The step reads the gradient in the kept dtype, as the unfused step would: fusing changes
    // when a unit steps, never its bits.
    Buffer narrowed;
    if (s >= 0 && grad_dtype_ == DType::kBF16) {
      narrowed = Buffer(device, size_t(owned.size()) * 2, MemoryCategory::kGrads);  // planned: stepping
      const Tensor n = narrowed.view(DType::kBF16, Shape{owned.size()});
      backend_.cast(n, g, CastOptions{});
      g = n;
    }
    hook_(r.unit, s, g);
    return;
  }
  if (whole_grads_) {
    keep_gradients(r.unit, r.micro_batch, acc, begin, begin + span);
  } else if (!owned.empty()) {
    keep_gradients(r.unit, r.micro_batch, owned_sum, owned.begin, owned.end);
  }
}

}  // namespace farthing::dist
