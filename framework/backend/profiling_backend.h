// profiling_backend.h — a Backend that runs every call on another backend and times it
// (op_profiler.h): train.profile: ops.
//
// While one is installed (ProfilingBackend::Install), backend_for(its device) returns it, so
// every caller of the device's backend — the model through nn(), the parameter store, the
// optimizer, the communicators' staging, Buffer's allocations — goes through it without being
// told. Each call is one span of its kind; the kinds are the roofline's (train/plan/roofline.h:
// "gemm", "norm forward", ...) where it has one, so a step's measured ops sit beside their
// roofline. Nothing changes in what the calls compute: each forwards its arguments unchanged.
// Relies on: backend.h, nn_ops.h, op_profiler.h. Tested by: tests/backend/test_op_profiler.cpp,
// tests/train/loop/test_step_profile.cpp.
#pragma once

#include <memory>

#include "framework/backend/backend.h"
#include "framework/backend/op_profiler.h"

namespace farthing {

class ProfilingNnOps;

class ProfilingBackend final : public Backend {
 public:
  // inner must outlive this object; the clock is inner's op clock (make_op_clock).
  explicit ProfilingBackend(Backend& inner);
  ~ProfilingBackend() override;

  OpProfiler& profiler() { return profiler_; }
  Backend& inner() { return inner_; }

  // backend_for(device) returns `backend` for as long as this object lives, and its profiler
  // is the active one (OpPhaseScope). One at a time.
  class Install {
   public:
    explicit Install(ProfilingBackend& backend);
    ~Install();
    Install(const Install&) = delete;
    Install& operator=(const Install&) = delete;
  };

  Device device() const override { return inner_.device(); }
  void* allocate_bytes(size_t bytes) override;
  void free_bytes(void* data) override;
  void copy(const Tensor& dst, const Tensor& src) override;
  void cast(const Tensor& dst, const Tensor& src, const CastOptions& options) override;
  void block_quantize(const Tensor& codes, const Tensor& absmax, const Tensor& src, numerics::MapSign sign) override;
  void block_dequantize(const Tensor& dst, const Tensor& codes, const Tensor& absmax,
                        numerics::MapSign sign) override;
  void fill_bytes(void* dst, uint8_t value, size_t bytes) override;
  void adamw_step(const kernels::AdamWSegment& segment, kernels::AdamWPartials* sums) override;
  void grad_partials(const void* grad, kernels::GradFormat format, size_t n, kernels::GradPartials* sums) override;
  NnOps& nn() override;
  void synchronize() override;
  double dense_bf16_peak_flops() const override { return inner_.dense_bf16_peak_flops(); }
  int cuda_compute_capability() const override { return inner_.cuda_compute_capability(); }
  std::string device_model() const override { return inner_.device_model(); }
  std::unique_ptr<OpClock> make_op_clock() override { return inner_.make_op_clock(); }

 private:
  Backend& inner_;
  OpProfiler profiler_;
  std::unique_ptr<ProfilingNnOps> nn_;
};

// The backend backend_for(device) returns while a ProfilingBackend is installed, or null.
Backend* installed_backend_override(Device device);

}  // namespace farthing
