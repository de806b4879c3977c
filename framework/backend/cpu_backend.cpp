// cpu_backend.cpp — see cpu_backend.h.
#include "framework/backend/cpu_backend.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "kernels/cpu/block_quant_cpu.h"
#include "kernels/cpu/cast_cpu.h"
#include "kernels/cpu/optim_cpu.h"

namespace farthing {

CpuBackend::CpuBackend()
    : signed_map_(kernels::make_quant_map_cpu(numerics::MapSign::kSigned)),
      unsigned_map_(kernels::make_quant_map_cpu(numerics::MapSign::kUnsigned)),
      signed_map4_(numerics::make_dynamic_map_4bit(numerics::MapSign::kSigned)),
      unsigned_map4_(numerics::make_dynamic_map_4bit(numerics::MapSign::kUnsigned)) {}

void* CpuBackend::allocate_bytes(size_t bytes) {
  void* data = blocks_.allocate(bytes);
  FARTHING_CHECK(data != nullptr, "host allocation of ", bytes, " bytes failed (out of memory)");
  return data;
}

void CpuBackend::free_bytes(void* data) { blocks_.free(data); }

void CpuBackend::copy(const Tensor& dst, const Tensor& src) {
  FARTHING_CHECK(dst.dtype() == src.dtype() && dst.numel() == src.numel(), "copy from ",
                 src.describe(), " to ", dst.describe(), ": dtype or size differ");
  FARTHING_CHECK(dst.device().is_cpu() && src.device().is_cpu(),
                 "the CPU backend copies host memory only; got ", src.describe(), " -> ", dst.describe());
  FARTHING_CHECK(dst.is_contiguous() && src.is_contiguous(), "copy needs contiguous tensors");
  std::memcpy(dst.data(), src.data(), dst.nbytes());
}

void CpuBackend::cast(const Tensor& dst, const Tensor& src, const CastOptions& options) {
  check_cast_args(dst, src);
  const size_t n = size_t(src.numel());
  if (src.dtype() == dst.dtype()) return copy(dst, src);
  if (src.dtype() == DType::kF32) {
    const auto format = narrow_format_of(dst.dtype());
    if (options.rounding == numerics::Rounding::kStochastic) {
      kernels::cast_f32_to_narrow_sr_cpu(format, static_cast<const float*>(src.data()), dst.data(), n,
                                         options.random_key, options.global_offset);
    } else {
      kernels::cast_f32_to_narrow_cpu(format, static_cast<const float*>(src.data()), dst.data(), n,
                                      options.overflow);
    }
    return;
  }
  kernels::cast_narrow_to_f32_cpu(narrow_format_of(src.dtype()), src.data(),
                                  static_cast<float*>(dst.data()), n);
}

const kernels::QuantMapCpu& CpuBackend::map_for(numerics::MapSign sign) const {
  return sign == numerics::MapSign::kSigned ? signed_map_ : unsigned_map_;
}

void CpuBackend::block_quantize(const Tensor& codes, const Tensor& absmax, const Tensor& src,
                                numerics::MapSign sign) {
  check_block_quant_args(codes, absmax, src);
  kernels::block_quantize_cpu(map_for(sign), static_cast<const float*>(src.data()), static_cast<uint8_t*>(codes.data()),
                              static_cast<float*>(absmax.data()), size_t(src.numel()));
}

void CpuBackend::block_dequantize(const Tensor& dst, const Tensor& codes, const Tensor& absmax,
                                  numerics::MapSign sign) {
  check_block_quant_args(codes, absmax, dst);
  kernels::block_dequantize_cpu(map_for(sign), static_cast<const uint8_t*>(codes.data()),
                                static_cast<const float*>(absmax.data()), static_cast<float*>(dst.data()),
                                size_t(dst.numel()));
}

void CpuBackend::moment_to_f32(const kernels::MomentRef& moment, numerics::MapSign sign, float* dst,
                               size_t n) const {
  const float* map4 = (sign == numerics::MapSign::kSigned ? signed_map4_ : unsigned_map4_).data();
  kernels::moment_to_f32_cpu(moment, &map_for(sign), map4, dst, n);
}

void CpuBackend::fill_bytes(void* dst, uint8_t value, size_t bytes) {
  if (bytes > 0) std::memset(dst, value, bytes);
}

void CpuBackend::adamw_step(const kernels::AdamWSegment& segment, kernels::AdamWPartials* sums) {
  kernels::AdamWSegmentCpu args;
  static_cast<kernels::AdamWSegment&>(args) = segment;
  args.signed_map = &signed_map_;
  args.unsigned_map = &unsigned_map_;
  args.signed_map4 = signed_map4_.data();
  args.unsigned_map4 = unsigned_map4_.data();
  kernels::add_partials(*sums, kernels::adamw_step_cpu(args));
}

void CpuBackend::grad_partials(const void* grad, kernels::GradFormat format, size_t n, kernels::GradPartials* sums) {
  kernels::add_partials(*sums, kernels::grad_partials_cpu(grad, format, n));
}

}  // namespace farthing
