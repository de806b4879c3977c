// test_cuda_optim_parity.cpp — the fused CUDA AdamW step against the CPU reference, bit for bit.
//
// For every combination adamw_step_cpu supports (gradient f32/bf16 × moments f32/bf16/8-bit/
// 4-bit × master f32/remainder16/none × weight cast RN/SR), one segment of an awkward size
// (37 whole 256-blocks and a 201-element tail: a short 8-bit block, a short second 4-bit block
// and an odd 4-bit byte) at a nonzero global offset (a multiple of 256 for blocked moments,
// 256*5 + 3 otherwise, so chunk 0 is short and Philox groups straddle chunks) is stepped
// four times on both backends from the same random state, each side carrying its own state
// forward. After every step weights, masters, remainders, moment values or codes and absmax
// must agree bitwise, and the unchanged-weight count exactly (docs/numerics.md §8). One block has
// zero gradients and zero moments (the all-zero 8-/4-bit block path); the second step uses
// beta1 = 0.4 so both forms of m's lerp run; the third takes its gradient scale from clip sums
// in memory, and the fourth's sums count a non-finite value (nothing may change). Also
// grad_partials_cuda against grad_partials_cpu. 8-bit moments run twice: with aligned arrays
// (the warp-per-block fast path) and with a misaligned gradient (the general kernel).
// Exits 77 (skipped) without a GPU. With FARTHING_SIM_SIZES (the gpu-sim entry, for a GPU
// simulator) the segment is 4 whole blocks and the same 201-element tail, and grad_partials'
// largest size 12289: every path above still runs, at a simulator's speed.
// Built with -DFARTHING_OPTIM_PARITY_SELF_CHECK (by hand, without CUDA), the "device" is host
// memory stepped by adamw_step_cpu: a check of this test's own plumbing, not of the kernel:
//   g++ -std=c++20 -O2 -ffp-contract=off -fopenmp -DFARTHING_OPTIM_PARITY_SELF_CHECK -I.
//     tests/kernels/test_cuda_optim_parity.cpp build/tests/libfarthing_test_support.a
//     build/kernels/libfarthing_kernels_cpu.a build/framework/libfarthing_framework.a
//     -lgtest -ldnnl -lpthread -o /tmp/optim_parity_self_check   (one command line)
// Relies on: kernels/cpu/optim_cpu.h, kernels/cuda/optim_cuda.h, tests/support.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/block_quant_cpu.h"
#include "kernels/cpu/optim_cpu.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/block_quant.h"
#include "kernels/numerics/block_quant4.h"
#include "kernels/numerics/dynamic_map.h"
#include "kernels/numerics/master_remainder.h"
#include "tests/support/test_support.h"

#if defined(FARTHING_OPTIM_PARITY_SELF_CHECK)
#include <cstdlib>
#else
#include "framework/backend/backend.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/optim_cuda.h"
#endif

namespace farthing {
namespace {

namespace kn = kernels;
namespace nm = numerics;

// 37 (4 under FARTHING_SIM_SIZES) whole 256-blocks, then the tail; block 2 is the all-zero one.
size_t segment_elems() { return test::sim_sizes() ? 256 * 4 + 201 : 256 * 37 + 201; }
// Steps 1-2 scale the gradient by scalars.grad_scale; step 3 by the clip rule over gradient sums
// in each side's memory (AdamWSegment::clip_sums, as AdamW::step_clipped_on_device); on step 4
// those sums count a non-finite value, so neither side may change a byte.
constexpr int kSteps = 4;
constexpr int kClipSumsStep = 3, kSkippedStep = 4;
constexpr uint64_t kSeed = 0x0123456789ABCDEFull;

const kn::QuantMapCpu& cpu_map(nm::MapSign sign) {
  static const kn::QuantMapCpu signed_map = kn::make_quant_map_cpu(nm::MapSign::kSigned);
  static const kn::QuantMapCpu unsigned_map = kn::make_quant_map_cpu(nm::MapSign::kUnsigned);
  return sign == nm::MapSign::kSigned ? signed_map : unsigned_map;
}
const nm::DynamicMap4& cpu_map4(nm::MapSign sign) {
  static const nm::DynamicMap4 signed_map = nm::make_dynamic_map_4bit(nm::MapSign::kSigned);
  static const nm::DynamicMap4 unsigned_map = nm::make_dynamic_map_4bit(nm::MapSign::kUnsigned);
  return sign == nm::MapSign::kSigned ? signed_map : unsigned_map;
}

// ---- the device side: CUDA, or host memory stepped by the CPU for the self-check ----------

#if defined(FARTHING_OPTIM_PARITY_SELF_CHECK)
using DeviceSegment = kn::AdamWSegmentCpu;
void* device_alloc(size_t bytes) { return std::malloc(bytes == 0 ? 1 : bytes); }
void device_free(void* p) { std::free(p); }
void copy_to_device(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void copy_to_host(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
#else
using DeviceSegment = kn::AdamWSegmentCuda;
void* device_alloc(size_t bytes) {
  void* p = nullptr;
  FARTHING_CUDA_CHECK(cudaMalloc(&p, bytes == 0 ? 1 : bytes));
  return p;
}
void device_free(void* p) { static_cast<void>(cudaFree(p)); }
void copy_to_device(void* dst, const void* src, size_t bytes) {
  FARTHING_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}
void copy_to_host(void* dst, const void* src, size_t bytes) {
  FARTHING_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}
#endif

// A device copy of a host vector.
class DeviceArray {
 public:
  template <class T>
  explicit DeviceArray(const std::vector<T>& host) : bytes_(host.size() * sizeof(T)), ptr_(device_alloc(bytes_)) {
    copy_to_device(ptr_, host.data(), bytes_);
  }
  ~DeviceArray() { device_free(ptr_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  template <class T>
  std::vector<T> download() const {
    std::vector<T> host(bytes_ / sizeof(T));
    copy_to_host(host.data(), ptr_, bytes_);
    return host;
  }

 private:
  size_t bytes_;
  void* ptr_;
};

// The maps in device memory.
struct DeviceMaps {
  DeviceArray signed_map{std::vector<float>(cpu_map(nm::MapSign::kSigned).values.begin(),
                                            cpu_map(nm::MapSign::kSigned).values.end())};
  DeviceArray unsigned_map{std::vector<float>(cpu_map(nm::MapSign::kUnsigned).values.begin(),
                                              cpu_map(nm::MapSign::kUnsigned).values.end())};
  DeviceArray signed_map4{std::vector<float>(cpu_map4(nm::MapSign::kSigned).begin(),
                                             cpu_map4(nm::MapSign::kSigned).end())};
  DeviceArray unsigned_map4{std::vector<float>(cpu_map4(nm::MapSign::kUnsigned).begin(),
                                               cpu_map4(nm::MapSign::kUnsigned).end())};
};

#if !defined(FARTHING_OPTIM_PARITY_SELF_CHECK)
// The kernels' block partials: one buffer for every call, as CudaBackend keeps one.
void* device_scratch() {
  static void* scratch = device_alloc(kn::optim_scratch_bytes());
  return scratch;
}
#endif

// The step's partials as the device adds them to zeroed sums in its memory.
kn::AdamWPartials device_step(const DeviceSegment& seg, const DeviceMaps& maps) {
#if defined(FARTHING_OPTIM_PARITY_SELF_CHECK)
  static_cast<void>(maps);  // the segment already points at the CPU maps
  return kn::adamw_step_cpu(seg);
#else
  kn::AdamWSegmentCuda s = seg;
  s.signed_map = maps.signed_map.as<float>();
  s.unsigned_map = maps.unsigned_map.as<float>();
  s.signed_map4 = maps.signed_map4.as<float>();
  s.unsigned_map4 = maps.unsigned_map4.as<float>();
  DeviceArray sums(std::vector<kn::AdamWPartials>(1));
  kn::adamw_step_cuda(s, sums.as<kn::AdamWPartials>(), device_scratch(), nullptr);
  return sums.download<kn::AdamWPartials>()[0];
#endif
}

// The gradients' partials added `times` times to zeroed sums in device memory (twice: the second
// call must add to what the first left, not overwrite it).
kn::GradPartials device_grad_partials(const void* grad, kn::GradFormat format, size_t n, int times) {
#if defined(FARTHING_OPTIM_PARITY_SELF_CHECK)
  kn::GradPartials sums;
  for (int i = 0; i < times; ++i) kn::add_partials(sums, kn::grad_partials_cpu(grad, format, n));
  return sums;
#else
  DeviceArray sums(std::vector<kn::GradPartials>(1));
  for (int i = 0; i < times; ++i) {
    kn::grad_partials_cuda(grad, format, n, sums.as<kn::GradPartials>(), device_scratch(), nullptr);
  }
  return sums.download<kn::GradPartials>()[0];
#endif
}

// ---- the state of one segment -----------------------------------------------------------

struct Combo {
  kn::GradFormat grad;
  kn::MomentFormat moments;
  kn::MasterMode master;
  kn::WeightRounding rounding;
  // The device's gradient one element into its buffer, so that it is not 16-byte aligned: 8-bit
  // moments then take adamw_step_kernel instead of the warp-per-block fast path.
  bool misaligned_grad = false;
};

const char* name_of(kn::GradFormat f) { return f == kn::GradFormat::kF32 ? "grad f32" : "grad bf16"; }
const char* name_of(kn::MomentFormat f) {
  switch (f) {
    case kn::MomentFormat::kF32: return "moments f32";
    case kn::MomentFormat::kBf16: return "moments bf16";
    case kn::MomentFormat::kBlock8: return "moments 8-bit";
    case kn::MomentFormat::kBlock4: return "moments 4-bit";
  }
  return "?";
}
const char* name_of(kn::MasterMode m) {
  switch (m) {
    case kn::MasterMode::kF32: return "master f32";
    case kn::MasterMode::kRemainder16: return "master remainder16";
    case kn::MasterMode::kNone: return "no master";
  }
  return "?";
}
const char* name_of(kn::WeightRounding r) { return r == kn::WeightRounding::kNearest ? "RN" : "SR"; }
std::string name_of(const Combo& c) {
  return std::string(name_of(c.grad)) + ", " + name_of(c.moments) + ", " + name_of(c.master) + ", " +
         name_of(c.rounding) + (c.misaligned_grad ? ", misaligned gradient" : "");
}

bool blocked(kn::MomentFormat f) { return f == kn::MomentFormat::kBlock8 || f == kn::MomentFormat::kBlock4; }

size_t moment_bytes(kn::MomentFormat f, size_t n) {
  switch (f) {
    case kn::MomentFormat::kF32: return n * 4;
    case kn::MomentFormat::kBf16: return n * 2;
    case kn::MomentFormat::kBlock8: return n;
    case kn::MomentFormat::kBlock4: return (n + 1) / 2;
  }
  return 0;
}
size_t absmax_count(kn::MomentFormat f, size_t n) {
  if (f == kn::MomentFormat::kBlock8) return (n + nm::kQuantBlockElems - 1) / nm::kQuantBlockElems;
  if (f == kn::MomentFormat::kBlock4) return (n + nm::kQuant4BlockElems - 1) / nm::kQuant4BlockElems;
  return 0;
}

// Elements [kZeroBegin, kZeroEnd) have zero gradients and start with zero moments: with
// blocked moments that is one whole all-zero block after the update (absmax 0).
constexpr size_t kZeroBegin = 512, kZeroEnd = 768;

struct HostState {
  std::vector<uint16_t> weight;
  std::vector<float> master;
  std::vector<uint16_t> remainder;
  std::vector<uint8_t> m, v;  // raw bytes of the moment's format
  std::vector<float> m_absmax, v_absmax;
};

void put_f32(std::vector<uint8_t>& bytes, size_t i, float x) { std::memcpy(bytes.data() + 4 * i, &x, 4); }
void put_u16(std::vector<uint8_t>& bytes, size_t i, uint16_t x) { std::memcpy(bytes.data() + 2 * i, &x, 2); }

// A random moment: m signed around 1e-3, v positive around 1e-6; quantized formats get random
// codes and positive absmax (any codes are a valid state).
void random_moment(kn::MomentFormat f, bool second, size_t n, test::SplitMix64& rng, std::vector<uint8_t>& values,
                   std::vector<float>& absmax) {
  values.assign(moment_bytes(f, n), 0);
  absmax.assign(absmax_count(f, n), 0.0f);
  const auto value = [&](size_t i) {
    if (i >= kZeroBegin && i < kZeroEnd) return 0.0f;
    const double x = rng.normal();
    return second ? float(std::fabs(x) * 1e-6) : float(x * 1e-3);
  };
  switch (f) {
    case kn::MomentFormat::kF32:
      for (size_t i = 0; i < n; ++i) put_f32(values, i, value(i));
      return;
    case kn::MomentFormat::kBf16:
      for (size_t i = 0; i < n; ++i) put_u16(values, i, nm::f32_to_bf16_rne(value(i)));
      return;
    case kn::MomentFormat::kBlock8:
    case kn::MomentFormat::kBlock4: {
      const size_t block = f == kn::MomentFormat::kBlock8 ? nm::kQuantBlockElems : nm::kQuant4BlockElems;
      const uint8_t zero_code = f == kn::MomentFormat::kBlock8
                                    ? (second ? nm::kUnsignedMapZeroCode : nm::kSignedMapZeroCode)
                                    : uint8_t(second ? 0 : 7);  // 4-bit: the signed map's 0 is code 7
      for (size_t i = 0; i < n; ++i) {
        const bool zero = i >= kZeroBegin && i < kZeroEnd;
        const uint8_t code = zero ? zero_code : uint8_t(rng.next() & (f == kn::MomentFormat::kBlock8 ? 0xFF : 0xF));
        if (f == kn::MomentFormat::kBlock8) {
          values[i] = code;
        } else {
          values[i / 2] |= uint8_t(code << ((i & 1) * 4));
        }
      }
      for (size_t b = 0; b < absmax.size(); ++b) {
        const bool zero = b * block >= kZeroBegin && b * block < kZeroEnd;
        absmax[b] = zero ? 0.0f : float((0.5 + rng.uniform()) * (second ? 1e-6 : 1e-3));
      }
      return;
    }
  }
}

HostState random_state(const Combo& c, size_t n, uint64_t seed) {
  test::SplitMix64 rng(seed);
  HostState s;
  s.weight.resize(n);
  if (c.master == kn::MasterMode::kF32) s.master.resize(n);
  if (c.master == kn::MasterMode::kRemainder16) s.remainder.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const float p = float(rng.normal() * 0.02);
    switch (c.master) {
      case kn::MasterMode::kF32:
        s.master[i] = p;
        s.weight[i] = nm::f32_to_bf16_rne(p);
        break;
      case kn::MasterMode::kRemainder16: {
        const nm::MasterSplit split = nm::master_split(p);
        s.weight[i] = split.weight;
        s.remainder[i] = split.remainder;
        break;
      }
      case kn::MasterMode::kNone:
        s.weight[i] = nm::f32_to_bf16_rne(p);
        break;
    }
  }
  random_moment(c.moments, false, n, rng, s.m, s.m_absmax);
  random_moment(c.moments, true, n, rng, s.v, s.v_absmax);
  return s;
}

// Gradient bytes for one step: normal * 1e-2 (f32, or its RNE bf16), zero on [kZeroBegin, kZeroEnd).
std::vector<uint8_t> random_grad(kn::GradFormat f, size_t n, uint64_t seed) {
  test::SplitMix64 rng(seed);
  std::vector<uint8_t> bytes(n * (f == kn::GradFormat::kF32 ? 4 : 2));
  for (size_t i = 0; i < n; ++i) {
    const float g = i >= kZeroBegin && i < kZeroEnd ? 0.0f : float(rng.normal() * 1e-2);
    if (f == kn::GradFormat::kF32) {
      put_f32(bytes, i, g);
    } else {
      put_u16(bytes, i, nm::f32_to_bf16_rne(g));
    }
  }
  return bytes;
}

template <class T>
std::vector<uint8_t> as_bytes(const std::vector<T>& v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

// Counts differing elements of elem_bytes each; prints the first few.
void expect_same_bits(const std::vector<uint8_t>& want, const std::vector<uint8_t>& got, size_t elem_bytes,
                      const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  const size_t n = want.size() / elem_bytes;
  size_t mismatches = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t w = 0, g = 0;
    std::memcpy(&w, want.data() + i * elem_bytes, elem_bytes);
    std::memcpy(&g, got.data() + i * elem_bytes, elem_bytes);
    if (w == g) continue;
    if (++mismatches <= 5) {
      char line[128];
      std::snprintf(line, sizeof line, "element %zu: cpu 0x%08x, cuda 0x%08x", i, w, g);
      ADD_FAILURE() << what << ": " << line;
    }
  }
  EXPECT_EQ(mismatches, 0u) << what << ": " << mismatches << " of " << n << " elements differ";
}

size_t moment_elem_bytes(kn::MomentFormat f) {
  return f == kn::MomentFormat::kF32 ? 4 : f == kn::MomentFormat::kBf16 ? 2 : 1;
}

void run_combo(const Combo& c, const DeviceMaps& maps) {
  const size_t n = segment_elems();
  const uint64_t global_offset = blocked(c.moments) ? 256 * 5 : 256 * 5 + 3;
  HostState cpu = random_state(c, n, 0xC0FFEEull + uint64_t(c.moments) * 16 + uint64_t(c.master));
  DeviceArray d_weight(cpu.weight);
  DeviceArray d_master(cpu.master);
  DeviceArray d_remainder(cpu.remainder);
  DeviceArray d_m(cpu.m), d_v(cpu.v), d_m_absmax(cpu.m_absmax), d_v_absmax(cpu.v_absmax);

  for (int step = 1; step <= kSteps; ++step) {
    SCOPED_TRACE(name_of(c) + ", step " + std::to_string(step));
    const std::vector<uint8_t> grad = random_grad(c.grad, n, 0xBADC0DEull * uint64_t(step));
    // The misaligned case: one element's bytes of zeros before the gradient.
    std::vector<uint8_t> grad_buffer(c.misaligned_grad ? (c.grad == kn::GradFormat::kF32 ? 4 : 2) : 0, 0);
    const size_t grad_lead = grad_buffer.size();
    grad_buffer.insert(grad_buffer.end(), grad.begin(), grad.end());
    DeviceArray d_grad(grad_buffer);
    // NOTE: beta1 = 0.4 on step 2 makes 1 - beta1 >= 0.5, the other form of m's lerp.
    const double beta1 = step == 2 ? 0.4 : 0.9;
    const nm::AdamWScalars scalars = nm::make_adamw_scalars(1e-4, beta1, 0.999, 1e-8, 0.01, step, 0.5);
    // Norm 4 / 2 = 2 against a max of 0.5: a clip factor of about 1/4, and the scale 1/8, not 0.5.
    kn::GradPartials clip_sums;
    clip_sums.sum_squares = 16.0;
    clip_sums.nonfinite = step == kSkippedStep ? 1 : 0;
    DeviceArray d_clip_sums(std::vector<kn::GradPartials>{clip_sums});
    const HostState before = cpu;

    kn::AdamWSegmentCpu a;
    a.n = n;
    a.global_offset = global_offset;
    a.grad = grad.data();
    a.grad_format = c.grad;
    a.weight = cpu.weight.data();
    a.master = c.master == kn::MasterMode::kF32 ? cpu.master.data() : nullptr;
    a.remainder = c.master == kn::MasterMode::kRemainder16 ? cpu.remainder.data() : nullptr;
    a.master_mode = c.master;
    a.weight_rounding = c.rounding;
    a.m = kn::MomentRef{c.moments, cpu.m.data(), blocked(c.moments) ? cpu.m_absmax.data() : nullptr};
    a.v = kn::MomentRef{c.moments, cpu.v.data(), blocked(c.moments) ? cpu.v_absmax.data() : nullptr};
    a.scalars = scalars;
    a.seed = kSeed;
    a.step = uint32_t(step);
    a.signed_map = &cpu_map(nm::MapSign::kSigned);
    a.unsigned_map = &cpu_map(nm::MapSign::kUnsigned);
    a.signed_map4 = cpu_map4(nm::MapSign::kSigned).data();
    a.unsigned_map4 = cpu_map4(nm::MapSign::kUnsigned).data();
    if (step >= kClipSumsStep) {
      a.clip_sums = &clip_sums;
      a.max_grad_norm = 0.5;
      a.loss_scale = 2.0;
    }
    const kn::AdamWPartials want = kn::adamw_step_cpu(a);

    DeviceSegment d;
#if defined(FARTHING_OPTIM_PARITY_SELF_CHECK)
    d = a;  // the CPU maps
#endif
    d.n = n;
    d.global_offset = global_offset;
    d.grad = d_grad.as<uint8_t>() + grad_lead;
    d.grad_format = c.grad;
    d.weight = d_weight.as<uint16_t>();
    d.master = c.master == kn::MasterMode::kF32 ? d_master.as<float>() : nullptr;
    d.remainder = c.master == kn::MasterMode::kRemainder16 ? d_remainder.as<uint16_t>() : nullptr;
    d.master_mode = c.master;
    d.weight_rounding = c.rounding;
    d.m = kn::MomentRef{c.moments, d_m.as<void>(), blocked(c.moments) ? d_m_absmax.as<float>() : nullptr};
    d.v = kn::MomentRef{c.moments, d_v.as<void>(), blocked(c.moments) ? d_v_absmax.as<float>() : nullptr};
    d.scalars = scalars;
    d.seed = kSeed;
    d.step = uint32_t(step);
    if (step >= kClipSumsStep) {
      d.clip_sums = d_clip_sums.as<kn::GradPartials>();
      d.max_grad_norm = 0.5;
      d.loss_scale = 2.0;
    }
    const kn::AdamWPartials got = device_step(d, maps);

    expect_same_bits(as_bytes(cpu.weight), as_bytes(d_weight.download<uint16_t>()), 2, "weight");
    expect_same_bits(as_bytes(cpu.master), as_bytes(d_master.download<float>()), 4, "master");
    expect_same_bits(as_bytes(cpu.remainder), as_bytes(d_remainder.download<uint16_t>()), 2, "remainder");
    const size_t eb = moment_elem_bytes(c.moments);
    expect_same_bits(cpu.m, d_m.download<uint8_t>(), eb, "m");
    expect_same_bits(cpu.v, d_v.download<uint8_t>(), eb, "v");
    expect_same_bits(as_bytes(cpu.m_absmax), as_bytes(d_m_absmax.download<float>()), 4, "m absmax");
    expect_same_bits(as_bytes(cpu.v_absmax), as_bytes(d_v_absmax.download<float>()), 4, "v absmax");

    EXPECT_EQ(got.elements, want.elements);
    EXPECT_EQ(got.weights_unchanged, want.weights_unchanged);
    // NOTE: the CPU sums the fp32 squares in fp32 per 256-element chunk (in the order its
    // vectorizer picks), the GPU in double: the same terms, so the sums agree within the CPU's
    // fp32 accumulation error over at most 256 positive terms (< 256 * 2^-24 relative), not
    // bitwise (optim_cuda.h).
    EXPECT_NEAR(got.update_sum_squares, want.update_sum_squares, 2e-5 * want.update_sum_squares);
    EXPECT_NEAR(got.weight_sum_squares, want.weight_sum_squares, 2e-5 * want.weight_sum_squares);
    if (step == kSkippedStep) {  // both sides compared above; the CPU's must be the state before
      EXPECT_EQ(want.elements, 0);
      EXPECT_EQ(got.update_sum_squares, 0.0);
      expect_same_bits(as_bytes(before.weight), as_bytes(cpu.weight), 2, "skipped: weight");
      expect_same_bits(as_bytes(before.master), as_bytes(cpu.master), 4, "skipped: master");
      expect_same_bits(before.m, cpu.m, eb, "skipped: m");
      expect_same_bits(before.v, cpu.v, eb, "skipped: v");
    } else {
      EXPECT_GT(want.update_sum_squares, 0.0);
    }
  }
}

TEST(CudaOptimParity, AdamWStepMatchesCpuForEveryFormatCombination) {
  const DeviceMaps maps;
  for (kn::GradFormat grad : {kn::GradFormat::kF32, kn::GradFormat::kBf16}) {
    for (kn::MomentFormat moments : {kn::MomentFormat::kF32, kn::MomentFormat::kBf16, kn::MomentFormat::kBlock8,
                                     kn::MomentFormat::kBlock4}) {
      for (kn::MasterMode master : {kn::MasterMode::kF32, kn::MasterMode::kRemainder16, kn::MasterMode::kNone}) {
        for (kn::WeightRounding rounding : {kn::WeightRounding::kNearest, kn::WeightRounding::kStochastic}) {
          run_combo(Combo{grad, moments, master, rounding}, maps);
          // 8-bit moments have two kernels: the fast path above, and the general one here.
          if (moments == kn::MomentFormat::kBlock8) run_combo(Combo{grad, moments, master, rounding, true}, maps);
        }
      }
    }
  }
}

TEST(CudaOptimParity, GradPartialsMatchCpu) {
  for (kn::GradFormat format : {kn::GradFormat::kF32, kn::GradFormat::kBf16}) {
    for (size_t n : {size_t(1), size_t(255), size_t(257), test::sim_sizes() ? size_t(12289) : size_t(1000003)}) {
      for (bool with_nonfinite : {false, true}) {
        SCOPED_TRACE(std::string(name_of(format)) + " n=" + std::to_string(n) +
                     (with_nonfinite ? " with inf/NaN" : ""));
        std::vector<uint8_t> grad = random_grad(format, n, n * 7 + 1);
        if (with_nonfinite) {
          const float specials[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                                    std::numeric_limits<float>::quiet_NaN()};
          for (size_t k = 0; k < n; k += 997) {
            const float x = specials[(k / 997) % 3];
            if (format == kn::GradFormat::kF32) {
              put_f32(grad, k, x);
            } else {
              put_u16(grad, k, nm::f32_to_bf16_rne(x));
            }
          }
        }
        const kn::GradPartials want = kn::grad_partials_cpu(grad.data(), format, n);
        DeviceArray d_grad(grad);
        const kn::GradPartials got = device_grad_partials(d_grad.as<void>(), format, n, 2);
        EXPECT_EQ(got.nonfinite, 2 * want.nonfinite);
        if (with_nonfinite) {
          EXPECT_GT(want.nonfinite, 0);
          EXPECT_FALSE(std::isfinite(got.sum_squares));
        } else {
          // NOTE: the same exact double squares summed in another order, not bitwise: the CPU's
          // longest chain of additions is ~4,000 (chunks of one thread), so < 1e-12 relative.
          // Twice the sum: doubling is exact.
          EXPECT_NEAR(got.sum_squares, 2 * want.sum_squares, 2e-12 * want.sum_squares);
        }
      }
    }
  }
}

}  // namespace
}  // namespace farthing

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
#if !defined(FARTHING_OPTIM_PARITY_SELF_CHECK)
  if (!farthing::cuda_available()) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
#endif
  return RUN_ALL_TESTS();
}
