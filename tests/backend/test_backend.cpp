// test_backend.cpp — the CPU backend through the Backend interface: casts and block
// quantization agree with the scalar definitions, and bad calls fail with clear messages.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/block_quant.h"
#include "kernels/numerics/minifloat.h"

using namespace farthing;
namespace nm = farthing::numerics;

TEST(CpuBackend, CastsAgreeWithTheScalarDefinitions) {
  Backend& cpu = backend_for(Device::cpu());
  std::vector<float> src = {0.0f, -1.5f, 3.14159f, 1e-6f, 500.0f, -70000.0f, NAN};
  const size_t n = src.size();
  std::vector<uint16_t> bf16(n), fp16(n);
  std::vector<uint8_t> e4m3(n);
  cpu.cast(Tensor(bf16.data(), DType::kBF16, Shape{int64_t(n)}), Tensor(src.data(), DType::kF32, Shape{int64_t(n)}), {});
  cpu.cast(Tensor(fp16.data(), DType::kF16, Shape{int64_t(n)}), Tensor(src.data(), DType::kF32, Shape{int64_t(n)}), {});
  CastOptions saturate;
  saturate.overflow = nm::Overflow::kSaturate;
  cpu.cast(Tensor(e4m3.data(), DType::kE4M3, Shape{int64_t(n)}), Tensor(src.data(), DType::kF32, Shape{int64_t(n)}), saturate);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(bf16[i], nm::f32_to_bf16_rne(src[i]));
    EXPECT_EQ(fp16[i], nm::f32_to_fp16_rne(src[i]));
    EXPECT_EQ(e4m3[i], nm::f32_to_e4m3(src[i], nm::Overflow::kSaturate));
  }
  std::vector<float> back(n);
  cpu.cast(Tensor(back.data(), DType::kF32, Shape{int64_t(n)}), Tensor(bf16.data(), DType::kBF16, Shape{int64_t(n)}), {});
  for (size_t i = 0; i + 1 < n; ++i) EXPECT_EQ(back[i], nm::bf16_to_f32(bf16[i]));

  CastOptions sr;
  sr.rounding = nm::Rounding::kStochastic;
  sr.random_key = {5, 6, nm::RandomPurpose::kWeightCast};
  sr.global_offset = 1001;
  cpu.cast(Tensor(bf16.data(), DType::kBF16, Shape{int64_t(n)}), Tensor(src.data(), DType::kF32, Shape{int64_t(n)}), sr);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(bf16[i], nm::f32_to_bf16_sr(src[i], nm::random_bits_for_element(sr.random_key, 1001 + i)));
  }
}

TEST(CpuBackend, BlockQuantizeRoundTrip) {
  Backend& cpu = backend_for(Device::cpu());
  std::vector<float> x(300), y(300), absmax(2);
  std::vector<uint8_t> codes(300);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 17) - 8.0f;
  const Tensor xt(x.data(), DType::kF32, Shape{300}), ct(codes.data(), DType::kU8, Shape{300}),
      at(absmax.data(), DType::kF32, Shape{2}), yt(y.data(), DType::kF32, Shape{300});
  cpu.block_quantize(ct, at, xt, nm::MapSign::kSigned);
  cpu.block_dequantize(yt, ct, at, nm::MapSign::kSigned);
  EXPECT_EQ(absmax[0], 8.0f);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], x[i], 0.06) << i;
}

TEST(CpuBackend, BadCallsNameWhatIsWrong) {
  Backend& cpu = backend_for(Device::cpu());
  std::vector<float> a(10);
  std::vector<uint16_t> b(9);
  std::vector<int32_t> c(10);
  auto message_of = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string size_msg = message_of([&] {
    cpu.cast(Tensor(b.data(), DType::kBF16, Shape{9}), Tensor(a.data(), DType::kF32, Shape{10}), {});
  });
  EXPECT_NE(size_msg.find("f32(10) on cpu"), std::string::npos) << size_msg;
  EXPECT_NE(size_msg.find("element counts differ"), std::string::npos) << size_msg;
  const std::string dtype_msg = message_of([&] {
    cpu.cast(Tensor(c.data(), DType::kI32, Shape{10}), Tensor(a.data(), DType::kF32, Shape{10}), {});
  });
  EXPECT_NE(dtype_msg.find("f32 -> i32"), std::string::npos) << dtype_msg;
  std::vector<uint8_t> codes(10);
  std::vector<float> absmax(2);
  const std::string quant_msg = message_of([&] {
    cpu.block_quantize(Tensor(codes.data(), DType::kU8, Shape{10}), Tensor(absmax.data(), DType::kF32, Shape{2}),
                       Tensor(a.data(), DType::kF32, Shape{10}), nm::MapSign::kSigned);
  });
  EXPECT_NE(quant_msg.find("need 1 absmax"), std::string::npos) << quant_msg;
}

TEST(Backend, CudaDeviceWithoutCudaIsAClearError) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA device is present";
#if !defined(FARTHING_WITH_CUDA)
  try {
    backend_for(Device::cuda(0));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("built without CUDA"), std::string::npos);
  }
#endif
}
