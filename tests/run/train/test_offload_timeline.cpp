// test_offload_timeline.cpp — the step timeline of optimizer.offload: host on the strict device
// (step_timeline.h, optim/host_offload.h): one real Trainer step, and the order in which it copied
// each shard's gradients and weights out, stepped them on the host and copied the weights back.
//  - after backward (train.optimizer_in_backward false): per shard, in shard order, copy out ->
//    host step -> copy in, all inside the optimizer step; a slot's next copy out is issued only
//    after the copy in that read it (the ring of K = 2);
//  - fused into backward: each unit's triple inside the grads_ready call that handed the unit
//    over, in backward's unit order;
//  - a device-resident run records none.
// The fused step's order is printed: the "order of copies and host steps in one strict-device
// step" that issue 37 asks to see.
// Relies on: framework/run/train/trainer.h, tests/run/train/trainer_test_support.h.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <vector>

#include "framework/run/train/step_timeline.h"
#include "framework/run/train/trainer.h"
#include "tests/run/train/trainer_test_support.h"

namespace farthing::train {
namespace {

using optim::OffloadSpan;
using optim::OffloadStage;

recipe::RunConfig offload_config(const std::filesystem::path& dir, bool fused, optim::Offload offload) {
  recipe::RunConfig c = testing::tiny_token_run(dir, 2);
  c.train.device = recipe::TrainDevice::kStrict;
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
  OneStep(const char* name, bool fused, optim::Offload offload)
      : dir(name),
        trainer(offload_config(dir.path, fused, offload), testing::world(),
                TrainerOutput{.progress = false, .timeline = &timeline}) {
    trainer.train_step();
  }
};

const char* stage_name(OffloadStage s) {
  return s == OffloadStage::kCopyOut ? "copy out" : s == OffloadStage::kHostStep ? "host step" : "copy in";
}

// Every shard's three spans, in order, as consecutive triples: out, step, in.
void expect_triples(const std::vector<OffloadSpan>& spans, size_t shards) {
  ASSERT_EQ(spans.size(), 3 * shards);
  for (size_t i = 0; i < spans.size(); i += 3) {
    EXPECT_EQ(spans[i].stage, OffloadStage::kCopyOut) << "span " << i;
    EXPECT_EQ(spans[i + 1].stage, OffloadStage::kHostStep) << "span " << i + 1;
    EXPECT_EQ(spans[i + 2].stage, OffloadStage::kCopyIn) << "span " << i + 2;
    EXPECT_EQ(spans[i].shard, spans[i + 1].shard);
    EXPECT_EQ(spans[i].shard, spans[i + 2].shard);
    for (size_t k = i; k < i + 3; ++k) EXPECT_LE(spans[k].begin, spans[k].end) << "span " << k;
    EXPECT_LE(spans[i].end, spans[i + 1].begin) << "the host steps shard " << spans[i].shard << " before its copy out landed";
    EXPECT_LE(spans[i + 1].end, spans[i + 2].begin) << "shard " << spans[i].shard << "'s weights copied back before its step";
  }
}

TEST(OffloadTimeline, AfterBackwardEachShardOutStepInInShardOrder) {
  OneStep run("offload_timeline", false, optim::Offload::kHost);
  const StepTimeline& timeline = run.timeline;
  const size_t shards = run.trainer.zero_layout().owned_shards().size();
  ASSERT_GE(shards, 3u) << "the ring of 2 must wrap around";
  expect_triples(timeline.offload_spans, shards);
  const std::vector<OffloadSpan>& s = timeline.offload_spans;
  for (size_t i = 0; i < shards; ++i) {
    EXPECT_EQ(s[3 * i].shard, i);
    EXPECT_GE(s[3 * i].begin, timeline.optimizer_begin);
    EXPECT_LE(s[3 * i + 2].end, timeline.optimizer_end);
  }
  // Shard i + 2 reuses shard i's slot: its copy out was issued after shard i's copy in.
  for (size_t i = 0; i + 2 < shards; ++i) EXPECT_GE(s[3 * (i + 2)].begin, s[3 * i + 2].end) << "shard " << i + 2;
}

TEST(OffloadTimeline, FusedEachUnitInsideItsGradsReadyInBackwardOrder) {
  OneStep run("offload_timeline_fused", true, optim::Offload::kHost);
  const StepTimeline& timeline = run.timeline;
  const dist::ZeroLayout& zero = run.trainer.zero_layout();
  const std::vector<optim::ShardSpec> shards = zero.owned_shards();
  expect_triples(timeline.offload_spans, shards.size());
  std::map<size_t, int> unit_of_shard;
  for (size_t s = 0; s < shards.size(); ++s) {
    for (size_t u = 0; u < zero.units().size(); ++u) {
      if (int64_t(shards[s].global_offset) == zero.units()[u].begin) unit_of_shard[s] = int(u);
    }
  }
  ASSERT_EQ(unit_of_shard.size(), shards.size()) << "at world size 1 each unit is one shard";
  std::vector<int> handed_over;  // grads_ready's units, in call order
  size_t next = 0;
  const double t0 = timeline.begin;
  std::printf("one fused strict-device step, optimizer.offload host (ms from the step's start):\n");
  for (const StoreCall& call : timeline.calls) {
    if (call.kind != StoreCallKind::kGradsReady) continue;
    handed_over.push_back(call.unit);
    std::printf("  %8.3f grads_ready(unit %d)\n", 1e3 * (call.begin - t0), call.unit);
    ASSERT_LT(next + 2, timeline.offload_spans.size());
    for (size_t k = next; k < next + 3; ++k) {
      const OffloadSpan& span = timeline.offload_spans[k];
      EXPECT_EQ(unit_of_shard[span.shard], call.unit) << "span " << k << " is not the unit grads_ready handed over";
      EXPECT_GE(span.begin, call.begin);
      EXPECT_LE(span.end, call.end);
      std::printf("  %8.3f   %-9s shard %zu, %.3f ms\n", 1e3 * (span.begin - t0), stage_name(span.stage), span.shard,
                  1e3 * (span.end - span.begin));
    }
    next += 3;
  }
  EXPECT_EQ(next, timeline.offload_spans.size());
  ASSERT_EQ(handed_over.size(), shards.size());
  EXPECT_GT(handed_over.front(), handed_over.back()) << "backward hands the units over last to first";
}

TEST(OffloadTimeline, DeviceResidentRecordsNone) {
  OneStep run("offload_timeline_none", false, optim::Offload::kNone);
  EXPECT_TRUE(run.timeline.offload_spans.empty());
}

}  // namespace
}  // namespace farthing::train
