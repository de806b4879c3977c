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
}

const float* ZeroUnitStorage::acquire_params(int unit) {
  const size_t u = size_t(unit);
  FARTHING_CHECK(params_[u].data() == nullptr, "unit ", unit, " acquired twice");
  const int64_t shard = zero_.shard_elems(u), padded = zero_.padded_elems(u);
  const dist::UnitRange owned = zero_.owned(u, zero_.rank());
  const size_t elem = dtype_size_bytes(sources_.params_dtype);
  // Every rank sends its shard slot (owned elements, zeros past them); the gathered slots in rank
  // order are the unit's padded span.
  Buffer send(Device::cpu(), size_t(shard) * elem, MemoryCategory::kCommBuffers);
  std::memset(send.data(), 0, send.bytes());
  if (!owned.empty()) std::memcpy(send.data(), sources_.owned_params(unit), size_t(owned.size()) * elem);
  params_[u] = Buffer(Device::cpu(), size_t(padded) * sizeof(float), MemoryCategory::kWeights);
  if (sources_.params_dtype == DType::kF32) {
    comm_.all_gather(Tensor(params_[u].data(), DType::kF32, Shape{padded}), Tensor(send.data(), DType::kF32, Shape{shard}));
  } else {
    Buffer gathered(Device::cpu(), size_t(padded) * 2, MemoryCategory::kCommBuffers);
    comm_.all_gather(Tensor(gathered.data(), DType::kBF16, Shape{padded}), Tensor(send.data(), DType::kBF16, Shape{shard}));
    kernels::cast_narrow_to_f32_cpu(kernels::NarrowFormat::kBf16, gathered.data(), static_cast<float*>(params_[u].data()),
                                    size_t(padded));
  }
  bytes_sent_ += (comm_.world_size() - 1) * shard * int64_t(elem);
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
  const int64_t shard = zero_.shard_elems(u), padded = zero_.padded_elems(u);
  Buffer mine(Device::cpu(), size_t(shard) * sizeof(float), MemoryCategory::kCommBuffers);
  comm_.reduce_scatter(Tensor(mine.data(), DType::kF32, Shape{shard}), Tensor(grads_[u].data(), DType::kF32, Shape{padded}),
                       ReduceOp::kSum);
  bytes_sent_ += (comm_.world_size() - 1) * shard * int64_t(sizeof(float));
  grads_[u] = Buffer();
  sources_.on_unit_grads(unit, static_cast<const float*>(mine.data()));
}

}  // namespace farthing::train
