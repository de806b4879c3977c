// test_offload_timeline.cpp — the step timeline of optimizer.offload: host on the strict device
// (step_timeline.h, optim/host_offload.h): one real Trainer step, and for each shard its copy out,
// its host step, the driving thread's wait for that step and the copy back of its weights.
//  - always: the host step runs on the worker thread, every copy and wait on the driving thread
//    (the test's); a shard's step begins after its copy out landed and ends before the wait for
//    it returns, and its weights go back only after that wait;
//  - after backward (train.optimizer_in_backward false): shards handed over in shard order inside
//    the optimizer step; a slot's next copy out is issued only after the copy back that read it
//    (the ring of K = 2);
//  - fused into backward: each unit copied out inside the grads_ready call that handed it over,
//    and its host step never waited for there: by construction of the overlap, the driving
//    thread enters the next unit's grads_ready (so has run that unit's backward) before it waits
//    for this unit's step. How many host steps did begin before the next unit's grads_ready
//    ended depends on the scheduler, so it is printed, not asserted;
//  - a device-resident run records none.
// The fused step's order is printed: the "order of copies and host steps in one strict-device
// step" (with each copy's device time where the device has a clock:
// CUDA events; the strict device has none).
// Relies on: train/loop/trainer.h, tests/train/loop/trainer_test_support.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "framework/backend/backend.h"
#include "train/loop/step_timeline.h"
#include "train/loop/trainer.h"
#include "tests/train/loop/trainer_test_support.h"

namespace farthing::train {
namespace {

using optim::OffloadSpan;
using optim::OffloadStage;

recipe::RunConfig offload_config(const std::filesystem::path& dir, bool fused, optim::Offload offload,
                                 recipe::TrainDevice device) {
  recipe::RunConfig c = testing::tiny_token_run(dir, 2);
  c.train.device = device;
  c.train.precision = recipe::Precision::kBf16;
  c.train.optimizer_in_backward = fused;
  if (fused) {
    c.train.max_grad_norm = 0.0;
    c.train.nonfinite = recipe::Nonfinite::kFail;
  }
  c.optimizer.offload = offload;
  c.optimizer.offload_ring_units = 2;
  return c;
}

// One training step of a Trainer built for `offload_config`, with its timeline.
struct OneStep {
  testing::TempDir dir;
  StepTimeline timeline;
  Trainer trainer;
  OneStep(const char* name, bool fused, optim::Offload offload,
          recipe::TrainDevice device = recipe::TrainDevice::kStrict)
      : dir(name),
        trainer(offload_config(dir.path, fused, offload, device), testing::world(),
                TrainerOutput{.progress = false, .timeline = &timeline}) {
    trainer.train_step();
  }
};

const char* stage_name(OffloadStage s) {
  switch (s) {
    case OffloadStage::kCopyOut: return "copy out";
    case OffloadStage::kHostStep: return "host step";
    case OffloadStage::kHostWait: return "wait";
    case OffloadStage::kCopyIn: return "copy in";
  }
  return "?";
}

std::string ms(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f ms", 1e3 * seconds);
  return text;
}

// One shard's four spans.
struct ShardSpans {
  const OffloadSpan *out = nullptr, *step = nullptr, *wait = nullptr, *in = nullptr;
};

// Each shard's spans, checked: one of each stage, in the order the pipeline allows, each on the
// thread that must do it; the copies timed on the device's clock where it has one (CUDA).
enum class DeviceClock : bool { kNone, kCuda };
std::map<size_t, ShardSpans> shard_spans(const std::vector<OffloadSpan>& spans, size_t shards,
                                         DeviceClock clock = DeviceClock::kNone) {
  std::map<size_t, ShardSpans> by_shard;
  for (const OffloadSpan& span : spans) {
    ShardSpans& s = by_shard[span.shard];
    const OffloadSpan** slot = span.stage == OffloadStage::kCopyOut    ? &s.out
                               : span.stage == OffloadStage::kHostStep ? &s.step
                               : span.stage == OffloadStage::kHostWait ? &s.wait
                                                                       : &s.in;
    EXPECT_EQ(*slot, nullptr) << "shard " << span.shard << " has two " << stage_name(span.stage) << " spans";
    *slot = &span;
    EXPECT_LE(span.begin, span.end) << stage_name(span.stage) << " of shard " << span.shard;
    const bool copy = span.stage == OffloadStage::kCopyOut || span.stage == OffloadStage::kCopyIn;
    if (clock == DeviceClock::kCuda && copy) {
      EXPECT_GT(span.device_seconds, 0.0) << stage_name(span.stage) << " of shard " << span.shard << " was not timed";
    } else {
      EXPECT_EQ(span.device_seconds, -1.0) << stage_name(span.stage) << " of shard " << span.shard
                                           << ": no device clock times it";
    }
    if (span.stage == OffloadStage::kHostStep) {
      EXPECT_NE(span.thread, std::this_thread::get_id())
          << "shard " << span.shard << "'s host step ran on the thread that drives the device";
    } else {
      EXPECT_EQ(span.thread, std::this_thread::get_id())
          << stage_name(span.stage) << " of shard " << span.shard << " was not issued by the driving thread";
    }
  }
  EXPECT_EQ(by_shard.size(), shards);
  for (const auto& [shard, s] : by_shard) {
    if (!s.out || !s.step || !s.wait || !s.in) {
      ADD_FAILURE() << "shard " << shard << " lacks a span";
      continue;
    }
    EXPECT_LE(s.out->end, s.step->begin) << "the host steps shard " << shard << " before its copy out landed";
    EXPECT_LE(s.step->end, s.wait->end) << "the wait for shard " << shard << "'s host step returned before it ended";
    EXPECT_LE(s.wait->end, s.in->begin) << "shard " << shard << "'s weights copied back before its step was waited for";
  }
  return by_shard;
}

TEST(OffloadTimeline, AfterBackwardShardsHandedOverInShardOrder) {
  OneStep run("offload_timeline", false, optim::Offload::kHost);
  const StepTimeline& timeline = run.timeline;
  const size_t shards = run.trainer.zero_layout().owned_shards().size();
  ASSERT_GE(shards, 3u) << "the ring of 2 must wrap around";
  std::map<size_t, ShardSpans> s = shard_spans(timeline.offload_spans, shards);
  ASSERT_EQ(s.size(), shards);
  for (size_t i = 0; i < shards; ++i) {
    if (!s[i].out || !s[i].in) continue;  // reported above
    EXPECT_GE(s[i].out->begin, timeline.optimizer_begin);
    EXPECT_LE(s[i].in->end, timeline.optimizer_end);
    if (i > 0 && s[i - 1].out) {
      EXPECT_GE(s[i].out->begin, s[i - 1].out->end) << "shard " << i << " handed over early";
    }
    // Shard i + 2 reuses shard i's slot: its copy out was issued after shard i's copy back.
    if (i + 2 < shards && s[i + 2].out) {
      EXPECT_GE(s[i + 2].out->begin, s[i].in->end) << "shard " << i + 2;
    }
  }
}

TEST(OffloadTimeline, FusedHostStepsOverlapTheNextUnitsBackward) {
  OneStep run("offload_timeline_fused", true, optim::Offload::kHost);
  const StepTimeline& timeline = run.timeline;
  const dist::ZeroLayout& zero = run.trainer.zero_layout();
  const std::vector<optim::ShardSpec> shards = zero.owned_shards();
  std::map<size_t, ShardSpans> spans = shard_spans(timeline.offload_spans, shards.size());
  std::map<int, size_t> shard_of_unit;
  for (size_t s = 0; s < shards.size(); ++s) {
    for (size_t u = 0; u < zero.units().size(); ++u) {
      if (int64_t(shards[s].global_offset) == zero.units()[u].begin) shard_of_unit[int(u)] = s;
    }
  }
  ASSERT_EQ(shard_of_unit.size(), shards.size()) << "at world size 1 each unit is one shard";
  std::vector<const StoreCall*> handed_over;  // grads_ready's calls, in order
  for (const StoreCall& call : timeline.calls) {
    if (call.kind == StoreCallKind::kGradsReady) handed_over.push_back(&call);
  }
  ASSERT_EQ(handed_over.size(), shards.size());
  EXPECT_GT(handed_over.front()->unit, handed_over.back()->unit) << "backward hands the units over last to first";
  int overlapped = 0;
  for (size_t k = 0; k < handed_over.size(); ++k) {
    const StoreCall& call = *handed_over[k];
    const ShardSpans& s = spans[shard_of_unit.at(call.unit)];
    if (!s.out || !s.step || !s.wait) continue;  // reported above
    EXPECT_GE(s.out->begin, call.begin) << "unit " << call.unit << " copied out before grads_ready handed it over";
    EXPECT_LE(s.out->end, call.end) << "unit " << call.unit << "'s copy out outlived its grads_ready";
    EXPECT_GE(s.wait->begin, call.end) << "unit " << call.unit << "'s host step was waited for inside its grads_ready";
    if (k + 1 < handed_over.size()) {
      const StoreCall& next = *handed_over[k + 1];
      EXPECT_GE(s.wait->begin, next.begin)
          << "unit " << call.unit << "'s host step was waited for before unit " << next.unit << " was handed over";
      overlapped += s.step->begin < next.end;
    }
  }
  const double t0 = timeline.begin;
  std::printf("one fused strict-device step, optimizer.offload host, a ring of 2 (ms from the step's start;\n"
              "host steps on the worker thread, the rest on the driving thread):\n");
  std::vector<std::pair<double, std::string>> lines;
  for (const StoreCall* call : handed_over) {
    lines.emplace_back(call->begin, "grads_ready(unit " + std::to_string(call->unit) + "), " + ms(call->end - call->begin));
  }
  for (const OffloadSpan& span : timeline.offload_spans) {
    std::string line = std::string("  ") + stage_name(span.stage) + " shard " + std::to_string(span.shard) + ", " +
                       ms(span.end - span.begin);
    if (span.device_seconds >= 0.0) line += " (on the device's clock " + ms(span.device_seconds) + ")";
    lines.emplace_back(span.begin, line);
  }
  std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [at, line] : lines) std::printf("  %8.3f %s\n", 1e3 * (at - t0), line.c_str());
  std::printf("finish_step at %.3f ms; %d of %zu host steps began before the next unit's grads_ready ended\n",
              1e3 * (timeline.optimizer_begin - t0), overlapped, handed_over.size() - 1);
}

// On a GPU every copy carries its time on the copy stream (CUDA events): printed beside the
// host's view of it. Skipped without one.
TEST(OffloadTimeline, CudaCopiesCarryTheirDeviceTime) {
  if (visible_cuda_devices() == 0) GTEST_SKIP() << "no CUDA device";
  OneStep run("offload_timeline_cuda", true, optim::Offload::kHost, recipe::TrainDevice::kCuda);
  const std::vector<OffloadSpan>& spans = run.timeline.offload_spans;
  shard_spans(spans, run.trainer.zero_layout().owned_shards().size(), DeviceClock::kCuda);
  std::printf("one fused CUDA step, optimizer.offload host: each copy as the host saw it and on the copy stream\n");
  for (const OffloadSpan& span : spans) {
    if (span.device_seconds < 0.0) continue;
    std::printf("  %-8s shard %zu: host %s, device %s\n", stage_name(span.stage), span.shard,
                ms(span.end - span.begin).c_str(), ms(span.device_seconds).c_str());
  }
}

TEST(OffloadTimeline, DeviceResidentRecordsNone) {
  OneStep run("offload_timeline_none", false, optim::Offload::kNone);
  EXPECT_TRUE(run.timeline.offload_spans.empty());
}

}  // namespace
}  // namespace farthing::train
