// test_cuda_parity.cpp — the CUDA backend against the CPU reference, bit for bit.
//
// Everything goes through the Backend interface (backend_for(cuda(0)) vs backend_for(cpu())),
// so this checks the kernels, the dispatch in cuda_backend.cu and the copies together.
// Elementwise ops must agree exactly (docs/numerics.md §8): RNE casts to every narrow format in
// both overflow modes, exhaustive widening casts, stochastic rounding at offsets that split
// Philox groups, and 8-bit block quantization with short, all-zero and NaN blocks.
// Sizes are awkward on purpose (1, 255, 257, 1000003). Exits 77 (skipped) without a GPU.
// With FARTHING_SIM_SIZES (the gpu-sim entry, for a GPU simulator) the largest size is 12289
// and the cast inputs keep every 8-bit code's boundaries but only every 67th 16-bit code's.
// Relies on: framework/backend, framework/core/memory.h, tests/support.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/buffer.h"
#include "framework/core/memory.h"
#include "kernels/cuda/bias_cuda.h"
#include "kernels/cuda/fp4_cuda.h"
#include "kernels/numerics/fp4_lt_layout.h"
#include "tests/support/test_support.h"

namespace farthing {
namespace {

namespace nm = numerics;

// The last size spans many blocks and is the length of the shared cast inputs.
const std::vector<int64_t>& sizes() {
  static const std::vector<int64_t> full{1, 255, 257, 1000003}, sim{1, 255, 257, 12289};
  return test::sim_sizes() ? sim : full;
}
constexpr DType kNarrowDTypes[] = {DType::kBF16, DType::kF16, DType::kE4M3, DType::kE5M2};

Backend& cpu() { return backend_for(Device::cpu()); }
Backend& gpu() { return backend_for(Device::cuda(0)); }

Tensor host_view(void* data, DType dtype, int64_t n) { return Tensor(data, dtype, Shape{n}); }

// A device buffer of n elements holding a copy of `host`.
struct DeviceArray {
  Buffer buffer;
  Tensor tensor;
  DeviceArray(DType dtype, int64_t n)
      : buffer(Device::cuda(0), size_t(n) * dtype_size_bytes(dtype), MemoryCategory::kOther),
        tensor(buffer.view(dtype, Shape{n})) {}
  static DeviceArray upload(const Tensor& host) {
    DeviceArray d(host.dtype(), host.numel());
    gpu().copy(d.tensor, host);
    return d;
  }
};

std::vector<uint8_t> download(const Tensor& device_tensor) {
  std::vector<uint8_t> bytes(device_tensor.nbytes());
  gpu().synchronize();
  gpu().copy(host_view(bytes.data(), device_tensor.dtype(), device_tensor.numel()), device_tensor);
  return bytes;
}

uint32_t element_bits(const std::vector<uint8_t>& bytes, size_t elem_bytes, size_t i) {
  uint32_t bits = 0;
  std::memcpy(&bits, bytes.data() + i * elem_bytes, elem_bytes);
  return bits;
}

// Counts differing elements; prints the first few with the input that produced them.
void expect_same_bits(const std::vector<uint8_t>& want, const std::vector<uint8_t>& got,
                      size_t elem_bytes, const std::string& what,
                      const std::vector<float>* inputs = nullptr) {
  ASSERT_EQ(want.size(), got.size()) << what;
  const size_t n = want.size() / elem_bytes;
  size_t mismatches = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t w = element_bits(want, elem_bytes, i), g = element_bits(got, elem_bytes, i);
    if (w == g) continue;
    if (++mismatches <= 5) {
      char line[160];
      std::snprintf(line, sizeof line, "element %zu: cpu 0x%08x, cuda 0x%08x", i, w, g);
      std::string message = line;
      if (inputs != nullptr) {
        std::snprintf(line, sizeof line, " (input 0x%08x = %.9g)", nm::f32_to_bits((*inputs)[i]),
                      double((*inputs)[i]));
        message += line;
      }
      ADD_FAILURE() << what << ": " << message;
    }
  }
  EXPECT_EQ(mismatches, 0u) << what << ": " << mismatches << " of " << n << " elements differ";
}

float widen(DType dtype, uint32_t code) {
  switch (dtype) {
    case DType::kBF16: return nm::bf16_to_f32(uint16_t(code));
    case DType::kF16: return nm::fp16_to_f32(uint16_t(code));
    case DType::kE4M3: return nm::e4m3_to_f32(uint8_t(code));
    default: return nm::e5m2_to_f32(uint8_t(code));
  }
}

// Every rounding boundary the formats have, then random values: for every finite code of
// every narrow format, the value, its fp32 neighbours and the midpoint to the next code (the
// ties of round-to-nearest-even); past each format's max, the overflow tie and beyond. Then
// fp32 specials, and random bit patterns (all exponents, NaN payloads) mixed with normals at
// scales across the narrow formats' ranges.
// code_stride_16: every how many 16-bit codes get their boundaries (1: all of them).
std::vector<float> cast_inputs(size_t n, uint32_t code_stride_16) {
  std::vector<float> v;
  v.reserve(n);
  const float inf = std::numeric_limits<float>::infinity();
  for (uint32_t bits : {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u,
                        0xFFC00000u, 0x7F800001u, 0x7FBFFFFFu, 0xFFFFFFFFu, 0x00000001u,
                        0x80000001u, 0x007FFFFFu, 0x807FFFFFu, 0x00800000u, 0x7F7FFFFFu,
                        0xFF7FFFFFu, 0x7F7F8000u, 0x7F7F7FFFu}) {
    v.push_back(nm::bits_to_f32(bits));
  }
  for (DType dtype : kNarrowDTypes) {
    const uint32_t codes = dtype_size_bytes(dtype) == 2 ? 65536u : 256u;
    const uint32_t sign_bit = codes >> 1;
    const uint32_t stride = codes == 65536u ? code_stride_16 : 1u;
    for (uint32_t code = 0; code < codes; code += stride) {
      const float x = widen(dtype, code);
      if (!std::isfinite(x)) continue;
      v.push_back(x);
      v.push_back(std::nextafter(x, inf));
      v.push_back(std::nextafter(x, -inf));
      const uint32_t next_code = code + 1;
      const float next = (next_code & (sign_bit - 1)) != 0 ? widen(dtype, next_code) : NAN;
      if (std::isfinite(next)) {
        v.push_back(float((double(x) + double(next)) / 2));  // exact: one more bit than the format
      } else if (x != 0.0f) {
        // x is ±max finite: half a quantum above is the overflow tie, a whole quantum beyond it.
        // All exact in fp32 (x + quantum may overflow to inf, which IEEE defines).
        const float quantum = x - widen(dtype, code - 1);
        const float tie = x + quantum / 2;
        v.push_back(tie);
        v.push_back(std::nextafter(tie, -inf));
        v.push_back(std::nextafter(tie, inf));
        v.push_back(x + quantum);
      }
    }
  }
  test::SplitMix64 rng(0xF00DFACEull);
  while (v.size() < n) {
    const uint64_t r = rng.next();
    if (r & 1) {
      v.push_back(nm::bits_to_f32(uint32_t(r >> 32)));
    } else {
      const int scale_exp = int((r >> 8) % 60) - 40;  // 2^-40 .. 2^19
      v.push_back(float(rng.normal() * std::ldexp(1.0, scale_exp)));
    }
  }
  v.resize(n);
  return v;
}

const std::vector<float>& shared_cast_inputs() {
  static const std::vector<float> inputs = cast_inputs(size_t(sizes().back()), test::sim_sizes() ? 67u : 1u);
  return inputs;
}

std::string case_name(DType dtype, int64_t n, const std::string& extra = "") {
  return std::string(dtype_name(dtype)) + " n=" + std::to_string(n) + extra;
}

TEST(CudaParity, BackendReportsItsDevice) {
  EXPECT_EQ(gpu().device(), Device::cuda(0));
}

TEST(CudaParity, CopiesRoundTripEveryDirection) {
  for (int64_t n : sizes()) {
    std::vector<uint8_t> host(static_cast<size_t>(n));
    test::SplitMix64 rng(static_cast<uint64_t>(n));
    for (uint8_t& b : host) b = uint8_t(rng.next());
    DeviceArray a = DeviceArray::upload(host_view(host.data(), DType::kU8, n));  // host -> device
    DeviceArray b(DType::kU8, n);
    gpu().copy(b.tensor, a.tensor);                                               // device -> device
    EXPECT_EQ(download(b.tensor), host) << "n=" << n;                             // device -> host
  }
}

TEST(CudaParity, RejectsHostTensorsAndOversizedAllocations) {
  std::vector<float> src(8);
  std::vector<uint16_t> dst(8);
  EXPECT_THROW(gpu().cast(host_view(dst.data(), DType::kBF16, 8), host_view(src.data(), DType::kF32, 8),
                          CastOptions{}),
               Error);
  // cudaErrorMemoryAllocation is not sticky: the device stays usable afterwards.
  EXPECT_THROW(gpu().allocate_bytes(size_t(1) << 60), Error);
  DeviceArray probe = DeviceArray::upload(host_view(src.data(), DType::kF32, 8));
  EXPECT_EQ(download(probe.tensor).size(), 8 * sizeof(float));
}

TEST(CudaParity, RoundToNearestCastsMatchCpu) {
  const std::vector<float>& all = shared_cast_inputs();
  for (DType dtype : kNarrowDTypes) {
    for (nm::Overflow overflow : {nm::Overflow::kSaturate, nm::Overflow::kToInfOrNan}) {
      CastOptions options;
      options.overflow = overflow;
      for (int64_t n : sizes()) {
        std::vector<float> inputs(all.begin(), all.begin() + n);
        const Tensor src_host = host_view(inputs.data(), DType::kF32, n);
        std::vector<uint8_t> want(size_t(n) * dtype_size_bytes(dtype));
        cpu().cast(host_view(want.data(), dtype, n), src_host, options);
        DeviceArray src = DeviceArray::upload(src_host);
        DeviceArray dst(dtype, n);
        gpu().cast(dst.tensor, src.tensor, options);
        expect_same_bits(want, download(dst.tensor), dtype_size_bytes(dtype),
                         case_name(dtype, n, overflow == nm::Overflow::kSaturate ? " saturate" : " inf/nan"),
                         &inputs);
      }
    }
  }
}

TEST(CudaParity, WideningCastsOfEveryCodeMatchCpu) {
  for (DType dtype : kNarrowDTypes) {
    const int64_t codes = dtype_size_bytes(dtype) == 2 ? 65536 : 256;
    std::vector<uint8_t> patterns(size_t(codes) * dtype_size_bytes(dtype));
    for (int64_t c = 0; c < codes; ++c) {
      const uint16_t code = uint16_t(c);
      std::memcpy(patterns.data() + size_t(c) * dtype_size_bytes(dtype), &code, dtype_size_bytes(dtype));
    }
    const Tensor src_host = host_view(patterns.data(), dtype, codes);
    std::vector<uint8_t> want(size_t(codes) * sizeof(float));
    cpu().cast(host_view(want.data(), DType::kF32, codes), src_host, CastOptions{});
    DeviceArray src = DeviceArray::upload(src_host);
    DeviceArray dst(DType::kF32, codes);
    gpu().cast(dst.tensor, src.tensor, CastOptions{});
    expect_same_bits(want, download(dst.tensor), sizeof(float), case_name(dtype, codes, " -> f32"));
  }
}

TEST(CudaParity, StochasticRoundingMatchesCpuAtAnyOffset) {
  const std::vector<float>& all = shared_cast_inputs();
  CastOptions options;
  options.rounding = nm::Rounding::kStochastic;
  options.random_key = nm::RandomKey{0x0123456789ABCDEFull, 42, nm::RandomPurpose::kTest};
  // Offsets that start mid-group (1, 2 and 3 mod 4) and one whose group index needs the high
  // counter word.
  for (uint64_t offset : {uint64_t(0), uint64_t(12345), uint64_t(1000002), (uint64_t(1) << 34) + 3}) {
    options.global_offset = offset;
    for (DType dtype : kNarrowDTypes) {
      for (int64_t n : sizes()) {
        std::vector<float> inputs(all.begin(), all.begin() + n);
        const Tensor src_host = host_view(inputs.data(), DType::kF32, n);
        std::vector<uint8_t> want(size_t(n) * dtype_size_bytes(dtype));
        cpu().cast(host_view(want.data(), dtype, n), src_host, options);
        DeviceArray src = DeviceArray::upload(src_host);
        DeviceArray dst(dtype, n);
        gpu().cast(dst.tensor, src.tensor, options);
        expect_same_bits(want, download(dst.tensor), dtype_size_bytes(dtype),
                         case_name(dtype, n, " sr offset=" + std::to_string(offset)), &inputs);
      }
    }
  }
}

// A slice cast on its own, at its own global offset, rounds exactly as inside the whole array:
// the GPU's bits depend on the element's global index, not on its position in the launch.
TEST(CudaParity, StochasticRoundingOfASliceMatchesTheWhole) {
  const std::vector<float>& all = shared_cast_inputs();
  const int64_t n = sizes().back();
  CastOptions options;
  options.rounding = nm::Rounding::kStochastic;
  options.random_key = nm::RandomKey{7, 3, nm::RandomPurpose::kWeightCast};
  options.global_offset = 101;
  std::vector<float> inputs(all.begin(), all.end());
  DeviceArray src = DeviceArray::upload(host_view(inputs.data(), DType::kF32, n));
  DeviceArray whole(DType::kBF16, n);
  gpu().cast(whole.tensor, src.tensor, options);
  const std::vector<uint8_t> whole_bytes = download(whole.tensor);
  for (int64_t begin : {int64_t(1), int64_t(258), n - 4}) {
    const int64_t count = std::min<int64_t>(n - begin, 4099);
    CastOptions slice_options = options;
    slice_options.global_offset = options.global_offset + uint64_t(begin);
    DeviceArray part(DType::kBF16, count);
    gpu().cast(part.tensor, src.tensor.flat_slice(begin, count), slice_options);
    const std::vector<uint8_t> want(whole_bytes.begin() + begin * 2, whole_bytes.begin() + (begin + count) * 2);
    expect_same_bits(want, download(part.tensor), 2, "bf16 slice at " + std::to_string(begin));
  }
}

// Blocks of varied scale; among them all-zero blocks, blocks holding a NaN (absmax is the
// largest |x| bit pattern, so the NaN payload must agree too), an inf, and -0 / subnormal
// mixtures. With n = 257 the one-element tail block is the all-zero one.
std::vector<float> quant_inputs(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  test::SplitMix64 rng(0xB10Cull + uint64_t(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t block = i / nm::kQuantBlockElems;
    const int64_t within = i % nm::kQuantBlockElems;
    const double scale = std::ldexp(1.0, int(block % 41) - 25);
    float x = float(rng.normal() * scale);
    switch (block % 7) {
      case 1: x = 0.0f; break;
      case 2:  // NaN blocks; some also hold a NaN with the largest payload, which must win
        if (within == 17) x = NAN;
        if (within == 90 && block % 14 == 2) x = nm::bits_to_f32(0xFFFFFFFFu);
        break;
      case 3: if (within == 200) x = -std::numeric_limits<float>::infinity(); break;
      case 4: x = within % 3 == 0 ? -0.0f : nm::bits_to_f32(uint32_t(rng.next()) & 0x807FFFFFu); break;
      default: break;
    }
    v[size_t(i)] = x;
  }
  return v;
}

TEST(CudaParity, BlockQuantizationMatchesCpu) {
  for (nm::MapSign sign : {nm::MapSign::kSigned, nm::MapSign::kUnsigned}) {
    const std::string map_name = sign == nm::MapSign::kSigned ? " signed" : " unsigned";
    for (int64_t n : {int64_t(1), int64_t(255), int64_t(256), int64_t(257), sizes().back()}) {
      std::vector<float> values = quant_inputs(n);
      if (sign == nm::MapSign::kUnsigned) {
        for (float& x : values) x = std::fabs(x);  // the second moment is never negative
      }
      const int64_t blocks = (n + nm::kQuantBlockElems - 1) / nm::kQuantBlockElems;
      const Tensor values_host = host_view(values.data(), DType::kF32, n);
      std::vector<uint8_t> codes_want(static_cast<size_t>(n));
      std::vector<float> absmax_want(static_cast<size_t>(blocks));
      cpu().block_quantize(host_view(codes_want.data(), DType::kU8, n),
                           host_view(absmax_want.data(), DType::kF32, blocks), values_host, sign);

      DeviceArray src = DeviceArray::upload(values_host);
      DeviceArray codes(DType::kU8, n);
      DeviceArray absmax(DType::kF32, blocks);
      gpu().block_quantize(codes.tensor, absmax.tensor, src.tensor, sign);
      const std::string what = "n=" + std::to_string(n) + map_name;
      expect_same_bits(codes_want, download(codes.tensor), 1, "codes " + what, &values);
      std::vector<uint8_t> absmax_want_bytes(absmax_want.size() * sizeof(float));
      std::memcpy(absmax_want_bytes.data(), absmax_want.data(), absmax_want_bytes.size());
      expect_same_bits(absmax_want_bytes, download(absmax.tensor), sizeof(float), "absmax " + what);

      // Dequantize the CPU's codes on both backends, so this half stands on its own.
      std::vector<float> dequant_want(static_cast<size_t>(n));
      cpu().block_dequantize(host_view(dequant_want.data(), DType::kF32, n),
                             host_view(codes_want.data(), DType::kU8, n),
                             host_view(absmax_want.data(), DType::kF32, blocks), sign);
      DeviceArray codes_in = DeviceArray::upload(host_view(codes_want.data(), DType::kU8, n));
      DeviceArray absmax_in = DeviceArray::upload(host_view(absmax_want.data(), DType::kF32, blocks));
      DeviceArray dequant(DType::kF32, n);
      gpu().block_dequantize(dequant.tensor, codes_in.tensor, absmax_in.tensor, sign);
      std::vector<uint8_t> dequant_want_bytes(size_t(n) * sizeof(float));
      std::memcpy(dequant_want_bytes.data(), dequant_want.data(), dequant_want_bytes.size());
      expect_same_bits(dequant_want_bytes, download(dequant.tensor), sizeof(float), "dequantize " + what);
    }
  }
}

// Column sums (bias_backward, the norms' weight gradients) launch one block row per 64-row chunk,
// and loop over chunks beyond CUDA's grid.y limit (over 4M rows). With the limit lowered to 2,
// the loop must give the same bits as one block row per chunk, and both the rows' sum.
TEST(CudaParity, ColumnSumsBeyondTheGridLimitLoopOverChunks) {
  const int64_t n = 64 * 9 + 5, c = 300, stride = 301;  // 10 chunks, 3 column blocks, padded rows
  std::vector<float> dout(static_cast<size_t>(n * stride)), start(static_cast<size_t>(c));
  uint32_t s = 2468u;
  for (float& x : dout) x = float(int32_t(s = s * 1664525u + 1013904223u) >> 8) * 0x1p-20f;
  for (size_t i = 0; i < start.size(); ++i) start[i] = float(i) * 0.25f;
  DeviceArray d_dout = DeviceArray::upload(host_view(dout.data(), DType::kF32, n * stride));
  // Each run's scratch starts as NaN, so a chunk partial it never writes shows.
  std::vector<float> poison(static_cast<size_t>(kernels::bias_backward_scratch_floats(n, c)), NAN);
  std::vector<std::vector<uint8_t>> results;
  for (int64_t max_grid_y : {int64_t(65535), int64_t(2)}) {
    DeviceArray scratch = DeviceArray::upload(host_view(poison.data(), DType::kF32, int64_t(poison.size())));
    DeviceArray dbias = DeviceArray::upload(host_view(start.data(), DType::kF32, c));
    gpu().synchronize();
    kernels::bias_backward_cuda(static_cast<float*>(dbias.tensor.data()), static_cast<const float*>(d_dout.tensor.data()),
                                n, c, stride, static_cast<float*>(scratch.tensor.data()), nullptr, max_grid_y);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    results.push_back(download(dbias.tensor));
  }
  expect_same_bits(results[0], results[1], sizeof(float), "column sums, grid.y 2 vs one row per chunk");
  std::vector<float> got(static_cast<size_t>(c));
  std::memcpy(got.data(), results[1].data(), results[1].size());
  // Recursive fp32 summation's bound: k additions in a chain err by at most k u sum |terms|
  // (u = 2^-24); here 64 rows in a chunk, then 10 chunk partials and the start value.
  const double chain = 64 + 10 + 1, u = 0x1p-24;
  for (int64_t col = 0; col < c; ++col) {
    double want = start[size_t(col)], magnitude = std::fabs(want);
    for (int64_t r = 0; r < n; ++r) {
      want += dout[size_t(r * stride + col)];
      magnitude += std::fabs(dout[size_t(r * stride + col)]);
    }
    EXPECT_NEAR(got[size_t(col)], want, chain * u * magnitude) << "column " << col;
  }
}

// cuBLASLt's FP4 operand layout (kernels/numerics/fp4_lt_layout.h; its offsets are tested against
// the reshape-and-permute form in tests/numerics/test_fp4_lt_layout.cpp): the packing and tiling
// kernels of the FP4 GEMM's path on sm_100 (gemm_fp4_cublaslt.cu) against a host loop over the
// header's functions, bit for bit, on ragged shapes (partial 128 x 4 tiles, whose padding must be
// zero: the destination starts as 0xEE).
TEST(CudaParity, Fp4OperandsPackAndTileAsCublasLtReadsThem) {
  for (const auto& [rows, blocks] : {std::pair<int64_t, int64_t>{130, 13}, {5, 2}, {256, 8}}) {
    const int64_t count = rows * blocks * 16, tiled_bytes = nm::fp4_lt_scale_bytes(rows, blocks);
    std::vector<uint8_t> codes(static_cast<size_t>(count)), scales(static_cast<size_t>(rows * blocks));
    uint32_t s = 97u;
    for (uint8_t& c : codes) c = uint8_t((s = s * 1664525u + 1013904223u) >> 28);
    for (uint8_t& c : scales) c = uint8_t((s = s * 1664525u + 1013904223u) >> 24);
    std::vector<uint8_t> want_packed(static_cast<size_t>(count / 2)), want_tiled(static_cast<size_t>(tiled_bytes), 0);
    for (int64_t j = 0; j < count / 2; ++j) {
      want_packed[size_t(j)] = nm::fp4_lt_pack_pair(codes[size_t(2 * j)], codes[size_t(2 * j + 1)]);
    }
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t b = 0; b < blocks; ++b) {
        want_tiled[size_t(nm::fp4_lt_scale_offset(r, b, blocks))] = scales[size_t(r * blocks + b)];
      }
    }
    std::vector<uint8_t> poison_packed(want_packed.size(), 0xEE), poison_tiled(want_tiled.size(), 0xEE);
    DeviceArray d_codes = DeviceArray::upload(host_view(codes.data(), DType::kU8, count));
    DeviceArray d_scales = DeviceArray::upload(host_view(scales.data(), DType::kU8, rows * blocks));
    DeviceArray d_packed = DeviceArray::upload(host_view(poison_packed.data(), DType::kU8, count / 2));
    DeviceArray d_tiled = DeviceArray::upload(host_view(poison_tiled.data(), DType::kU8, tiled_bytes));
    gpu().synchronize();
    kernels::fp4_pack_codes_cuda(static_cast<const uint8_t*>(d_codes.tensor.data()), count,
                                 static_cast<uint8_t*>(d_packed.tensor.data()), nullptr);
    kernels::fp4_tile_scales_cuda(static_cast<const uint8_t*>(d_scales.tensor.data()), rows, blocks,
                                  static_cast<uint8_t*>(d_tiled.tensor.data()), nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    expect_same_bits(want_packed, download(d_packed.tensor), 1, "packed FP4 codes");
    expect_same_bits(want_tiled, download(d_tiled.tensor), 1, "tiled FP4 scales");
  }
}

}  // namespace
}  // namespace farthing
