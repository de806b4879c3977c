// test_optim_partition.cpp — the same 1M-parameter problem stepped as 1 shard or 3 shards
// (multiples of 256, the last one ragged), with 1 or 2 OpenMP threads, gives bit-identical
// bf16 weights, masters (fp32 or 16-bit remainders) and optimizer state (8-bit codes and
// absmax included), for each master mode.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "framework/optim/adamw.h"
#include "tests/optim/optim_test_util.h"

namespace farthing::test {
namespace {

constexpr int64_t kN = 1000000;
constexpr int kSteps = 4;

// Groups in four state formats (8-bit, fp32, bf16, 4-bit, odd lengths included); a small range (fp32 state whatever its group says), padding
// between ranges, 8-bit ranges starting on block boundaries, a ragged end.
optim::OptimizerConfig partition_config(optim::MasterMode master) {
  optim::OptimizerConfig c;
  c.groups = {{"q8_decay", {1e-4, 0.9, 0.999, 1e-8, 0.01}, optim::StateFormat::kBlock8},
              {"f32_no_decay", {2e-4, 0.9, 0.99, 1e-8, 0.0}, optim::StateFormat::kF32},
              {"bf16", {1e-4, 0.85, 0.995, 1e-7, 0.05}, optim::StateFormat::kBf16},
              {"q4", {1e-4, 0.9, 0.999, 1e-8, 0.01}, optim::StateFormat::kBlock4}};
  c.ranges = {{"embed", 0, 300000, 0},          {"norm", 300000, 100, 1},
              {"attn", 300288, 400000, 2},      {"mlp", 700416, 149583, 0},
              {"mlp_q4", 850176, 149001, 3},
              {"small_q8", 999424, 500, 0}};    // < 4096 elements: fp32 state
  c.master_mode = master;
  c.weight_rounding = master == optim::MasterMode::kRemainder16 ? optim::WeightRounding::kNearest
                                                                : optim::WeightRounding::kStochastic;
  c.seed = 0x5EEDull;
  return c;
}

struct RunResult {
  std::vector<uint16_t> weights;
  std::vector<float> master, m, v;
  std::map<std::string, std::vector<std::byte>> state;  // per range and kind, concatenated over shards
};

RunResult run_problem(optim::MasterMode master, const std::vector<optim::ShardSpec>& shards, int threads) {
  omp_set_num_threads(threads);
  optim::AdamW opt(partition_config(master), shards);
  const std::vector<float> init = normal_values(11, kN, 0.02);
  std::vector<std::unique_ptr<ShardBuffers>> buffers;
  std::vector<ShardBuffers*> ptrs;
  for (size_t s = 0; s < shards.size(); ++s) {
    buffers.push_back(std::make_unique<ShardBuffers>(int64_t(shards[s].numel), DType::kBF16));
    ptrs.push_back(buffers.back().get());
    set_weights_rn(*buffers.back(), init.data() + shards[s].global_offset);
    if (master != optim::MasterMode::kNone) opt.init_master(s, buffers.back()->w());
  }
  optim::GradOptions clip;
  clip.max_grad_norm = 0.5;  // the folded clip factor takes part too
  for (int t = 1; t <= kSteps; ++t) {
    const std::vector<float> g = normal_values(100 + uint64_t(t), kN, 1e-3);
    for (size_t s = 0; s < shards.size(); ++s) {
      for (uint64_t i = 0; i < shards[s].numel; ++i) {
        ptrs[s]->g_bf16()[i] = numerics::f32_to_bf16_rne(g[shards[s].global_offset + i]);
      }
    }
    const optim::StepDiagnostics d = step_once(opt, ptrs, clip);
    EXPECT_LT(d.clip_factor, 1.0);
  }
  RunResult r;
  r.weights.resize(kN);
  r.master.resize(kN);
  r.m.resize(kN);
  r.v.resize(kN);
  for (size_t s = 0; s < shards.size(); ++s) {
    const uint64_t off = shards[s].global_offset, n = shards[s].numel;
    std::memcpy(r.weights.data() + off, ptrs[s]->w_bits(), n * 2);
    if (opt.master(s)) std::memcpy(r.master.data() + off, opt.master(s), n * 4);
    opt.moments_to_f32(s, r.m.data() + off, r.v.data() + off);
  }
  for (const optim::StateSpan& span : opt.state_spans()) {
    // "shardK/range@offset/kind" -> "range/kind"
    std::string key = span.name;
    if (key != "step") {
      key = key.substr(key.find('/') + 1);
      key = key.substr(0, key.find('@')) + key.substr(key.find('/', key.find('@')));
    }
    auto& dst = r.state[key];
    dst.insert(dst.end(), span.bytes.begin(), span.bytes.end());
  }
  omp_set_num_threads(2);
  return r;
}

void expect_identical(const RunResult& a, const RunResult& b, const char* what) {
  EXPECT_EQ(0, std::memcmp(a.weights.data(), b.weights.data(), kN * 2)) << what << ": weights";
  EXPECT_EQ(0, std::memcmp(a.master.data(), b.master.data(), kN * 4)) << what << ": masters";
  EXPECT_EQ(0, std::memcmp(a.m.data(), b.m.data(), kN * 4)) << what << ": m";
  EXPECT_EQ(0, std::memcmp(a.v.data(), b.v.data(), kN * 4)) << what << ": v";
  ASSERT_EQ(a.state.size(), b.state.size()) << what;
  for (const auto& [key, bytes] : a.state) {
    // absmax spans of a range split over shards concatenate to the unsplit one: the blocks are
    // global. (Alignment padding between segments is not part of any span.)
    EXPECT_TRUE(b.state.count(key) && bytes == b.state.at(key)) << what << ": state " << key;
  }
}

TEST(OptimPartition, ShardsAndThreadsGiveBitIdenticalResults) {
  const std::vector<optim::ShardSpec> one = {{0, uint64_t(kN)}};
  const std::vector<optim::ShardSpec> three = {{0, 333312}, {333312, 333312}, {666624, uint64_t(kN) - 666624}};
  for (optim::MasterMode master : {optim::MasterMode::kF32, optim::MasterMode::kRemainder16, optim::MasterMode::kNone}) {
    const char* name = master == optim::MasterMode::kF32           ? "fp32 master + SR cast"
                       : master == optim::MasterMode::kRemainder16 ? "16-bit remainders + RN"
                                                                   : "no master + SR";
    const RunResult base = run_problem(master, one, 1);
    expect_identical(base, run_problem(master, three, 1), name);
    expect_identical(base, run_problem(master, one, 2), name);
    expect_identical(base, run_problem(master, three, 2), name);
    // The steps did something: many weights moved from their initial values.
    const std::vector<float> init = normal_values(11, kN, 0.02);
    size_t changed = 0;
    for (int64_t i = 0; i < kN; ++i) changed += base.weights[size_t(i)] != numerics::f32_to_bf16_rne(init[size_t(i)]);
    std::printf("%s: %zu of %lld weights changed over %d steps\n", name, changed, (long long)kN, kSteps);
    EXPECT_GT(changed, size_t(kN / 10));
  }
}

}  // namespace
}  // namespace farthing::test
