// cpu_backend.h — the reference backend: host memory, kernels/cpu loops.
// Tested by: tests/core/test_backend.cpp and every numerics test.
#pragma once

#include "framework/backend/backend.h"
#include "framework/backend/cpu_nn_ops.h"
#include "framework/backend/host_block_cache.h"
#include "kernels/cpu/block_quant_cpu.h"

namespace farthing {

class CpuBackend final : public Backend {
 public:
  CpuBackend();
  Device device() const override { return Device::cpu(); }
  void* allocate_bytes(size_t bytes) override;
  void free_bytes(void* data) override;
  void copy(const Tensor& dst, const Tensor& src) override;
  void cast(const Tensor& dst, const Tensor& src, const CastOptions& options) override;
  void block_quantize(const Tensor& codes, const Tensor& absmax, const Tensor& src,
                      numerics::MapSign sign) override;
  void block_dequantize(const Tensor& dst, const Tensor& codes, const Tensor& absmax,
                        numerics::MapSign sign) override;
  NnOps& nn() override { return nn_; }
  void synchronize() override {}

 private:
  const kernels::QuantMapCpu& map_for(numerics::MapSign sign) const;
  kernels::QuantMapCpu signed_map_;
  kernels::QuantMapCpu unsigned_map_;
  CpuNnOps nn_;
  // Freed blocks of 1 MiB and more, up to 512 MiB, kept for reuse (host_block_cache.h).
  HostBlockCache blocks_{size_t(512) << 20, size_t(1) << 20};
};

}  // namespace farthing
