// backend.h — the interface through which models and optimizers run ops on a device.
//
// The CPU backend is the reference; the CUDA backend plugs in behind the same interface and
// must agree with it bitwise on every elementwise op (tests/kernels/test_cuda_parity.cpp).
// This file is the only place that picks kernels/cpu or kernels/cuda.
// Tested by: tests/backend/test_backend.cpp, tests/kernels/test_cuda_parity.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "framework/backend/nn_ops.h"
#include "framework/backend/op_profiler.h"
#include "framework/core/tensor.h"
#include "kernels/numerics/adamw_segment.h"
#include "kernels/numerics/block_quant.h"
#include "kernels/numerics/dynamic_map.h"
#include "kernels/numerics/minifloat.h"
#include "kernels/numerics/narrow_format.h"
#include "kernels/numerics/stochastic_round.h"

namespace farthing {

// How a float-to-float cast rounds. global_offset is the global flat index of the first
// element of the source, so stochastic-rounding bits depend on where an element lives in
// the whole model, never on how the array was split or launched.
struct CastOptions {
  numerics::Rounding rounding = numerics::Rounding::kNearestEven;
  numerics::Overflow overflow = numerics::Overflow::kToInfOrNan;  // fp8 targets only
  numerics::RandomKey random_key{};                                // stochastic rounding only
  uint64_t global_offset = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;

  // Raw memory; use Buffer (buffer.h), which tracks it, rather than these directly.
  virtual void* allocate_bytes(size_t bytes) = 0;
  virtual void free_bytes(void* data) = 0;

  // dst <- src for contiguous tensors of one dtype and size; either side may be host memory.
  // A copy into host memory is complete on return (on a GPU, the host waits for the device: a
  // readback); a copy from host memory may be read by the host again at once.
  virtual void copy(const Tensor& dst, const Tensor& src) = 0;

  // dst <- cast(src) elementwise between f32 and {bf16, f16, e4m3, e5m2}, both contiguous.
  // Narrowing casts use options.rounding; widening casts are exact.
  virtual void cast(const Tensor& dst, const Tensor& src, const CastOptions& options) = 0;

  // Block-wise 8-bit quantization (kernels/numerics/block_quant.h): src f32 of n elements,
  // codes u8 of n, absmax f32 of ceil(n / 256). src[0] must sit on a 256-element boundary of
  // the global flat space; the last block may be short.
  virtual void block_quantize(const Tensor& codes, const Tensor& absmax, const Tensor& src,
                              numerics::MapSign sign) = 0;
  virtual void block_dequantize(const Tensor& dst, const Tensor& codes, const Tensor& absmax,
                                numerics::MapSign sign) = 0;

  // dst[0, bytes) = value (the optimizer's initial moments: zero codes of its 8- and 4-bit maps).
  virtual void fill_bytes(void* dst, uint8_t value, size_t bytes) = 0;

  // One fused AdamW step over a segment whose pointers address this device's memory; the
  // backend supplies its own tables of the quantization maps. Bitwise the same on every
  // backend, except the two sums of squares (see optim_cuda.h). The segment's partials are
  // added to *sums, which lies in this device's memory too: nothing comes back to the host, so
  // a GPU queues the step and the host goes on (the caller reads the sums once per step).
  virtual void adamw_step(const kernels::AdamWSegment& segment, kernels::AdamWPartials* sums) = 0;
  // Adds the sum of squares and non-finite count of n gradient values on this device to *sums
  // (this device's memory).
  virtual void grad_partials(const void* grad, kernels::GradFormat format, size_t n, kernels::GradPartials* sums) = 0;

  // The model ops (matmul, attention, norms, ...) on this device's memory; models/ is written
  // against these (CpuNnOps, CudaNnOps, StrictNnOps).
  virtual NnOps& nn() = 0;

  // Waits until all work queued on this backend has finished.
  virtual void synchronize() = 0;

  // The device's dense BF16 tensor-core peak in FLOP/s from its datasheet (no sparsity), the
  // denominator of MFU; 0 where there is none to quote (CPUs, unknown GPUs).
  virtual double dense_bf16_peak_flops() const { return 0.0; }

  // A CUDA device's compute capability as major * 10 + minor (90 for Hopper, 100 for B200); 0
  // for devices that are not CUDA GPUs. FP4 tensor cores (NVFP4, MXFP4) start at 100.
  virtual int cuda_compute_capability() const { return 0; }
  // The device's model as its runtime names it ("NVIDIA H200"); empty for devices without one.
  virtual std::string device_model() const { return {}; }

  // The clock a step profile (op_profiler.h) marks this device's work with: the host's steady
  // clock here, which is right where an op has finished when its call returns; CUDA events on
  // the backend's stream on a GPU.
  virtual std::unique_ptr<OpClock> make_op_clock();
};

// The backend of a device; the CPU and strict test backends always exist, CUDA ones when built
// with CUDA.
Backend& backend_for(Device device);

// A moment of n elements (m: signed map, v: unsigned) widened to fp32, in host memory only:
// inspection and tests (AdamW::moments_to_f32 copies a device's moments to the host first), with
// the CPU backend's tables of the quantization maps.
void moment_to_f32_on_host(const kernels::MomentRef& moment, numerics::MapSign sign, float* dst, size_t n);

// True when this binary was built with CUDA and at least one device is visible.
bool cuda_available();
// The number of visible CUDA devices (0 without CUDA, a driver or a GPU).
int visible_cuda_devices();

// A device's memory as its runtime reports it now.
struct DeviceMemory {
  int64_t free_bytes = 0;
  int64_t total_bytes = 0;
};
// CUDA device `index`'s free and total memory; throws naming the device when this binary has no
// CUDA or the device is not visible.
DeviceMemory cuda_device_memory_of(int index);

// The narrow format a dtype stores; throws for dtypes that are not narrow floats.
numerics::NarrowFormat narrow_format_of(DType dtype);

// Shared argument checks, so every backend rejects bad calls with the same message.
void check_cast_args(const Tensor& dst, const Tensor& src);
void check_block_quant_args(const Tensor& codes, const Tensor& absmax, const Tensor& values);

}  // namespace farthing
