// cpu_backend.h — the reference backend: host memory, kernels/cpu loops.
// Tested by: tests/backend/test_backend.cpp and every numerics test.
#pragma once

#include "framework/backend/backend.h"
#include "framework/backend/cpu_nn_ops.h"
#include "framework/backend/host_block_cache.h"
#include "kernels/cpu/block_quant_cpu.h"
#include "kernels/numerics/block_quant4.h"

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
  void fill_bytes(void* dst, uint8_t value, size_t bytes) override;
  void adamw_step(const kernels::AdamWSegment& segment, kernels::AdamWPartials* sums) override;
  void grad_partials(const void* grad, kernels::GradFormat format, size_t n, kernels::GradPartials* sums) override;
  NnOps& nn() override { return nn_; }
  // A moment of n elements (host memory) to fp32 with this backend's map tables
  // (moment_to_f32_on_host in backend.h).
  void moment_to_f32(const kernels::MomentRef& moment, numerics::MapSign sign, float* dst, size_t n) const;
  void synchronize() override {}

 private:
  const kernels::QuantMapCpu& map_for(numerics::MapSign sign) const;
  kernels::QuantMapCpu signed_map_;
  kernels::QuantMapCpu unsigned_map_;
  numerics::DynamicMap4 signed_map4_, unsigned_map4_;
  CpuNnOps nn_;
  // Freed blocks of 1 MiB and more, up to 512 MiB, kept for reuse (host_block_cache.h).
  HostBlockCache blocks_{size_t(512) << 20, size_t(1) << 20};
};

}  // namespace farthing
