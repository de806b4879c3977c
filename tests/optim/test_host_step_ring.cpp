// test_host_step_ring.cpp — the ring an offloaded AdamW steps through (framework/optim/host_offload.h),
// on the strict device, whose copies land only when waited for or ordered (backend/strict_host_transfer.h:
// until then their destinations read NaN): each shard's host step sees its own gradients and its own
// weights as they were on the device, and each shard's new weights are back on the device by the end
// of the step; with every slot busy, step() waits for the oldest host step before it reuses that slot;
// a host step's error fails finish_step with its message.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/buffer.h"
#include "framework/core/error.h"
#include "framework/optim/host_offload.h"

namespace farthing::optim {
namespace {

constexpr int64_t kShard = 512;

Backend& strict() { return backend_for(Device::strict()); }

struct DeviceShard {
  Buffer grads{Device::strict(), kShard * 4, MemoryCategory::kOther};
  Buffer weights{Device::strict(), kShard * 2, MemoryCategory::kOther};
  Tensor g() const { return grads.view(DType::kF32, Shape{kShard}); }
  Tensor w() const { return weights.view(DType::kBF16, Shape{kShard}); }
};

HostStepRing make_ring(int64_t slots, size_t shards) {
  std::vector<ShardSpec> specs;
  for (size_t s = 0; s < shards; ++s) specs.push_back({uint64_t(s) * kShard, uint64_t(kShard)});
  return HostStepRing(strict(), OffloadOptions{Offload::kHost, slots, DType::kF32}, specs);
}

// Shard s's gradients and weights (raw bf16 bits), different in every shard and element.
float grad_of(size_t s, int64_t i) { return float((i * 7 + int64_t(s) * 13) % 100); }
uint16_t weight_of(size_t s, int64_t i) { return uint16_t(1000 * s + uint64_t(i % 50) * 3); }

void upload(DeviceShard& d, size_t s) {
  std::vector<float> g(kShard);
  std::vector<uint16_t> w(kShard);
  for (int64_t i = 0; i < kShard; ++i) {
    g[size_t(i)] = grad_of(s, i);
    w[size_t(i)] = weight_of(s, i);
  }
  strict().copy(d.g(), Tensor(g.data(), DType::kF32, Shape{kShard}));
  strict().copy(d.w(), Tensor(w.data(), DType::kBF16, Shape{kShard}));
}

// The device weights as they are now (a readback outside the ring's transfer: copies it has not
// landed yet read as NaN, 0xFFFF).
std::vector<uint16_t> download_weights(const DeviceShard& d) {
  std::vector<uint16_t> w(kShard);
  strict().copy(Tensor(w.data(), DType::kBF16, Shape{kShard}), d.w());
  return w;
}

// host weight[i] <- weight[i] + grads[i] + 1 (as integers): what comes back depends on both
// copies out of this very shard.
HostStepRing::HostStep add_grads_to_weights() {
  return [](const Tensor& host_grads, const Tensor& host_weights) {
    const float* g = static_cast<const float*>(host_grads.data());
    auto* w = static_cast<uint16_t*>(host_weights.data());
    for (int64_t i = 0; i < host_grads.numel(); ++i) w[i] = uint16_t(w[i] + uint16_t(g[i]) + 1);
  };
}

// Five shards through two slots, so slots are reused within the step and the last two come back
// only at finish_step.
TEST(HostStepRing, EachShardsWeightsComeBackByTheEndOfTheStep) {
  std::vector<DeviceShard> device(5);
  for (size_t s = 0; s < device.size(); ++s) upload(device[s], s);
  HostStepRing ring = make_ring(2, device.size());
  for (size_t s = 0; s < device.size(); ++s) ring.step(s, device[s].g(), device[s].w(), add_grads_to_weights());
  ring.finish_step();
  for (size_t s = 0; s < device.size(); ++s) {
    const std::vector<uint16_t> w = download_weights(device[s]);
    for (int64_t i = 0; i < kShard; ++i) {
      const auto expected = uint16_t(weight_of(s, i) + uint16_t(grad_of(s, i)) + 1);
      ASSERT_EQ(w[size_t(i)], expected) << "shard " << s << " element " << i << " (0xffff: a copy that never landed)";
    }
  }
}

// Two steps in a row: the second copies out the weights the first copied back.
TEST(HostStepRing, ASecondStepStartsFromTheFirstStepsWeights) {
  std::vector<DeviceShard> device(3);
  for (size_t s = 0; s < device.size(); ++s) upload(device[s], s);
  HostStepRing ring = make_ring(2, device.size());
  for (int step = 0; step < 2; ++step) {
    for (size_t s = 0; s < device.size(); ++s) ring.step(s, device[s].g(), device[s].w(), add_grads_to_weights());
    ring.finish_step();
  }
  for (size_t s = 0; s < device.size(); ++s) {
    const std::vector<uint16_t> w = download_weights(device[s]);
    for (int64_t i = 0; i < kShard; ++i) {
      const auto expected = uint16_t(weight_of(s, i) + 2 * (uint16_t(grad_of(s, i)) + 1));
      ASSERT_EQ(w[size_t(i)], expected) << "shard " << s << " element " << i;
    }
  }
}

// One slot: the second shard cannot be copied out until the first one's host step has ended and
// its weights have gone back. The first host step holds until the test releases it.
TEST(HostStepRing, WithEverySlotBusyStepWaitsForTheOldestHostStep) {
  std::vector<DeviceShard> device(2);
  HostStepRing ring = make_ring(1, device.size());
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  ring.step(0, device[0].g(), device[0].w(), [released](const Tensor&, const Tensor& host_weights) {
    released.wait();
    static_cast<uint16_t*>(host_weights.data())[0] = 7;
  });
  std::future<void> second = std::async(std::launch::async, [&] {
    ring.step(1, device[1].g(), device[1].w(), [](const Tensor&, const Tensor&) {});
  });
  EXPECT_EQ(second.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout)
      << "step() reused the only slot while its host step was still running";
  release.set_value();
  second.get();
  EXPECT_EQ(download_weights(device[0])[0], 7) << "shard 0's weights did not come back";
}

TEST(HostStepRing, AHostStepErrorFailsTheStepWithItsMessage) {
  std::vector<DeviceShard> device(3);
  HostStepRing ring = make_ring(2, device.size());
  ring.step(0, device[0].g(), device[0].w(), [](const Tensor&, const Tensor&) {
    FARTHING_FAIL("shard 0's host step found a broken moment");
  });
  ring.step(1, device[1].g(), device[1].w(), add_grads_to_weights());
  try {
    ring.step(2, device[2].g(), device[2].w(), add_grads_to_weights());  // reuses shard 0's slot: waits for it
    ring.finish_step();
    FAIL() << "the step went on after a host step threw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shard 0's host step found a broken moment"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace farthing::optim
