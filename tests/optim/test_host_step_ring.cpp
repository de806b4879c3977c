// test_host_step_ring.cpp — the ring an offloaded AdamW steps through (framework/optim/host_offload.h),
// on the CPU backend as the "device": each host step sees the copies out of its shard, its
// weights come back into the device tensor by the end of the step; with every slot busy, step()
// waits for the oldest host step before it reuses that slot; a host step's error fails
// finish_step with its message.
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

struct DeviceShard {
  Buffer grads{Device::cpu(), kShard * 4, MemoryCategory::kOther};
  Buffer weights{Device::cpu(), kShard * 2, MemoryCategory::kOther};
  Tensor g() const { return grads.view(DType::kF32, Shape{kShard}); }
  Tensor w() const { return weights.view(DType::kBF16, Shape{kShard}); }
};

HostStepRing make_ring(int64_t slots, size_t shards) {
  std::vector<ShardSpec> specs;
  for (size_t s = 0; s < shards; ++s) specs.push_back({uint64_t(s) * kShard, uint64_t(kShard)});
  return HostStepRing(backend_for(Device::cpu()), OffloadOptions{Offload::kHost, slots, DType::kF32}, specs);
}

// host weight[i] <- grads[i] + shard: what the test can see came back.
HostStepRing::HostStep write_grads_plus(uint16_t shard) {
  return [shard](const Tensor& host_grads, const Tensor& host_weights) {
    const float* g = static_cast<const float*>(host_grads.data());
    auto* w = static_cast<uint16_t*>(host_weights.data());
    for (int64_t i = 0; i < host_grads.numel(); ++i) w[i] = uint16_t(g[i]) + shard;
  };
}

TEST(HostStepRing, EachShardsWeightsComeBackByTheEndOfTheStep) {
  std::vector<DeviceShard> device(5);
  for (size_t s = 0; s < device.size(); ++s) {
    for (int64_t i = 0; i < kShard; ++i) static_cast<float*>(device[s].grads.data())[i] = float(i % 100);
  }
  HostStepRing ring = make_ring(2, device.size());
  for (size_t s = 0; s < device.size(); ++s) {
    ring.step(s, device[s].g(), device[s].w(), write_grads_plus(uint16_t(1000 * s)));
  }
  ring.finish_step();
  for (size_t s = 0; s < device.size(); ++s) {
    const auto* w = static_cast<const uint16_t*>(device[s].weights.data());
    for (int64_t i = 0; i < kShard; ++i) {
      ASSERT_EQ(w[i], uint16_t(i % 100 + 1000 * int64_t(s))) << "shard " << s << " element " << i;
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
  EXPECT_EQ(static_cast<const uint16_t*>(device[0].weights.data())[0], 7) << "shard 0's weights did not come back";
}

TEST(HostStepRing, AHostStepErrorFailsTheStepWithItsMessage) {
  std::vector<DeviceShard> device(3);
  HostStepRing ring = make_ring(2, device.size());
  ring.step(0, device[0].g(), device[0].w(), [](const Tensor&, const Tensor&) {
    FARTHING_FAIL("shard 0's host step found a broken moment");
  });
  ring.step(1, device[1].g(), device[1].w(), write_grads_plus(1));
  try {
    ring.step(2, device[2].g(), device[2].w(), write_grads_plus(2));  // reuses shard 0's slot: waits for it
    ring.finish_step();
    FAIL() << "the step went on after a host step threw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shard 0's host step found a broken moment"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace farthing::optim
