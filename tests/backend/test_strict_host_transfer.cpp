// test_strict_host_transfer.cpp — the strict device's deferred copies (backend/strict_host_transfer.h):
// a copy's destination reads NaN until wait() or order_device_after_copies() lands it; wait(t)
// lands the copies up to t and no later one; copies land in issue order, so a copy back that a
// later copy out overwrites at its source still moves what the source held when it was queued.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/buffer.h"
#include "framework/backend/host_transfer.h"

namespace farthing {
namespace {

constexpr int64_t kN = 64;
constexpr uint32_t kPoisonBits = 0xFFFFFFFFu;

Backend& strict() { return backend_for(Device::strict()); }

Tensor host_view(std::vector<uint32_t>& v) { return Tensor(v.data(), DType::kF32, Shape{int64_t(v.size())}); }

std::vector<uint32_t> iota_bits(uint32_t first) {
  std::vector<uint32_t> v(kN);
  for (int64_t i = 0; i < kN; ++i) v[size_t(i)] = first + uint32_t(i);
  return v;
}

struct DeviceArray {
  Buffer buffer{Device::strict(), kN * 4, MemoryCategory::kOther};
  Tensor t() const { return buffer.view(DType::kF32, Shape{kN}); }
  void set(std::vector<uint32_t> v) { strict().copy(t(), host_view(v)); }
  std::vector<uint32_t> get() const {
    std::vector<uint32_t> v(kN);
    strict().copy(host_view(v), t());
    return v;
  }
};

TEST(StrictHostTransfer, ACopyToTheHostLandsOnlyWhenWaitedFor) {
  const std::unique_ptr<HostTransfer> transfer = make_host_transfer(strict());
  DeviceArray d;
  d.set(iota_bits(100));
  std::vector<uint32_t> host(kN, 0u);
  const HostTransfer::Ticket t = transfer->to_host(host.data(), d.t());
  EXPECT_EQ(host, std::vector<uint32_t>(kN, kPoisonBits)) << "the host saw a copy it had not waited for";
  transfer->wait(t);
  EXPECT_EQ(host, iota_bits(100));
}

TEST(StrictHostTransfer, ACopyToTheDeviceLandsOnlyWhenOrdered) {
  const std::unique_ptr<HostTransfer> transfer = make_host_transfer(strict());
  DeviceArray d;
  d.set(iota_bits(0));
  std::vector<uint32_t> host = iota_bits(500);
  transfer->to_device(d.t(), host.data());
  EXPECT_EQ(d.get(), std::vector<uint32_t>(kN, kPoisonBits)) << "a device op saw a copy not ordered before it";
  transfer->order_device_after_copies();
  EXPECT_EQ(d.get(), iota_bits(500));
}

TEST(StrictHostTransfer, WaitLandsTheCopiesUpToItsTicketOnly) {
  const std::unique_ptr<HostTransfer> transfer = make_host_transfer(strict());
  DeviceArray a, b;
  a.set(iota_bits(1));
  b.set(iota_bits(2));
  std::vector<uint32_t> ha(kN), hb(kN);
  const HostTransfer::Ticket ta = transfer->to_host(ha.data(), a.t());
  const HostTransfer::Ticket tb = transfer->to_host(hb.data(), b.t());
  transfer->wait(ta);
  EXPECT_EQ(ha, iota_bits(1));
  EXPECT_EQ(hb, std::vector<uint32_t>(kN, kPoisonBits)) << "wait(" << ta << ") landed copy " << tb;
  transfer->wait(tb);
  EXPECT_EQ(hb, iota_bits(2));
}

// A ring slot: its weights go back to the device, then the slot is refilled from another shard.
TEST(StrictHostTransfer, CopiesLandInIssueOrder) {
  const std::unique_ptr<HostTransfer> transfer = make_host_transfer(strict());
  DeviceArray first, second;
  second.set(iota_bits(900));
  std::vector<uint32_t> slot = iota_bits(300);
  transfer->to_device(first.t(), slot.data());
  const HostTransfer::Ticket refill = transfer->to_host(slot.data(), second.t());
  transfer->wait(refill);
  EXPECT_EQ(slot, iota_bits(900));
  EXPECT_EQ(first.get(), iota_bits(300)) << "the copy back read the slot after the later copy out refilled it";
}

}  // namespace
}  // namespace farthing
