// test_param_store_plan.cpp — ParamStore::planned_unit_bytes, the store's own statement of what a
// unit in use costs (framework/dist/param_store.h), against what the store really allocates: for
// every unit of a small model, at every ZeRO stage, fused or not, with bf16 or fp32-master gathers,
// kept gradients in bf16 or fp32, through both acquisitions and with or without a prefetch, the
// memory tracker's current and peak bytes around each call (prefetch_params, acquire_params /
// acquire_bf16_params, release_params, acquire_grads, grads_ready and the fused hook inside it)
// equal the planned figures to the byte, category by category and in total. Runs at np 1 (no
// mpirun), 2 and 3, where ranks own unequal parts of each unit and the collectives' temporaries
// appear. `farthing plan` composes these figures (tests/train/plan/test_memory_estimate.cpp checks the
// composition against whole training steps).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/core/memory.h"
#include "framework/dist/mpi_communicator.h"
#include "framework/dist/param_store.h"
#include "models/common/presets.h"

namespace farthing::dist {
namespace {

MpiCommunicator& world() {
  static std::unique_ptr<MpiCommunicator> comm = make_world_communicator();
  return *comm;
}

// The host tracker's bytes from the moment it was built: now, and at their peaks since.
class Watch {
 public:
  Watch() : tracker_(memory_tracker(Device::cpu())) {
    tracker_.reset_peaks();
    start_ = tracker_.snapshot();
  }
  // Also checks that nothing outside weights, grads and comm buffers is held.
  UnitBytes held() const {
    const MemorySnapshot now = tracker_.snapshot();
    const UnitBytes b = by_category(now.current_bytes);
    EXPECT_EQ(now.total_current_bytes - start_.total_current_bytes, b.total()) << "bytes held in another category";
    return b;
  }
  UnitBytes peak() const { return by_category(tracker_.snapshot().peak_bytes); }
  int64_t total_peak() const { return tracker_.snapshot().total_peak_bytes - start_.total_current_bytes; }

 private:
  UnitBytes by_category(const std::array<int64_t, kNumMemoryCategories>& bytes) const {
    auto delta = [&](MemoryCategory c) { return bytes[size_t(c)] - start_.current_bytes[size_t(c)]; };
    return {delta(MemoryCategory::kWeights), delta(MemoryCategory::kGrads), delta(MemoryCategory::kCommBuffers)};
  }
  MemoryTracker& tracker_;
  MemorySnapshot start_;
};

void expect_bytes(const UnitBytes& got, const UnitBytes& planned, const std::string& what) {
  EXPECT_EQ(got.weights, planned.weights) << what << ": weights";
  EXPECT_EQ(got.grads, planned.grads) << what << ": grads";
  EXPECT_EQ(got.comm, planned.comm) << what << ": comm buffers";
}

UnitBytes larger(const UnitBytes& a, const UnitBytes& b) {
  return {std::max(a.weights, b.weights), std::max(a.grads, b.grads), std::max(a.comm, b.comm)};
}

struct Case {
  int stage;
  bool fused;
  bool compute_from_master;
  int64_t grad_accum;
};

void check_case(const Case& k) {
  Communicator& comm = world();
  const models::TransformerSpec spec = models::make_spec(models::preset_config("stories260k"));
  std::vector<UnitRange> units;
  for (const models::ParamUnit& u : spec.layout.units()) units.push_back({u.begin_elems, u.end_elems});
  const ZeroLayout zero(units, comm.world_size(), comm.rank());
  ParamStoreOptions options;
  options.zero_stage = k.stage;
  options.grad_accum = k.grad_accum;
  options.optimizer_in_backward = k.fused;
  options.compute_from_master = k.compute_from_master;
  ParamStore store(zero, comm, backend_for(Device::cpu()), options);
  std::vector<std::vector<float>> master;
  for (const optim::ShardSpec& s : store.shards()) master.emplace_back(size_t(s.numel), 0.5f);
  store.set_master_source([&](size_t shard) { return master[shard].data(); });

  for (size_t u = 0; u < units.size(); ++u) {
    const ParamStoreUnitBytes plan = ParamStore::planned_unit_bytes(zero, options, u, UnitStorage::GradAdds::kSeveral);
    const std::string unit = spec.layout.units()[u].name;
    for (bool bf16 : {false, true}) {
      if (bf16 && k.compute_from_master) continue;  // the compute reads the fp32 master then
      const ParamStoreUnitBytes::Acquisition& planned = bf16 ? plan.bf16_params : plan.params;
      for (bool prefetch : {true, false}) {
        const std::string what = unit + (bf16 ? " acquire_bf16_params" : " acquire_params") +
                                 (prefetch ? " after prefetch_params" : "");
        const Watch watch;
        if (prefetch) {
          store.prefetch_params(int(u));
          expect_bytes(watch.held(), plan.gathering, what + ", gathering");
        }
        if (bf16) {
          store.acquire_bf16_params(int(u));
        } else {
          store.acquire_params(int(u));
        }
        expect_bytes(watch.peak(), planned.peak, what + ", at its peak");
        EXPECT_EQ(watch.total_peak(), planned.peak.total()) << what << ", at its peak in total";
        expect_bytes(watch.held(), planned.held, what + ", held");
        store.release_params(int(u));
        expect_bytes(watch.held(), UnitBytes{}, what + ", released");
      }
    }
    // Gradients, written once per element (in place where the store keeps fp32 sums alone) or not.
    for (UnitStorage::GradAdds adds : {UnitStorage::GradAdds::kSeveral, UnitStorage::GradAdds::kOnce}) {
    const ParamStoreUnitBytes plan = ParamStore::planned_unit_bytes(zero, options, u, adds);
    UnitBytes in_hook;
    int hook_calls = 0;
    const Watch watch;
    store.set_unit_grads_hook([&](int, int, const Tensor&) {
      ++hook_calls;
      in_hook = watch.held();
    });
    store.acquire_grads(int(u), adds);
    expect_bytes(watch.held(), UnitBytes{.grads = plan.accumulator}, unit + " acquire_grads");
    store.grads_ready(int(u));
    const UnitBytes peak = k.fused ? larger(plan.reducing, plan.stepping) : plan.reducing;
    expect_bytes(watch.peak(), peak, unit + " grads_ready, at its peak");
    const int64_t total_peak = k.fused ? std::max(plan.reducing.total(), plan.stepping.total()) : plan.reducing.total();
    EXPECT_EQ(watch.total_peak(), total_peak) << unit << " grads_ready, at its peak in total";
    expect_bytes(watch.held(), UnitBytes{}, unit + " grads_ready, done");
    EXPECT_EQ(hook_calls, k.fused ? 1 : 0) << unit;
    if (k.fused) expect_bytes(in_hook, plan.stepping, unit + " grads_ready, while the fused hook runs");
    }
  }
}

TEST(ParamStorePlan, UnitFiguresAreWhatTheStoreAllocates) {
  for (int stage : {1, 2, 3}) {
    for (bool fused : {false, true}) {
      for (bool from_master : {false, true}) {
        for (int64_t accum : {1, 2}) {
          if (fused && accum > 1) continue;  // the recipe rules out accumulating a fused step
          SCOPED_TRACE(::testing::Message() << "stage " << stage << (fused ? " fused" : "")
                                            << (from_master ? " compute from the master" : "") << " grad_accum "
                                            << accum << " np " << world().world_size());
          check_case({stage, fused, from_master, accum});
        }
      }
    }
  }
}

// The figures themselves, where they are easy to state: ZeRO-3 over several ranks gathers (send
// slot and receive buffer), the unit's fp32 parameters hold P_u, the accumulator P_u fp32.
TEST(ParamStorePlan, Zero3FiguresInClosedForm) {
  const ZeroLayout zero({{0, 1000}, {1024, 1024 + 5000}}, 2, 1);
  ParamStoreOptions options;
  options.zero_stage = 3;
  options.grad_accum = 2;
  const ParamStoreUnitBytes b = ParamStore::planned_unit_bytes(zero, options, 1, UnitStorage::GradAdds::kSeveral);
  const int64_t padded = zero.padded_elems(1), shard = zero.shard_elems(1);
  EXPECT_EQ(padded, 5120);
  EXPECT_EQ(b.gathering.comm, shard * 2 + padded * 2);
  EXPECT_EQ(b.params.peak.weights, padded * 4);
  EXPECT_EQ(b.params.held.weights, padded * 4);
  EXPECT_EQ(b.params.held.comm, 0);
  EXPECT_EQ(b.bf16_params.held.comm, padded * 2);
  EXPECT_EQ(b.accumulator, padded * 4);
  EXPECT_EQ(b.reducing.comm, shard * 4 + padded * 4);
  EXPECT_EQ(mpi_all_reduce_temp_bytes(5, 2, 8), 2 * 3 * 2 * 8);
  EXPECT_EQ(mpi_all_reduce_temp_bytes(5, 1, 8), 0);
}

}  // namespace
}  // namespace farthing::dist
