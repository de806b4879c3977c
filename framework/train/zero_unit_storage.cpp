// zero_unit_storage.cpp — see zero_unit_storage.h.
#include "framework/train/zero_unit_storage.h"

#include <cstring>

#include "framework/core/error.h"
#include "kernels/cpu/cast_cpu.h"

namespace farthing::train {

ZeroUnitStorage::ZeroUnitStorage(const dist::ZeroLayout& zero, Communicator& comm, Sources sources)
    : zero_(zero), comm_(comm), sources_(std::move(sources)) {
  FARTHING_CHECK(sources_.params_dtype == DType::kBF16 || sources_.params_dtype == DType::kF32,
                 "ZeroUnitStorage: parameters are gathered as bf16 or f32, not ", dtype_name(sources_.params_dtype));
  params_.resize(zero_.units().size());
  grads_.resize(zero_.units().size());
  pending_.resize(zero_.units().size());
}

void ZeroUnitStorage::start_gather(int unit, Pending& p) {
  const size_t u = size_t(unit);
  const int64_t shard = zero_.shard_elems(u), padded = zero_.padded_elems(u);
  const dist::UnitRange owned = zero_.owned(u, zero_.rank());
  const DType dtype = sources_.params_dtype;
  const size_t elem = dtype_size_bytes(dtype);
  // Every rank sends its shard slot (owned elements, zeros past them); the gathered slots in rank
  // order are the unit's padded span.
  p.send = Buffer(Device::cpu(), size_t(shard) * elem, MemoryCategory::kCommBuffers);
  std::memset(p.send.data(), 0, p.send.bytes());
  if (!owned.empty()) std::memcpy(p.send.data(), sources_.owned_params(unit), size_t(owned.size()) * elem);
  // fp32 (the master) lands directly in the parameters; bf16 in a buffer widened on acquire.
  p.received = dtype == DType::kF32 ? Buffer(Device::cpu(), size_t(padded) * 4, MemoryCategory::kWeights)
                                    : Buffer(Device::cpu(), size_t(padded) * 2, MemoryCategory::kCommBuffers);
  p.handle = comm_.all_gather_async(Tensor(p.received.data(), dtype, Shape{padded}),
                                    Tensor(p.send.data(), dtype, Shape{shard}));
  bytes_sent_ += (comm_.world_size() - 1) * shard * int64_t(elem);
}

void ZeroUnitStorage::prefetch_params(int unit) {
  if (comm_.world_size() == 1) return;  // nothing to move: acquire widens the owned part itself
  const size_t u = size_t(unit);
  if (params_[u].data() != nullptr || pending_[u]) return;
  pending_[u] = std::make_unique<Pending>();
  start_gather(unit, *pending_[u]);
}

const float* ZeroUnitStorage::acquire_params(int unit) {
  const size_t u = size_t(unit);
  FARTHING_CHECK(params_[u].data() == nullptr, "unit ", unit, " acquired twice");
  if (comm_.world_size() == 1) {
    // NOTE: the one rank owns the whole unit, so the gather is the identity: its parameters are
    // the owned part itself (copied, or widened exactly from bf16), with no send or receive
    // buffer and no communicator thread competing with the compute for the cores.
    const int64_t padded = zero_.padded_elems(u), owned = zero_.owned(u, 0).size();
    params_[u] = Buffer(Device::cpu(), size_t(padded) * sizeof(float), MemoryCategory::kWeights);
    float* dst = static_cast<float*>(params_[u].data());
    if (sources_.params_dtype == DType::kF32) {
      std::memcpy(dst, sources_.owned_params(unit), size_t(owned) * sizeof(float));
    } else {
      kernels::cast_narrow_to_f32_cpu(kernels::NarrowFormat::kBf16, sources_.owned_params(unit), dst, size_t(owned));
    }
    std::memset(dst + owned, 0, size_t(padded - owned) * sizeof(float));
    return dst;
  }
  std::unique_ptr<Pending> p = std::move(pending_[u]);
  if (!p) {  // not prefetched: gather now
    p = std::make_unique<Pending>();
    start_gather(unit, *p);
  }
  p->handle.wait();
  if (sources_.params_dtype == DType::kF32) {
    params_[u] = std::move(p->received);
  } else {
    const int64_t padded = zero_.padded_elems(u);
    params_[u] = Buffer(Device::cpu(), size_t(padded) * sizeof(float), MemoryCategory::kWeights);
    kernels::cast_narrow_to_f32_cpu(kernels::NarrowFormat::kBf16, p->received.data(),
                                    static_cast<float*>(params_[u].data()), size_t(padded));
  }
  return static_cast<const float*>(params_[u].data());
}

void ZeroUnitStorage::release_params(int unit) { params_[size_t(unit)] = Buffer(); }

float* ZeroUnitStorage::acquire_grads(int unit) {
  const size_t u = size_t(unit);
  FARTHING_CHECK(grads_[u].data() == nullptr, "unit ", unit, "'s gradients acquired twice in one backward");
  grads_[u] = Buffer(Device::cpu(), size_t(zero_.padded_elems(u)) * sizeof(float), MemoryCategory::kGrads);
  std::memset(grads_[u].data(), 0, grads_[u].bytes());
  return static_cast<float*>(grads_[u].data());
}

void ZeroUnitStorage::grads_ready(int unit) {
  const size_t u = size_t(unit);
  if (comm_.world_size() == 1) {  // the reduce-scatter over one rank is the identity
    sources_.on_unit_grads(unit, static_cast<const float*>(grads_[u].data()));
    grads_[u] = Buffer();
    return;
  }
  const int64_t shard = zero_.shard_elems(u), padded = zero_.padded_elems(u);
  Buffer mine(Device::cpu(), size_t(shard) * sizeof(float), MemoryCategory::kCommBuffers);
  comm_.reduce_scatter(Tensor(mine.data(), DType::kF32, Shape{shard}), Tensor(grads_[u].data(), DType::kF32, Shape{padded}),
                       ReduceOp::kSum);
  bytes_sent_ += (comm_.world_size() - 1) * shard * int64_t(sizeof(float));
  grads_[u] = Buffer();
  sources_.on_unit_grads(unit, static_cast<const float*>(mine.data()));
}

}  // namespace farthing::train
