// strict_device_backend.cpp — see strict_device_backend.h.
#include "framework/backend/strict_device_backend.h"

#include <cstring>

#include "framework/core/error.h"

namespace farthing {

namespace {
// Address space reserved for the test device; only what is allocated is ever backed by memory.
constexpr size_t kReserveBytes = size_t(64) << 30;
}  // namespace

StrictDeviceBackend::StrictDeviceBackend() : arena_(kReserveBytes), nn_(arena_) {}

void* StrictDeviceBackend::allocate_bytes(size_t bytes) {
  ++allocations_;
  const size_t reached = arena_.high_water_bytes();
  void* data = arena_.allocate(bytes);
  if (arena_.high_water_bytes() > reached) ++pool_growths_;
  FARTHING_CHECK(data != nullptr, "strict device: allocation of ", bytes, " bytes failed (the ",
                 kReserveBytes >> 30, " GiB reservation is used up)");
  return data;
}

void StrictDeviceBackend::free_bytes(void* data) { arena_.free(data); }

void StrictDeviceBackend::check_device_pointer(const void* p, const char* op, const char* what) const {
  FARTHING_CHECK(p == nullptr || arena_.holds(p), "strict device: ", op, " was given host memory for ", what,
                 "; the optimizer's and the store's buffers live on the device");
}

Tensor StrictDeviceBackend::on_host(const Tensor& t, const char* op) const {
  FARTHING_CHECK(t.device() == device(), "strict device: ", op, " takes tensors on the strict device, got ",
                 t.describe());
  FARTHING_CHECK(t.numel() == 0 || arena_.holds(t.data()), "strict device: ", op, ": ", t.describe(),
                 " is tagged as device memory but points to host memory");
  return Tensor(t.data(), t.dtype(), t.shape(), Device::cpu());
}

void StrictDeviceBackend::copy(const Tensor& dst, const Tensor& src) {
  // Either side may be host memory, but each tag must say where its memory really is: a device
  // pointer wrapped in a host tensor is exactly the mistake a GPU would punish.
  for (const Tensor* t : {&dst, &src}) {
    if (t->numel() == 0) continue;
    const bool in_arena = arena_.holds(t->data());
    FARTHING_CHECK(t->device().is_cpu() ? !in_arena : (t->device() == device() && in_arena),
                   "strict device: copy: ", t->describe(), in_arena ? " points to device memory but is tagged host"
                                                                    : " is not memory of this device");
  }
  if (dst.numel() > 0 && dst.device().is_cpu() && src.device() == device()) ++readbacks_;
  const Tensor d(dst.data(), dst.dtype(), dst.shape(), Device::cpu()), s(src.data(), src.dtype(), src.shape(), Device::cpu());
  GuardedArena::Access access(arena_);
  cpu_.copy(d, s);
}

void StrictDeviceBackend::cast(const Tensor& dst, const Tensor& src, const CastOptions& options) {
  const Tensor d = on_host(dst, "cast"), s = on_host(src, "cast");
  GuardedArena::Access access(arena_);
  cpu_.cast(d, s, options);
}

void StrictDeviceBackend::block_quantize(const Tensor& codes, const Tensor& absmax, const Tensor& src,
                                         numerics::MapSign sign) {
  const Tensor c = on_host(codes, "block_quantize"), a = on_host(absmax, "block_quantize"),
               s = on_host(src, "block_quantize");
  GuardedArena::Access access(arena_);
  cpu_.block_quantize(c, a, s, sign);
}

void StrictDeviceBackend::block_dequantize(const Tensor& dst, const Tensor& codes, const Tensor& absmax,
                                           numerics::MapSign sign) {
  const Tensor d = on_host(dst, "block_dequantize"), c = on_host(codes, "block_dequantize"),
               a = on_host(absmax, "block_dequantize");
  GuardedArena::Access access(arena_);
  cpu_.block_dequantize(d, c, a, sign);
}

void StrictDeviceBackend::fill_bytes(void* dst, uint8_t value, size_t bytes) {
  if (bytes == 0) return;
  check_device_pointer(dst, "fill_bytes", "dst");
  GuardedArena::Access access(arena_);
  std::memset(dst, value, bytes);
}

void StrictDeviceBackend::adamw_step(const kernels::AdamWSegment& s, kernels::AdamWPartials* sums) {
  check_device_pointer(s.grad, "adamw_step", "the gradient");
  check_device_pointer(s.weight, "adamw_step", "the weights");
  check_device_pointer(s.master, "adamw_step", "the master");
  check_device_pointer(s.remainder, "adamw_step", "the master's remainders");
  check_device_pointer(s.m.values, "adamw_step", "m");
  check_device_pointer(s.v.values, "adamw_step", "v");
  check_device_pointer(s.m.absmax, "adamw_step", "m's absmax");
  check_device_pointer(s.v.absmax, "adamw_step", "v's absmax");
  FARTHING_CHECK(sums != nullptr, "strict device: adamw_step needs sums");
  check_device_pointer(sums, "adamw_step", "the step's sums");
  GuardedArena::Access access(arena_);
  cpu_.adamw_step(s, sums);
}

void StrictDeviceBackend::grad_partials(const void* grad, kernels::GradFormat format, size_t n,
                                        kernels::GradPartials* sums) {
  check_device_pointer(grad, "grad_partials", "the gradient");
  FARTHING_CHECK(sums != nullptr, "strict device: grad_partials needs sums");
  check_device_pointer(sums, "grad_partials", "the gradients' sums");
  GuardedArena::Access access(arena_);
  cpu_.grad_partials(grad, format, n, sums);
}

}  // namespace farthing
