// test_scaling_model.cpp — the step-time model (train/plan/scaling_model.h), the timeline
// that measures its input (step_timeline.h, dist::TimedCommunicator) and the profile file between
// them (scaling_profile.h):
//  - ring volumes and times by hand; a link fitted back from times the formula made;
//  - a step's collectives where the trainer issues them: at world 1 none; every unit's gradient
//    reduced once per pass (all-reduce at stage 1, reduce-scatter at 2-3); at stage 3 the
//    embedding and the head gathered once per pass and every block twice; at stages 1-2 the
//    weights published once per step; the sent bytes equal to the ring volumes of exactly those;
//  - the two schedules: overlapped never slower than serial; equal when there is no compute to
//    hide behind; with long turns only what has no compute beside it stays exposed (each
//    pass's first gather, the last reduction, the publication, the small all-reduces);
//  - a scripted timeline split into its turns exactly, the time inside collectives taken out,
//    and a timeline that does not follow the schedule refused;
//  - the timed communicator forwards each collective and records its issue, tests and waits;
//  - a real Trainer's steps (world 1, or mpirun's): the turns, the optimizer and the rest add up
//    to the step; over several ranks the collectives' time is there and inside the step, and the
//    model's bytes are the store's own count of what it sent;
//  - the profile file written and read back unchanged; a malformed one refused naming the file.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "train/plan/scaling_model.h"
#include "train/plan/scaling_profile.h"
#include "train/loop/step_timeline.h"
#include "train/loop/trainer.h"
#include "models/common/presets.h"
#include "tests/train/loop/trainer_test_support.h"

namespace farthing::train {
namespace {

namespace fs = std::filesystem;
using testing::world;

TEST(Ring, VolumesAndTimesByHand) {
  EXPECT_EQ(ring_steps(Collective::kAllGather, 4), 3);
  EXPECT_EQ(ring_steps(Collective::kReduceScatter, 4), 3);
  EXPECT_EQ(ring_steps(Collective::kAllReduce, 4), 6);
  EXPECT_DOUBLE_EQ(ring_bytes_sent(Collective::kAllGather, 1000.0, 4), 750.0);
  EXPECT_DOUBLE_EQ(ring_bytes_sent(Collective::kAllReduce, 1000.0, 4), 1500.0);
  const LinkCost link{2e-6, 1e9, 0.0, 0};
  // 3 steps of 2 us, then 750 bytes at 1 GB/s.
  EXPECT_DOUBLE_EQ(collective_seconds(Collective::kReduceScatter, 1000.0, 4, link), 6e-6 + 750e-9);
  EXPECT_DOUBLE_EQ(collective_seconds(Collective::kAllReduce, 1000.0, 1, link), 0.0);
}

TEST(Ring, FitRecoversTheLink) {
  const LinkCost truth{7e-6, 3.5e9, 0.0, 0};
  for (Collective c : {Collective::kAllGather, Collective::kAllReduce}) {
    std::vector<std::pair<double, double>> samples;
    for (double mib : {1.0, 4.0, 16.0, 64.0}) {
      const double bytes = mib * 1048576.0;
      samples.push_back({bytes, collective_seconds(c, bytes, 3, truth)});
    }
    const LinkCost fit = fit_link(c, 3, samples);
    EXPECT_NEAR(fit.latency_s, truth.latency_s, 1e-12);
    EXPECT_NEAR(fit.bytes_per_s / truth.bytes_per_s, 1.0, 1e-9);
  }
  EXPECT_THROW(fit_link(Collective::kAllGather, 2, {{1.0, 2.0}, {2.0, 1.0}}), Error);  // time falls with size
}

TEST(Interconnect, PresetsAndRefusal) {
  for (const char* name : {"nvlink", "ib400", "ib200", "eth100"}) {
    const Interconnect link = interconnect_preset(name);
    EXPECT_EQ(link.name, name);
    EXPECT_GT(link.all_gather.bytes_per_s, 1e9);
    EXPECT_FALSE(link.source.empty());
  }
  try {
    interconnect_preset("infiniband");
    FAIL() << "an unknown interconnect was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nvlink, ib400, ib200, eth100"), std::string::npos) << e.what();
  }
}

// A rendezvous transport: a step's message above the eager limit pays its handshake's trips; at
// or below it, and on a link without a handshake, one latency a step.
TEST(Ring, HandshakeAboveTheEagerLimit) {
  const LinkCost plain{1e-3, 1e6, 0.0, 0};
  const LinkCost rendezvous{1e-3, 1e6, 1000.0, 2};
  // All-reduce over 2 ranks: 2 steps, each sending half the buffer.
  const double at_limit = 2000.0, above = 2002.0;
  EXPECT_DOUBLE_EQ(collective_seconds(Collective::kAllReduce, at_limit, 2, rendezvous), 2e-3 + 2000.0 / 1e6);
  EXPECT_DOUBLE_EQ(collective_seconds(Collective::kAllReduce, above, 2, rendezvous), 2 * 3e-3 + 2002.0 / 1e6);
  EXPECT_DOUBLE_EQ(collective_seconds(Collective::kAllReduce, above, 2, plain), 2e-3 + 2002.0 / 1e6);
  // The message is the buffer over N: 4000 bytes over 4 ranks is 1000 a step, eager.
  EXPECT_DOUBLE_EQ(collective_seconds(Collective::kReduceScatter, 4000.0, 4, rendezvous), 3e-3 + 3000.0 / 1e6);
  // The described link carries MPI over TCP: 64 KiB eager, headers included, so a 64 KiB
  // message (an all-gather of 128 KiB over 2 ranks) is above it; two more trips, as measured.
  const LinkCost described = interconnect_preset("link:200mbit:5ms").all_gather;
  EXPECT_EQ(described.handshake_trips, 2);
  EXPECT_DOUBLE_EQ(collective_seconds(Collective::kAllGather, 131072.0, 2, described), 3 * 5e-3 + 65536.0 / 25e6);
  EXPECT_DOUBLE_EQ(collective_seconds(Collective::kAllGather, 120000.0, 2, described), 5e-3 + 60000.0 / 25e6);
  EXPECT_EQ(interconnect_preset("eth100").all_gather.handshake_trips, 0);
}

// link:RATE:LATENCY: a link described by hand, e.g. a test link shaped with tc.
TEST(Interconnect, DescribedLink) {
  const Interconnect link = interconnect_preset("link:1gbit:1ms");
  EXPECT_DOUBLE_EQ(link.all_gather.bytes_per_s, 125e6);
  EXPECT_DOUBLE_EQ(link.all_reduce.latency_s, 1e-3);
  EXPECT_DOUBLE_EQ(interconnect_preset("link:250mbit:20us").reduce_scatter.bytes_per_s, 31.25e6);
  EXPECT_DOUBLE_EQ(interconnect_preset("link:250mbit:20us").reduce_scatter.latency_s, 20e-6);
  // 1 MB all-gather over 4 ranks, by recursive doubling: the next rank's 250 KB block, then the
  // two blocks held (500 KB) with the rank two away; both above the eager limit, so each step
  // waits its rendezvous' two more trips of 1 ms; 0.75 MB in all at 125 MB/s.
  EXPECT_NEAR(collective_seconds(Collective::kAllGather, 1e6, 4, link.all_gather), 2 * 3e-3 + 0.75e6 / 125e6, 1e-12);
  // 200 KB: 50 KB (eager: one trip), then 100 KB (above: three).
  EXPECT_NEAR(collective_seconds(Collective::kAllGather, 2e5, 4, link.all_gather), 1e-3 + 3e-3 + 0.15e6 / 125e6, 1e-12);
  for (const char* bad : {"link:1gbit", "link:1gb:1ms", "link:1gbit:1s", "link:-1gbit:1ms", "link:0gbit:1ms", "link:xgbit:1ms"}) {
    EXPECT_THROW(interconnect_preset(bad), Error) << bad;
  }
}

// The MPI communicator reduces with one all-to-all (every block at once), gathers by recursive
// doubling, and all-reduces with both; ranks of one node talk without the node's link.
TEST(Interconnect, DescribedLinkAlgorithmsAndNodes) {
  const Interconnect alone = interconnect_preset("link:200mbit:5ms");
  const Interconnect pairs = interconnect_preset("link:200mbit:5ms", 2);
  EXPECT_EQ(alone.reduce_scatter.algorithm, Algorithm::kAllToAll);
  EXPECT_EQ(alone.all_reduce.algorithm, Algorithm::kAllToAll);
  EXPECT_EQ(alone.all_gather.algorithm, Algorithm::kRecursiveDoubling);
  EXPECT_EQ(interconnect_preset("ib400").all_gather.algorithm, Algorithm::kRing);
  // 4 MB over 4 ranks: 1 MB blocks, above the eager limit (1 + 2 trips of 5 ms) at 25 MB/s.
  // One rank a node: each sends its 3 blocks through its own link in one step.
  EXPECT_NEAR(collective_seconds(Collective::kReduceScatter, 4e6, 4, alone.reduce_scatter), 15e-3 + 3e6 / 25e6, 1e-12);
  // Two a node: each node's 2 ranks send 2 blocks each to the other node through one link.
  EXPECT_NEAR(collective_seconds(Collective::kReduceScatter, 4e6, 4, pairs.reduce_scatter), 15e-3 + 4e6 / 25e6, 1e-12);
  // Recursive doubling, two a node: the first exchange stays on the node; in the second each
  // rank sends its 2 blocks to the other node, 4 through the link.
  EXPECT_NEAR(collective_seconds(Collective::kAllGather, 4e6, 4, pairs.all_gather), 15e-3 + 4e6 / 25e6, 1e-12);
  // One a node: 1 block, then 2, each rank through its own link.
  EXPECT_NEAR(collective_seconds(Collective::kAllGather, 4e6, 4, alone.all_gather), 2 * 15e-3 + 3e6 / 25e6, 1e-12);
  // All-reduce: the all-to-all, then the all-gather.
  EXPECT_NEAR(collective_seconds(Collective::kAllReduce, 4e6, 4, pairs.all_reduce),
              (15e-3 + 4e6 / 25e6) + (15e-3 + 4e6 / 25e6), 1e-12);
  // Six ranks, two a node (N not a power of two): Bruck's counts, 2·min(d, 6 - d) blocks at
  // d = 2 and 4, 8 in all, as many as the all-to-all's 2·4.
  const Interconnect six = interconnect_preset("link:200mbit:5ms", 2);
  EXPECT_NEAR(collective_seconds(Collective::kAllGather, 6e6, 6, six.all_gather), 2 * 15e-3 + 8e6 / 25e6, 1e-12);
  EXPECT_NEAR(collective_seconds(Collective::kReduceScatter, 6e6, 6, six.reduce_scatter), 15e-3 + 8e6 / 25e6, 1e-12);
  // Presets give each rank's own bandwidth: ranks per node do not apply.
  EXPECT_THROW(interconnect_preset("ib400", 2), Error);
  EXPECT_THROW(interconnect_preset("link:1gbit:1ms", 0), Error);
}

// stories260k's schedule and layout (embedding, 5 blocks, head), with round compute figures.
struct Stories {
  models::TransformerSpec spec = models::make_spec(models::preset_config("stories260k"));
  models::UnitSchedule schedule = models::Transformer::unit_schedule(spec);
  std::vector<dist::UnitRange> units = models::zero_units(spec.layout);

  dist::ZeroLayout zero(int world_size) const { return dist::ZeroLayout(units, world_size, 0); }
  StepCompute compute(double per_turn) const {
    StepCompute c;
    c.turn_seconds.assign(schedule.turns.size(), per_turn);
    c.passes = 2;
    c.optimizer_seconds = 0.5;
    c.optimizer_elems = zero(1).owned_elems();
    c.other_seconds = 0.25;
    return c;
  }
};

const Interconnect kLink{"test", "round figures", {1e-6, 1e9}, {2e-6, 0.5e9}, {3e-6, 0.25e9}};

TEST(PredictStep, WorldOneIsItsCompute) {
  const Stories s;
  for (int stage : {1, 2, 3}) {
    const StepPrediction p = predict_step(s.schedule, s.zero(1), ZeroSetup{.zero_stage = stage}, s.compute(0.01), kLink,
                                          Overlap::kNone);
    EXPECT_EQ(p.comm_seconds, 0.0);
    EXPECT_EQ(p.bytes_sent, 0.0);
    EXPECT_DOUBLE_EQ(p.step_seconds, 2 * 0.01 * double(s.schedule.turns.size()) + 0.5 + 0.25);
    EXPECT_DOUBLE_EQ(p.optimizer_seconds, 0.5);
  }
}

// The bytes and seconds a step's collectives take, counted from the layout as the header lists
// them (not through the model's timeline).
struct Expected {
  double bytes = 0.0, seconds = 0.0;
  void add(Collective c, double b, int n, const Interconnect& link) {
    bytes += ring_bytes_sent(c, b, n);
    seconds += collective_seconds(c, b, n, link.of(c));
  }
};

Expected expected_collectives(const Stories& s, int n, int stage, int64_t passes) {
  const dist::ZeroLayout z = s.zero(n);
  Expected e;
  const size_t U = z.units().size();
  for (int64_t pass = 0; pass < passes; ++pass) {
    for (size_t u = 0; u < U; ++u) {
      const double padded = double(z.padded_elems(u));
      if (stage == 1) e.add(Collective::kAllReduce, double(z.aligned_end(u) - z.units()[u].begin) * 4, n, kLink);
      else e.add(Collective::kReduceScatter, padded * 4, n, kLink);
      if (stage == 3) {
        const bool block = u != 0 && u + 1 != U;  // the embedding is first, the head last
        for (int g = 0; g < (block ? 2 : 1); ++g) e.add(Collective::kAllGather, padded * 2, n, kLink);
      }
    }
  }
  if (stage < 3) {
    for (size_t u = 0; u < U; ++u) e.add(Collective::kAllGather, double(z.padded_elems(u)) * 2, n, kLink);
  }
  for (int i = 0; i < 4; ++i) e.add(Collective::kAllReduce, 8.0, n, kLink);
  return e;
}

TEST(PredictStep, CollectivesWhereTheTrainerIssuesThem) {
  const Stories s;
  ASSERT_EQ(int64_t(s.units.size()), s.spec.config.n_layers + 2) << "embedding, blocks, head";
  for (int n : {2, 3, 8}) {
    for (int stage : {1, 2, 3}) {
      const Expected e = expected_collectives(s, n, stage, 2);
      const StepPrediction p = predict_step(s.schedule, s.zero(n), ZeroSetup{.zero_stage = stage}, s.compute(0.01),
                                            kLink, Overlap::kNone);
      EXPECT_NEAR(p.bytes_sent / e.bytes, 1.0, 1e-12) << "np " << n << " stage " << stage;
      EXPECT_NEAR(p.comm_seconds / e.seconds, 1.0, 1e-12) << "np " << n << " stage " << stage;
      // Serial: every collective on the step's path.
      EXPECT_NEAR(p.exposed_seconds / p.comm_seconds, 1.0, 1e-12);
      EXPECT_NEAR(p.optimizer_seconds, 0.5 * double(s.zero(n).owned_elems()) / double(s.zero(1).owned_elems()), 1e-15);
    }
  }
}

TEST(PredictStep, OverlapHidesWhatItCan) {
  const Stories s;
  const dist::ZeroLayout z = s.zero(4);
  for (int stage : {1, 2, 3}) {
    const ZeroSetup setup{.zero_stage = stage};
    for (double per_turn : {0.0, 1e-6, 1e-3, 10.0}) {
      const StepPrediction serial = predict_step(s.schedule, z, setup, s.compute(per_turn), kLink, Overlap::kNone);
      const StepPrediction overlapped = predict_step(s.schedule, z, setup, s.compute(per_turn), kLink, Overlap::kStreams);
      EXPECT_EQ(overlapped.comm_seconds, serial.comm_seconds);
      EXPECT_LE(overlapped.step_seconds, serial.step_seconds * (1 + 1e-12)) << "stage " << stage << " turn " << per_turn;
      if (per_turn == 0.0) {  // nothing to hide behind: the stream is the step
        EXPECT_NEAR(overlapped.step_seconds, serial.step_seconds, 1e-15);
      }
    }
    // Turns far longer than any transfer: what stays exposed is what has no compute beside it.
    // Each pass's last reduction (the embedding's gradients: backward_done waits for it before
    // the next pass adds to the sums); at stage 3 also each pass's first gather, the embedding's
    // (nothing before it to prefetch it). Then the publication and the small all-reduces.
    const StepPrediction p = predict_step(s.schedule, z, setup, s.compute(10.0), kLink, Overlap::kStreams);
    const size_t U = z.units().size();
    const double embedding_gather =
        stage == 3 ? collective_seconds(Collective::kAllGather, double(z.padded_elems(0)) * 2, 4, kLink.all_gather) : 0.0;
    const double embedding_reduce =
        stage == 1 ? collective_seconds(Collective::kAllReduce, double(z.aligned_end(0) - z.units()[0].begin) * 4, 4,
                                        kLink.all_reduce)
                   : collective_seconds(Collective::kReduceScatter, double(z.padded_elems(0)) * 4, 4, kLink.reduce_scatter);
    double publish = 0.0;
    for (size_t u = 0; stage < 3 && u < U; ++u) {
      publish += collective_seconds(Collective::kAllGather, double(z.padded_elems(u)) * 2, 4, kLink.all_gather);
    }
    const double small = 4 * collective_seconds(Collective::kAllReduce, 8.0, 4, kLink.all_reduce);
    const double reductions = 2 * embedding_reduce;
    EXPECT_NEAR(p.exposed_seconds, 2 * embedding_gather + reductions + publish + small, 1e-9) << "stage " << stage;
  }
}

// A timeline as the trainer records it for `schedule`: turn k computes for (k+1) ms in each of
// two passes, and the calls take 1 us each; collectives take 0.5 ms in every turn that hands
// its gradients over.
StepTimeline scripted(const models::UnitSchedule& schedule) {
  StepTimeline t;
  double now = 100.0;
  t.begin = now;
  auto call = [&](StoreCallKind kind, int unit) {
    t.calls.push_back({kind, unit, now, now + 1e-6});
    now += 1e-6;
  };
  for (int pass = 0; pass < 2; ++pass) {
    t.passes.push_back({.begin = now, .first_call = t.calls.size()});
    for (size_t k = 0; k < schedule.turns.size(); ++k) {
      const models::UnitTurn& turn = schedule.turns[k];
      if (turn.acquires) call(StoreCallKind::kAcquire, turn.unit);
      if (turn.prefetches >= 0) call(StoreCallKind::kPrefetch, turn.prefetches);
      now += 1e-3 * double(k + 1);
      if (turn.hands_over_grads) {
        t.comm_spans.push_back({now, now + 5e-4});
        t.calls.push_back({StoreCallKind::kGradsReady, turn.unit, now, now + 5e-4});
        now += 5e-4;
      }
      call(StoreCallKind::kRelease, turn.unit);
    }
    t.passes.back().end = now;
    t.passes.back().end_call = t.calls.size();
  }
  t.optimizer_begin = now;
  now += 0.02;
  t.optimizer_end = now;
  t.comm_spans.push_back({now, now + 0.003});  // the publication's all-gathers
  now += 0.003 + 0.001;
  t.end = now;
  return t;
}

TEST(MeasuredStep, SplitsAScriptedTimelineIntoTurns) {
  const Stories s;
  const StepTimeline t = scripted(s.schedule);
  const MeasuredStep m = measured_step(s.schedule, t, 12345);
  ASSERT_EQ(m.compute.turn_seconds.size(), s.schedule.turns.size());
  EXPECT_EQ(m.compute.passes, 2);
  int handing = 0;
  for (size_t k = 0; k < s.schedule.turns.size(); ++k) {
    handing += s.schedule.turns[k].hands_over_grads;
    // (k+1) ms of compute and the calls' microseconds; never the collectives' 0.5 ms.
    EXPECT_NEAR(m.compute.turn_seconds[k], 1e-3 * double(k + 1), 5e-6) << "turn " << k;
  }
  EXPECT_NEAR(m.compute.optimizer_seconds, 0.02, 1e-9);
  EXPECT_EQ(m.compute.optimizer_elems, 12345);
  EXPECT_NEAR(m.compute.other_seconds, 0.001, 1e-9);
  EXPECT_NEAR(m.comm_seconds, 2 * handing * 5e-4 + 0.003, 1e-9);
  EXPECT_NEAR(m.step_seconds, t.end - t.begin, 1e-12);

  StepTimeline wrong = t;
  std::swap(wrong.calls[0].unit, wrong.calls[3].unit);  // the embedding's acquire names another unit
  EXPECT_THROW(measured_step(s.schedule, wrong, 1), Error);
}

TEST(TimedCommunicator, RecordsTheIssueAndTheWaitAndForwards) {
  std::vector<dist::TimeSpan> spans;
  dist::TimedCommunicator timed(world(), spans);
  EXPECT_EQ(timed.world_size(), world().world_size());
  EXPECT_EQ(timed.rank(), world().rank());
  double x = 1.0 + world().rank();
  timed.all_reduce(Tensor(&x, DType::kF64, Shape{1}), ReduceOp::kSum);
  const int n = world().world_size();
  EXPECT_EQ(x, n * (n + 1) / 2.0);  // forwarded: the sum over ranks
  ASSERT_EQ(spans.size(), 2u);      // its issue, then the wait
  EXPECT_LE(spans[0].begin, spans[0].end);
  EXPECT_LE(spans[0].end, spans[1].begin);
  EXPECT_LE(spans[1].begin, spans[1].end);
  CommHandle pending = timed.barrier_async();
  pending.test();
  pending.wait();
  EXPECT_EQ(spans.size(), 5u);  // the barrier's issue, a test and a wait
}

TEST(MeasuredStep, RealTrainerStepsAddUp) {
  testing::TempDir dir("scaling_trainer");
  recipe::RunConfig c = testing::tiny_token_run(dir.path, 3);
  c.train.grad_accum = 2;
  for (int stage : {1, 2, 3}) {
    c.distributed.zero_stage = stage;
    StepTimeline timeline;
    Trainer trainer(c, world(), TrainerOutput{.progress = false, .timeline = &timeline});
    const models::UnitSchedule schedule = models::Transformer::unit_schedule(trainer.model().spec());
    const int64_t sent_before = trainer.bytes_communicated();
    trainer.train_step();
    const double sent = double(trainer.bytes_communicated() - sent_before);
    ASSERT_EQ(timeline.passes.size(), 2u);
    const MeasuredStep m = measured_step(schedule, timeline, trainer.zero_layout().owned_elems());
    // The model's collectives are the trainer's: its bytes are the store's own count, but for the
    // model's 4 small all-reduces and the store's padding of all-reduce blocks to N.
    const StepPrediction p = predict_step(schedule, trainer.zero_layout(), ZeroSetup{.zero_stage = stage}, m.compute,
                                          kLink, Overlap::kNone);
    const int n = world().world_size();
    EXPECT_NEAR(p.bytes_sent, sent, n == 1 ? 0.0 : 64.0 + 8.0 * n * double(trainer.zero_layout().units().size()))
        << "stage " << stage;
    if (n > 1) {
      EXPECT_GT(sent, 0.0);
    }
    const double turns = std::accumulate(m.compute.turn_seconds.begin(), m.compute.turn_seconds.end(), 0.0);
    for (double t : m.compute.turn_seconds) EXPECT_GE(t, 0.0);
    EXPECT_GT(m.compute.optimizer_seconds, 0.0);
    // Turns (compute) + collectives in the passes + optimizer + publication + the rest = the step.
    EXPECT_NEAR(2 * turns + m.comm_seconds + m.compute.optimizer_seconds + m.compute.other_seconds, m.step_seconds,
                1e-6 * m.step_seconds + 1e-9)
        << "stage " << stage;
    if (world().world_size() == 1) {
      EXPECT_EQ(m.comm_seconds, 0.0) << "world size 1 runs no ZeRO collective";
    } else {
      EXPECT_GT(m.comm_seconds, 0.0);
      EXPECT_GE(timeline.comm_spans.size(), size_t(2 * trainer.zero_layout().units().size()));
    }
  }
}

TEST(ScalingProfile, RoundTripsAndRefusesMalformedFiles) {
  testing::TempDir dir("scaling_profile");
  ScalingProfile p;
  p.preset = "gpt2-124m";
  p.seq = 256;
  p.batch = 1;
  p.threads = 2;
  p.world_size = 3;
  p.param_count = 124439808;
  p.links = {"measured", "here", {1e-6, 2e9}, {2e-6, 3e9}, {3e-6, 4e9}};
  for (int stage : {1, 2, 3}) {
    StepCompute c;
    c.turn_seconds = {0.25 * stage, 0.125, 1.0 / 3.0};
    c.passes = 1;
    c.optimizer_seconds = 0.1;
    c.optimizer_elems = 1000 + stage;
    c.other_seconds = 0.01;
    p.stages.push_back(stage);
    p.compute.push_back(c);
  }
  const fs::path path = dir.path / ("profile_" + std::to_string(world().rank()) + ".json");
  write_scaling_profile(path, p);
  const ScalingProfile q = read_scaling_profile(path);
  EXPECT_EQ(q.preset, p.preset);
  EXPECT_EQ(q.seq, 256);
  EXPECT_EQ(q.world_size, 3);
  EXPECT_EQ(q.param_count, 124439808);
  EXPECT_EQ(q.links.reduce_scatter.bytes_per_s, 3e9);
  EXPECT_EQ(q.links.all_reduce.latency_s, 3e-6);
  EXPECT_EQ(q.compute_at(2).turn_seconds, p.compute[1].turn_seconds);  // bit for bit through JSON
  EXPECT_EQ(q.compute_at(3).optimizer_elems, 1003);
  EXPECT_THROW(q.compute_at(4), Error);

  std::ofstream(path) << "{\"preset\": \"gpt2-124m\", \"seq\": 256}";
  try {
    read_scaling_profile(path);
    FAIL() << "a profile without links was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace farthing::train
