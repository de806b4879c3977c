// test_core.cpp — Error messages, DType, Shape/Tensor views, memory accounting.
#include <gtest/gtest.h>

#include <string>

#include "framework/backend/buffer.h"
#include "framework/core/dtype.h"
#include "framework/core/error.h"
#include "framework/core/memory.h"
#include "framework/core/tensor.h"

using namespace farthing;

TEST(Error, CheckThrowsWithLocationConditionAndValues) {
  try {
    const int rank = 3, world = 2;
    FARTHING_CHECK(rank < world, "rank ", rank, " >= world_size ", world);
    FAIL() << "FARTHING_CHECK did not throw";
  } catch (const Error& e) {
    // The user's message alone; the place and the condition apart, for developers.
    EXPECT_EQ(std::string(e.what()), "rank 3 >= world_size 2");
    const std::string& where = e.location();
    EXPECT_NE(where.find("test_core.cpp:"), std::string::npos) << where;
    EXPECT_NE(where.find("[check failed: rank < world]"), std::string::npos) << where;
  }
  EXPECT_NO_THROW(FARTHING_CHECK(true, "never shown"));
}

TEST(DType, SizesNamesAndParsing) {
  EXPECT_EQ(dtype_size_bytes(DType::kF32), 4u);
  EXPECT_EQ(dtype_size_bytes(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size_bytes(DType::kE4M3), 1u);
  for (DType d : {DType::kF32, DType::kBF16, DType::kF16, DType::kE4M3, DType::kE5M2, DType::kU8,
                  DType::kI32, DType::kI64, DType::kF64}) {
    EXPECT_EQ(parse_dtype(dtype_name(d)), d);
    // The dispatch switch hands out a storage type of the right size.
    const size_t size = dispatch_dtype(d, [](auto tag) { return sizeof(typename decltype(tag)::type); });
    EXPECT_EQ(size, dtype_size_bytes(d)) << dtype_name(d);
  }
  try {
    parse_dtype("fp33");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'fp33'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("bf16"), std::string::npos);
  }
}

TEST(Tensor, ShapesStridesAndSlices) {
  float data[24] = {};
  const Tensor t(data, DType::kF32, Shape{2, 3, 4});
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.nbytes(), 96u);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.strides(), (Shape{12, 4, 1}));
  EXPECT_EQ(t.describe(), "f32(2, 3, 4) on cpu");
  const Tensor s = t.flat_slice(5, 10);
  EXPECT_EQ(s.data(), data + 5);
  EXPECT_EQ(s.numel(), 10);
  EXPECT_THROW(t.flat_slice(20, 10), Error);
  EXPECT_THROW(t.data_as<Bf16Bits>(), Error);
  EXPECT_EQ(t.data_as<float>(), data);
  const Tensor transposed(data, DType::kF32, Shape{4, 6}, Shape{1, 4}, Device::cpu());
  EXPECT_FALSE(transposed.is_contiguous());
  EXPECT_THROW(transposed.flat_slice(0, 1), Error);
}

TEST(Memory, TracksCurrentAndPeakPerCategory) {
  MemoryTracker& tracker = memory_tracker(Device::cpu());
  const MemorySnapshot before = tracker.snapshot();
  const auto master = size_t(MemoryCategory::kMaster);
  const auto state = size_t(MemoryCategory::kOptimizerState);
  {
    Buffer a(Device::cpu(), 1000, MemoryCategory::kMaster);
    Buffer b(Device::cpu(), 3000, MemoryCategory::kOptimizerState);
    const MemorySnapshot during = tracker.snapshot();
    EXPECT_EQ(during.current_bytes[master] - before.current_bytes[master], 1000);
    EXPECT_EQ(during.current_bytes[state] - before.current_bytes[state], 3000);
    EXPECT_EQ(during.total_current_bytes - before.total_current_bytes, 4000);
    Buffer moved = std::move(a);  // moving transfers ownership without double counting
    EXPECT_EQ(tracker.snapshot().total_current_bytes - before.total_current_bytes, 4000);
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_NE(moved.data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(moved.data()) % 64, 0u);
  }
  const MemorySnapshot after = tracker.snapshot();
  EXPECT_EQ(after.total_current_bytes, before.total_current_bytes);
  EXPECT_GE(after.total_peak_bytes, before.total_current_bytes + 4000);
  EXPECT_GE(after.peak_bytes[state], 3000);
  tracker.reset_peaks();
  EXPECT_EQ(tracker.snapshot().total_peak_bytes, after.total_current_bytes);
}

TEST(Memory, BufferViewChecksItsSize) {
  Buffer b(Device::cpu(), 64, MemoryCategory::kOther);
  EXPECT_EQ(b.view(DType::kF32, Shape{16}).numel(), 16);
  EXPECT_THROW(b.view(DType::kF32, Shape{17}), Error);
}
