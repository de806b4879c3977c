// test_param_store.cpp — the model over dist::ParamStore computes exactly what the model over whole
// buffers computes, at every ZeRO stage, fp32 and bf16 compute, and the store sums gradients over
// ranks as its stage says. Runs at np 1 (no mpirun), 2 and 3: every rank takes the same batch, so
// the summed gradient is the single-process gradient added rank by rank ((g + g) + g)...
// Over two micro-batches the kept sums are the first one's sum plus the second's, as two whole
// gradients added: in place alone (a tied embedding's and the positions' rows set aside while
// the head's product lands), written into accumulators over ranks.
// The reference is a model with whole fp32 buffers holding the same bf16-exact weights; under
// bf16 compute it narrows its own GEMM copy, while the store's model reads the bf16 weights
// themselves: the bits must not differ.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/dist/mpi_communicator.h"
#include "framework/dist/param_store.h"
#include "kernels/numerics/bf16.h"
#include "models/common/presets.h"
#include "models/common/transformer.h"
#include "models/gpt2/gpt2.h"
#include "models/llama/llama.h"
#include "tests/support/test_support.h"

namespace farthing::dist {
namespace {

MpiCommunicator& world() {
  static std::unique_ptr<MpiCommunicator> comm = make_world_communicator();
  return *comm;
}

models::ModelConfig micro(models::ModelFamily family) {
  models::ModelConfig c = family == models::ModelFamily::kGpt2 ? models::gpt2_124m() : models::qwen2_5_0_5b();
  c.name = "micro";
  c.vocab_size = 200;
  c.dim = 48;
  c.hidden_dim = family == models::ModelFamily::kGpt2 ? 192 : 88;
  c.n_layers = 3;
  c.n_heads = 6;
  c.n_kv_heads = family == models::ModelFamily::kGpt2 ? 6 : 2;
  c.max_seq_len = 64;
  return c;
}

std::vector<UnitRange> unit_ranges(const models::FlatLayout& layout) {
  std::vector<UnitRange> units;
  for (const models::ParamUnit& u : layout.units()) units.push_back({u.begin_elems, u.end_elems});
  return units;
}

struct Case {
  models::ModelFamily family;
  models::ComputeMode compute;
  int stage;
  bool fused;
  int micro_batches = 1;
};

// Runs one forward + backward through the store and checks this rank's owned gradients (and the
// loss) against the whole-buffer model's, bit for bit.
void check_case(const Case& k) {
  Communicator& comm = world();
  const int W = comm.world_size();
  const models::ModelConfig config = micro(k.family);
  const models::TransformerSpec spec = models::make_spec(config);
  const int64_t B = 2, T = 24, n = spec.layout.total_elems();
  test::SplitMix64 rng(5);
  std::vector<std::vector<int32_t>> tokens(size_t(k.micro_batches)), targets(size_t(k.micro_batches));
  for (int a = 0; a < k.micro_batches; ++a) {
    for (int64_t i = 0; i < B * T; ++i) tokens[size_t(a)].push_back(int32_t(rng.next() % uint64_t(config.vocab_size)));
    for (int64_t i = 0; i < B * T; ++i) targets[size_t(a)].push_back(i % 5 == 2 ? -100 : int32_t(rng.next() % 200));
  }

  // bf16-exact first weights: what the store keeps, widened.
  std::vector<float> values(static_cast<size_t>(n));
  models::Transformer::init_weights(spec, values.data(), 9, 0.2f);
  for (float& v : values) v = numerics::bf16_to_f32(numerics::f32_to_bf16_rne(v));

  models::ModelOptions whole_options;
  whole_options.compute = k.compute;
  models::Transformer whole(spec, B, T, whole_options);
  std::memcpy(whole.params(), values.data(), size_t(n) * sizeof(float));
  // Per micro-batch, the sum over ranks of identical gradients, in rank order; then the
  // micro-batches' sums added in order.
  std::vector<float> expected;
  std::vector<models::Transformer::LossSum> expected_loss;
  for (int a = 0; a < k.micro_batches; ++a) {
    whole.zero_grads();
    expected_loss.push_back(whole.forward_backward_sum(tokens[size_t(a)].data(), targets[size_t(a)].data(), 0.01f));
    std::vector<float> sum(whole.grads(), whole.grads() + n);
    for (int r = 1; r < W; ++r) {
      for (int64_t i = 0; i < n; ++i) sum[size_t(i)] += whole.grads()[i];
    }
    if (a == 0) {
      expected = sum;
    } else {
      for (int64_t i = 0; i < n; ++i) expected[size_t(i)] += sum[size_t(i)];
    }
  }

  const ZeroLayout zero(unit_ranges(spec.layout), W, comm.rank());
  ParamStoreOptions options;
  options.zero_stage = k.stage;
  // Kept in fp32, the exact sums, to compare bitwise: over ranks with one micro-batch a step,
  // stage 1 keeps the gradients in place and all-reduces them there.
  options.grad_accum = W > 1 && k.micro_batches == 1 ? 1 : 2;
  options.optimizer_in_backward = k.fused;
  ParamStore store(zero, comm, backend_for(Device::cpu()), options);
  for (size_t u = 0; u < zero.units().size(); ++u) {
    const int64_t begin = zero.units()[u].begin;
    store.set_initial_weights(begin, zero.aligned_end(u) - begin, values.data() + begin);
  }
  std::vector<std::vector<float>> stepped(store.shards().size());
  int hook_calls = 0;
  store.set_unit_grads_hook([&](int, int shard, const Tensor& g) {
    ++hook_calls;
    if (shard < 0) return;
    ASSERT_EQ(g.dtype(), DType::kF32);
    const float* p = static_cast<const float*>(g.data());
    stepped[size_t(shard)].assign(p, p + g.numel());
  });
  models::ModelOptions stored_options;
  stored_options.compute = k.compute;
  stored_options.unit_storage = &store;
  models::Transformer stored(spec, B, T, stored_options);
  for (int a = 0; a < k.micro_batches; ++a) {
    store.begin_micro_batch(a);
    const auto loss = stored.forward_backward_sum(tokens[size_t(a)].data(), targets[size_t(a)].data(), 0.01f);
    EXPECT_EQ(loss.sum, expected_loss[size_t(a)].sum);
    EXPECT_EQ(loss.counted, expected_loss[size_t(a)].counted);
  }
  if (k.fused) {
    EXPECT_EQ(hook_calls, int(zero.units().size()));
  }

  for (size_t s = 0; s < store.shards().size(); ++s) {
    const optim::ShardSpec& shard = store.shards()[s];
    const float* got = k.fused ? stepped[s].data() : static_cast<const float*>(store.grads(s).data());
    ASSERT_NE(got, nullptr);
    int64_t differ = 0;
    for (uint64_t i = 0; i < shard.numel; ++i) {
      differ += std::memcmp(&got[i], &expected[size_t(shard.global_offset + i)], sizeof(float)) != 0;
    }
    EXPECT_EQ(differ, 0) << "shard " << s << " at " << shard.global_offset << " of " << shard.numel;
  }
}

TEST(ParamStore, ModelOverStoreEqualsWholeBuffersAtEveryStage) {
  for (auto family : {models::ModelFamily::kGpt2, models::ModelFamily::kLlama}) {
    for (auto compute : {models::ComputeMode::kF32, models::ComputeMode::kBF16}) {
      for (int stage : {1, 2, 3}) {
        for (bool fused : {false, true}) {
          SCOPED_TRACE(::testing::Message() << "family " << int(family) << " compute " << int(compute) << " stage "
                                            << stage << (fused ? " fused" : ""));
          check_case({family, compute, stage, fused});
        }
        SCOPED_TRACE(::testing::Message() << "family " << int(family) << " compute " << int(compute) << " stage "
                                          << stage << ", two micro-batches");
        check_case({family, compute, stage, false, 2});
      }
    }
  }
}

// One backward's gradient on one rank is kept in bf16 (round to nearest even); sums in fp32.
TEST(ParamStore, KeptGradientDtype) {
  ParamStoreOptions o;
  EXPECT_EQ(kept_gradient_dtype(o, 1), DType::kBF16);
  EXPECT_EQ(kept_gradient_dtype(o, 2), DType::kF32);
  o.grad_accum = 2;
  EXPECT_EQ(kept_gradient_dtype(o, 1), DType::kF32);
}

// train.grad_dtype fp32 (the default under precision fp32) keeps one backward's gradient in
// fp32; asking for bf16 never narrows a sum.
TEST(ParamStore, KeptGradientDtypeFollowsTheOneBackwardChoice) {
  ParamStoreOptions o;
  o.one_backward_grad_dtype = DType::kF32;
  EXPECT_EQ(kept_gradient_dtype(o, 1), DType::kF32);
  EXPECT_EQ(kept_gradient_dtype(o, 2), DType::kF32);
  o.one_backward_grad_dtype = DType::kBF16;
  o.grad_accum = 3;
  EXPECT_EQ(kept_gradient_dtype(o, 1), DType::kF32);
  o.one_backward_grad_dtype = DType::kF16;
  EXPECT_THROW(kept_gradient_dtype(o, 1), Error);
}

// Stages 1-2 hold the whole bf16 weights; after the owners change theirs, publish_weights gives
// every rank every owner's values. Stage 3 holds owned shards only.
TEST(ParamStore, PublishGathersTheOwnersWeights) {
  Communicator& comm = world();
  const std::vector<UnitRange> units = {{0, 1000}, {1024, 1024 + 3000}};
  for (int stage : {1, 2, 3}) {
    const ZeroLayout zero(units, comm.world_size(), comm.rank());
    ParamStoreOptions o;
    o.zero_stage = stage;
    ParamStore store(zero, comm, backend_for(Device::cpu()), o);
    for (size_t s = 0; s < store.shards().size(); ++s) {  // each owner writes global index g as its weight
      const optim::ShardSpec& shard = store.shards()[s];
      auto* w = static_cast<uint16_t*>(store.weights(s).data());
      for (uint64_t i = 0; i < shard.numel; ++i) w[i] = uint16_t((shard.global_offset + i) & 0x3fff);
    }
    store.publish_weights();
    if (stage == 3) {  // another rank's element is not here
      if (comm.world_size() > 1) {
        EXPECT_THROW(store.weight_at(zero.owned(1, (comm.rank() + 1) % comm.world_size()).begin), Error);
      }
      continue;
    }
    int64_t wrong = 0;
    for (size_t u = 0; u < units.size(); ++u) {
      for (int64_t g = units[u].begin; g < units[u].end; ++g) wrong += *store.weight_at(g) != uint16_t(g & 0x3fff);
    }
    EXPECT_EQ(wrong, 0) << "stage " << stage;
  }
}

}  // namespace
}  // namespace farthing::dist
