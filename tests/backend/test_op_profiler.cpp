// test_op_profiler.cpp — the step profile's recorder and the backend that feeds it
// (op_profiler.h, profiling_backend.h), on the CPU and the strict device:
//   - a step's busy and idle time add up to its wall time, with a call nested in another counted
//     once (toward the outer call's span);
//   - a sleep between two ops shows as idle time between exactly those two spans;
//   - the host counters count copies each way, synchronizations and allocations;
//   - installed, backend_for returns the profiling backend; uninstalled, the device's own and
//     OpPhaseScope does nothing.
// Relies on: framework/backend/profiling_backend.h, buffer.h.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "framework/backend/buffer.h"
#include "framework/backend/profiling_backend.h"

namespace farthing {
namespace {

TEST(OpProfiler, BusyPlusIdleIsWallAndANestedCallCountsOnce) {
  OpProfiler profiler(std::make_unique<HostOpClock>());
  profiler.begin_step();
  profiler.set_phase(OpPhase::kForward);
  const OpProfiler::Entry outer = profiler.enter();
  const OpProfiler::Entry inner = profiler.enter();  // e.g. a staging copy inside a collective
  EXPECT_FALSE(inner.outermost);
  profiler.leave(inner, "copy");
  profiler.leave(outer, "all_reduce", 0.0, /*communication=*/true);
  const OpProfiler::Entry second = profiler.enter();
  profiler.leave(second, "gemm", 128.0);
  const StepOpProfile p = profiler.end_step();
  EXPECT_GT(p.wall_seconds, 0.0);
  EXPECT_NEAR(p.busy_seconds + p.idle_seconds, p.wall_seconds, 1e-12 + 1e-12 * p.wall_seconds);
  double busy = 0.0;
  for (const OpSpan& s : p.spans) busy += s.end - s.begin;
  EXPECT_DOUBLE_EQ(busy, p.busy_seconds);
  ASSERT_EQ(p.spans.size(), 2u);
  EXPECT_STREQ(p.spans[0].kind, "all_reduce");
  EXPECT_EQ(p.spans[0].phase, OpPhase::kCommunication);
  EXPECT_STREQ(p.spans[1].kind, "gemm");
  EXPECT_EQ(p.spans[1].phase, OpPhase::kForward);
  EXPECT_EQ(p.spans[1].flops, 128.0);
  EXPECT_EQ(p.counters.op_calls, 3);
}

TEST(OpProfiler, ASleepBetweenTwoOpsIsIdleBetweenThem) {
  ProfilingBackend backend(backend_for(Device::cpu()));
  const ProfilingBackend::Install install(backend);
  std::vector<float> x(4096, 1.0f), y(4096, 2.0f);
  NnOps& ops = backend_for(Device::cpu()).nn();
  backend.profiler().begin_step();
  ops.zero(x.data(), int64_t(x.size()));
  ops.accumulate(x.data(), y.data(), int64_t(x.size()));
  constexpr double kSleep = 0.05;
  std::this_thread::sleep_for(std::chrono::duration<double>(kSleep));
  ops.copy(y.data(), x.data(), int64_t(x.size()));
  const StepOpProfile p = backend.profiler().end_step();
  ASSERT_EQ(p.spans.size(), 3u);
  EXPECT_STREQ(p.spans[1].kind, "accumulate");
  EXPECT_STREQ(p.spans[2].kind, "copy");
  const double gap = p.spans[2].begin - p.spans[1].end;
  EXPECT_GE(gap, kSleep);
  EXPECT_GE(p.idle_seconds, kSleep);
  EXPECT_LT(p.busy_seconds, p.wall_seconds - kSleep);
  EXPECT_LT(p.spans[1].begin - p.spans[0].end, gap) << "the sleep is not the largest gap";
  EXPECT_NEAR(p.busy_seconds + p.idle_seconds, p.wall_seconds, 1e-12 + 1e-12 * p.wall_seconds);
}

TEST(OpProfiler, CountsCopiesEachWaySynchronizationsAndAllocations) {
  Backend& strict = backend_for(Device::strict());
  ProfilingBackend backend(strict);
  const ProfilingBackend::Install install(backend);
  std::vector<float> host(256, 3.0f);
  backend.profiler().begin_step();
  Buffer on_device(Device::strict(), host.size() * sizeof(float), MemoryCategory::kOther);  // through backend_for
  const Tensor d = on_device.view(DType::kF32, Shape{int64_t(host.size())});
  const Tensor h(host.data(), DType::kF32, Shape{int64_t(host.size())});
  backend_for(Device::strict()).copy(d, h);
  backend_for(Device::strict()).copy(h, d);
  backend_for(Device::strict()).copy(h, d);
  backend_for(Device::strict()).synchronize();
  const StepOpProfile p = backend.profiler().end_step();
  EXPECT_EQ(p.counters.allocations, 1);
  EXPECT_EQ(p.counters.copies_to_device, 1);
  EXPECT_EQ(p.counters.copies_to_host, 2);
  EXPECT_EQ(p.counters.synchronizations, 1);
  EXPECT_EQ(p.counters.op_calls, 4);  // three copies and the synchronize; an allocation queues no work
  ASSERT_EQ(p.spans.size(), 4u);
  EXPECT_STREQ(p.spans[3].kind, "synchronize");
}

TEST(OpProfiler, InstalledOnlyWhileItLives) {
  Backend& cpu = backend_for(Device::cpu());
  EXPECT_EQ(active_op_profiler(), nullptr);
  {
    ProfilingBackend backend(cpu);
    const ProfilingBackend::Install install(backend);
    EXPECT_EQ(&backend_for(Device::cpu()), &backend);
    EXPECT_EQ(&backend_for(Device::strict()), &backend_for(Device::strict()));  // another device: its own
    EXPECT_NE(static_cast<Backend*>(&backend_for(Device::strict())), static_cast<Backend*>(&backend));
    EXPECT_EQ(active_op_profiler(), &backend.profiler());
    {
      const OpPhaseScope phase(OpPhase::kBackward);
      EXPECT_EQ(backend.profiler().phase(), OpPhase::kBackward);
    }
    EXPECT_EQ(backend.profiler().phase(), OpPhase::kOther);
  }
  EXPECT_EQ(&backend_for(Device::cpu()), &cpu);
  EXPECT_EQ(active_op_profiler(), nullptr);
  const OpPhaseScope phase(OpPhase::kForward);  // no profiler: nothing to set
  EXPECT_EQ(active_op_profiler(), nullptr);
}

}  // namespace
}  // namespace farthing
