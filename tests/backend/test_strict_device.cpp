// test_strict_device.cpp — the strict test device (backend/strict_device_backend.h) catches each
// kind of host assumption, and computes what the CPU computes, bit for bit: the optimizer in
// every state/master mode and a model op.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/buffer.h"
#include "framework/core/error.h"
#include "framework/core/memory.h"
#include "framework/optim/adamw.h"
#include "framework/optim/optim_state_io.h"
#include "tests/support/test_support.h"

namespace farthing {
namespace {

Backend& strict() { return backend_for(Device::strict()); }

std::vector<float> normal_vector(uint64_t seed, size_t n, double scale) {
  test::SplitMix64 rng(seed);
  std::vector<float> out(n);
  for (float& x : out) x = float(scale * rng.normal());
  return out;
}

// A device buffer filled from host values through the backend.
template <class T>
Buffer upload(const std::vector<T>& values, DType dtype, MemoryCategory category = MemoryCategory::kOther) {
  Buffer b(Device::strict(), values.size() * sizeof(T), category);
  strict().copy(b.view(dtype, Shape{int64_t(values.size())}),
                Tensor(const_cast<T*>(values.data()), dtype, Shape{int64_t(values.size())}));
  return b;
}

template <class T>
std::vector<T> download(const Buffer& b, DType dtype) {
  std::vector<T> out(b.bytes() / sizeof(T));
  strict().copy(Tensor(out.data(), dtype, Shape{int64_t(out.size())}), b.view(dtype, Shape{int64_t(out.size())}));
  return out;
}

TEST(StrictDeviceDeathTest, HostReadOfDeviceMemoryCrashesNamingTheStrictDevice) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Buffer b(Device::strict(), 4096, MemoryCategory::kOther);
        volatile float x = static_cast<const float*>(b.data())[3];
        static_cast<void>(x);
      },
      "strict device: host code read or wrote device memory");
}

TEST(StrictDeviceDeathTest, HostWriteOfDeviceMemoryCrashes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Buffer b(Device::strict(), 64, MemoryCategory::kOther);
        std::memset(b.data(), 0, 64);
      },
      "strict device");
}

TEST(StrictDevice, OpsRejectHostPointersNamingOpAndArgument) {
  Buffer out(Device::strict(), 16 * 4, MemoryCategory::kActivations);
  std::vector<int32_t> host_tokens(4, 0);
  Buffer table(Device::strict(), 8 * 4 * 4, MemoryCategory::kWeights);
  try {
    strict().nn().embedding_forward(static_cast<float*>(out.data()), host_tokens.data(),
                                    static_cast<const float*>(table.data()), nullptr, 4, 4, 4);
    FAIL() << "a host token array was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("embedding_forward was given host memory for 'tokens'"), std::string::npos)
        << e.what();
  }
  std::vector<float> host(16, 1.0f);
  EXPECT_THROW(strict().nn().zero(host.data(), 16), Error);
  EXPECT_THROW(strict().fill_bytes(host.data(), 0, 4), Error);
}

TEST(StrictDevice, CopyRejectsTensorsTaggedForTheWrongMemory) {
  Buffer b(Device::strict(), 64, MemoryCategory::kOther);
  std::vector<float> host(16, 2.0f);
  // A device pointer wrapped as a host tensor: what a GPU would punish with garbage or a fault.
  EXPECT_THROW(strict().copy(Tensor(host.data(), DType::kF32, Shape{16}),
                             Tensor(b.data(), DType::kF32, Shape{16})),
               Error);
  // A host pointer tagged as device memory.
  EXPECT_THROW(strict().copy(b.view(DType::kF32, Shape{16}),
                             Tensor(host.data(), DType::kF32, Shape{16}, Device::strict())),
               Error);
  strict().copy(b.view(DType::kF32, Shape{16}), Tensor(host.data(), DType::kF32, Shape{16}));
  EXPECT_EQ(download<float>(b, DType::kF32), host);
}

TEST(StrictDevice, ModelOpMatchesTheCpuBitwise) {
  const int64_t n = 5, c = 48;
  std::vector<float> x = normal_vector(3, size_t(n * c), 1.0);
  const std::vector<float> w = normal_vector(4, size_t(c), 1.0);
  std::vector<float> out_cpu(static_cast<size_t>(n * c)), rstd_cpu(static_cast<size_t>(n));
  backend_for(Device::cpu()).nn().rmsnorm_forward(out_cpu.data(), rstd_cpu.data(), x.data(), w.data(), n, c, 1e-5f);
  Buffer dx = upload(x, DType::kF32), dw = upload(w, DType::kF32);
  Buffer out(Device::strict(), size_t(n * c) * 4, MemoryCategory::kActivations);
  Buffer rstd(Device::strict(), size_t(n) * 4, MemoryCategory::kActivations);
  strict().nn().rmsnorm_forward(static_cast<float*>(out.data()), static_cast<float*>(rstd.data()),
                                static_cast<float*>(dx.data()), static_cast<const float*>(dw.data()), n, c, 1e-5f);
  const std::vector<float> got = download<float>(out, DType::kF32);
  EXPECT_EQ(0, std::memcmp(got.data(), out_cpu.data(), got.size() * 4));
}

struct OptimCase {
  const char* name;
  optim::StateFormat format;
  optim::MasterMode master;
  optim::WeightRounding rounding;
  DType grad_dtype;
};

// The same three steps on the CPU and on the strict device: weights, master and every state
// byte agree bit for bit (the strict device runs the CPU kernel, so any difference is a host
// assumption in AdamW: state built, initialised or stepped outside the backend).
TEST(StrictDevice, AdamWMatchesTheCpuBitwiseInEveryMode) {
  const OptimCase cases[] = {
      {"f32 moments, f32 master", optim::StateFormat::kF32, optim::MasterMode::kF32, optim::WeightRounding::kNearest,
       DType::kF32},
      {"8-bit moments, no master (SR)", optim::StateFormat::kBlock8, optim::MasterMode::kNone,
       optim::WeightRounding::kStochastic, DType::kBF16},
      {"4-bit moments, remainder16", optim::StateFormat::kBlock4, optim::MasterMode::kRemainder16,
       optim::WeightRounding::kNearest, DType::kF32},
      {"bf16 moments, f32 master, SR cast", optim::StateFormat::kBf16, optim::MasterMode::kF32,
       optim::WeightRounding::kStochastic, DType::kF32},
  };
  const int64_t n = 3 * 256 + 77;
  for (const OptimCase& k : cases) {
    SCOPED_TRACE(k.name);
    optim::OptimizerConfig config;
    config.groups = {{"g", {1e-2, 0.9, 0.999, 1e-8, 0.01}, k.format}};
    config.ranges = {{"w", 0, uint64_t(n), 0}};
    config.master_mode = k.master;
    config.weight_rounding = k.rounding;
    config.seed = 7;
    const std::vector<float> init = normal_vector(11, size_t(n), 0.5);
    std::vector<std::vector<uint8_t>> states[2];
    std::vector<uint16_t> weights[2];
    double unchanged[2] = {0, 0};
    for (int on_strict = 0; on_strict < 2; ++on_strict) {
      Backend& backend = on_strict ? strict() : backend_for(Device::cpu());
      const Device device = backend.device();
      optim::AdamW opt(config, {{0, uint64_t(n)}}, &backend);
      Buffer values(device, size_t(n) * 4, MemoryCategory::kOther);
      backend.copy(values.view(DType::kF32, Shape{n}), Tensor(const_cast<float*>(init.data()), DType::kF32, Shape{n}));
      Buffer w(device, size_t(n) * 2, MemoryCategory::kWeights);
      Buffer g(device, size_t(n) * dtype_size_bytes(k.grad_dtype), MemoryCategory::kGrads);
      backend.cast(w.view(DType::kBF16, Shape{n}), values.view(DType::kF32, Shape{n}), CastOptions{});
      const Tensor wt = w.view(DType::kBF16, Shape{n}), gt = g.view(k.grad_dtype, Shape{n});
      if (k.master != optim::MasterMode::kNone) opt.init_master(0, values.view(DType::kF32, Shape{n}), &wt);
      for (int step = 0; step < 3; ++step) {
        const std::vector<float> grad = normal_vector(100 + uint64_t(step), size_t(n), 0.1);
        Buffer gsrc(device, size_t(n) * 4, MemoryCategory::kOther);
        backend.copy(gsrc.view(DType::kF32, Shape{n}), Tensor(const_cast<float*>(grad.data()), DType::kF32, Shape{n}));
        if (k.grad_dtype == DType::kF32) {
          backend.copy(gt, gsrc.view(DType::kF32, Shape{n}));
        } else {
          backend.cast(gt, gsrc.view(DType::kF32, Shape{n}), CastOptions{});
        }
        const optim::GradReport report = opt.inspect_grads(std::vector<Tensor>{gt}, {1.0, 1.0});
        unchanged[on_strict] += opt.step(std::vector<Tensor>{wt}, std::vector<Tensor>{gt}, report).unchanged_fraction;
      }
      for (const optim::SavedStateEntry& e : optim::save_optimizer_state(opt)) {
        states[on_strict].emplace_back(reinterpret_cast<const uint8_t*>(e.bytes.data()),
                                       reinterpret_cast<const uint8_t*>(e.bytes.data()) + e.bytes.size());
      }
      weights[on_strict].resize(size_t(n));
      backend.copy(Tensor(weights[on_strict].data(), DType::kBF16, Shape{n}), wt);
    }
    EXPECT_EQ(weights[0], weights[1]);
    ASSERT_EQ(states[0].size(), states[1].size());
    for (size_t i = 0; i < states[0].size(); ++i) EXPECT_EQ(states[0][i], states[1][i]) << "state entry " << i;
    EXPECT_EQ(unchanged[0], unchanged[1]);
  }
}

}  // namespace
}  // namespace farthing
