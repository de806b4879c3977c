// test_collectives.cpp — every MpiCommunicator collective against a golden computed in full on
// every rank (Transformer Engine's habit: compute the whole expected result, check the slice
// this rank holds), for each dtype it accepts, sizes with awkward tails, async overlap, argument
// errors, and the topology against the launcher's environment.
// Runs as np=1 without mpirun (label unit) and under mpirun -np 2 / -np 3 (label mpi).
// Relies on: framework/dist (MpiCommunicator, launcher_env), tests/dist/mpi_test_main.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

#include "framework/dist/abort_on_error.h"
#include "framework/dist/launcher_env.h"
#include "framework/dist/mpi_check.h"
#include "framework/dist/mpi_communicator.h"
#include "tests/support/test_support.h"

namespace farthing {
namespace {

MpiCommunicator& world() {
  static std::unique_ptr<MpiCommunicator> comm = make_world_communicator();
  return *comm;
}

// Values of rank r's buffer: random bits for integer types; for floats, random signs and
// exponents spread over 2^-20 .. 2^20, so that the order of a sum changes its rounding.
template <class T>
std::vector<T> make_values(int rank, int64_t n, uint64_t salt) {
  test::SplitMix64 rng(0x5EED0000ull + salt * 1000003ull + uint64_t(rank) * 7919ull);
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& x : v) {
    const uint64_t bits = rng.next();
    if constexpr (std::is_floating_point_v<T>) {
      const double mantissa = double(bits >> 11) * 0x1p-53;
      x = T(((bits & 1) ? -1.0 : 1.0) * std::ldexp(1.0 + mantissa, int(bits % 41) - 20));
    } else {
      std::memcpy(&x, &bits, sizeof x);
    }
  }
  return v;
}

// The reduction the communicator promises, written plainly: ranks 0..N-1 in order.
template <class T>
T golden_reduce(const std::vector<std::vector<T>>& per_rank, size_t i, ReduceOp op) {
  T acc = per_rank[0][i];
  for (size_t r = 1; r < per_rank.size(); ++r) {
    const T x = per_rank[r][i];
    if (op == ReduceOp::kSum) {
      if constexpr (std::is_integral_v<T>) {  // integer sums wrap like MPI's (two's complement)
        using U = std::make_unsigned_t<T>;
        acc = T(U(U(acc) + U(x)));
      } else {
        acc = acc + x;
      }
    } else if constexpr (std::is_floating_point_v<T>) {
      acc = std::isnan(acc) ? acc : (std::isnan(x) ? x : (x > acc ? x : acc));
    } else {
      acc = x > acc ? x : acc;
    }
  }
  return acc;
}

template <class T>
std::vector<std::vector<T>> values_of_all_ranks(int world_size, int64_t n, uint64_t salt) {
  std::vector<std::vector<T>> all;
  for (int r = 0; r < world_size; ++r) all.push_back(make_values<T>(r, n, salt));
  return all;
}

template <class T>
Tensor view(std::vector<T>& v) {
  return Tensor(v.data(), dtype_of<T>(), Shape{int64_t(v.size())});
}

template <class T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

const int64_t kSizes[] = {0, 1, 5, 255, 1000, 4099};

template <class T>
void check_all_gather(uint64_t salt) {
  Communicator& comm = world();
  const int w = comm.world_size();
  for (int64_t n : kSizes) {
    auto all = values_of_all_ranks<T>(w, n, salt + uint64_t(n));
    std::vector<T> in = all[size_t(comm.rank())];
    std::vector<T> out(size_t(n * w));
    comm.all_gather(view(out), view(in));
    int64_t bad = 0;
    for (int r = 0; r < w; ++r) {
      for (int64_t i = 0; i < n; ++i) bad += !same_bits(out[size_t(r * n + i)], all[size_t(r)][size_t(i)]);
    }
    EXPECT_EQ(bad, 0) << dtype_name(dtype_of<T>()) << " n=" << n;
  }
}

TEST(Collectives, AllGatherEveryDtype) {
  check_all_gather<float>(1);
  check_all_gather<Bf16Bits>(2);
  check_all_gather<uint8_t>(3);
  check_all_gather<int32_t>(4);
  check_all_gather<int64_t>(5);
  check_all_gather<double>(6);
  check_all_gather<E4M3Bits>(7);
}

TEST(Collectives, AllGatherInPlace) {
  Communicator& comm = world();
  const int w = comm.world_size();
  const int64_t n = 37;
  auto all = values_of_all_ranks<float>(w, n, 11);
  std::vector<float> out(size_t(n * w), -1.0f);
  std::copy(all[size_t(comm.rank())].begin(), all[size_t(comm.rank())].end(),
            out.begin() + comm.rank() * n);
  Tensor whole = view(out);
  comm.all_gather(whole, whole.flat_slice(comm.rank() * n, n));
  int64_t bad = 0;
  for (int r = 0; r < w; ++r)
    for (int64_t i = 0; i < n; ++i) bad += out[size_t(r * n + i)] != all[size_t(r)][size_t(i)];
  EXPECT_EQ(bad, 0);
}

template <class T>
void check_reduce_scatter(ReduceOp op, uint64_t salt) {
  Communicator& comm = world();
  const int w = comm.world_size();
  for (int64_t n : kSizes) {
    auto all = values_of_all_ranks<T>(w, n * w, salt + uint64_t(n));
    std::vector<T> in = all[size_t(comm.rank())];
    std::vector<T> out(static_cast<size_t>(n));
    comm.reduce_scatter(view(out), view(in), op);
    // Count mismatches rather than stopping at the first: every rank must go on issuing the
    // same collectives, or a failure on one rank becomes a hang on the others.
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; ++i) {
      if (!same_bits(out[size_t(i)], golden_reduce(all, size_t(comm.rank() * n + i), op))) {
        if (bad++ == 0) first = i;
      }
    }
    EXPECT_EQ(bad, 0) << dtype_name(dtype_of<T>()) << " " << reduce_op_name(op) << " n=" << n
                      << ": first mismatch at element " << first;
  }
}

TEST(Collectives, ReduceScatterFloatSumIsRankOrderedBitwise) {
  check_reduce_scatter<float>(ReduceOp::kSum, 20);
  check_reduce_scatter<double>(ReduceOp::kSum, 21);
}

TEST(Collectives, ReduceScatterMaxAndIntegers) {
  check_reduce_scatter<float>(ReduceOp::kMax, 22);
  check_reduce_scatter<int32_t>(ReduceOp::kSum, 23);
  check_reduce_scatter<int64_t>(ReduceOp::kSum, 24);
  check_reduce_scatter<uint8_t>(ReduceOp::kMax, 25);
  check_reduce_scatter<int64_t>(ReduceOp::kMax, 26);
}

template <class T>
void check_all_reduce(ReduceOp op, uint64_t salt) {
  Communicator& comm = world();
  const int w = comm.world_size();
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(7), int64_t(1000), int64_t(100003)}) {
    auto all = values_of_all_ranks<T>(w, n, salt + uint64_t(n));
    std::vector<T> data = all[size_t(comm.rank())];
    comm.all_reduce(view(data), op);
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; ++i) {
      if (!same_bits(data[size_t(i)], golden_reduce(all, size_t(i), op))) {
        if (bad++ == 0) first = i;
      }
    }
    EXPECT_EQ(bad, 0) << dtype_name(dtype_of<T>()) << " " << reduce_op_name(op) << " n=" << n
                      << ": first mismatch at element " << first;
  }
}

TEST(Collectives, AllReduceFloatSumIsRankOrderedBitwise) {
  check_all_reduce<float>(ReduceOp::kSum, 30);
  check_all_reduce<double>(ReduceOp::kSum, 31);
}

TEST(Collectives, AllReduceFloatSumCloseToExactSum) {
  // The rank-ordered fp32 sum is within a few ulps of the sum in long double, whatever the
  // world size (a sanity bound on the bitwise test's golden, not the contract itself).
  Communicator& comm = world();
  const int w = comm.world_size();
  auto all = values_of_all_ranks<float>(w, 4096, 32);
  std::vector<float> data = all[size_t(comm.rank())];
  comm.all_reduce(view(data), ReduceOp::kSum);
  for (size_t i = 0; i < data.size(); ++i) {
    long double exact = 0, magnitude = 0;
    for (int r = 0; r < w; ++r) {
      exact += all[size_t(r)][i];
      magnitude += std::fabs(all[size_t(r)][i]);
    }
    EXPECT_LE(std::fabs(double(data[i] - exact)),
              double(magnitude) * w * std::numeric_limits<float>::epsilon())
        << "element " << i;
  }
}

// ReduceOrder::kNative: MPI's own sum, within the same bound of the exact sum; max stays the
// rank-ordered, NaN-propagating one; the order goes back to kOrdered and bitwise again.
TEST(Collectives, NativeSumsAreCloseAndOrderedSumsReturn) {
  MpiCommunicator& comm = world();
  const int w = comm.world_size();
  auto all = values_of_all_ranks<float>(w, 4096, 35);
  std::vector<float> data = all[size_t(comm.rank())];
  std::vector<float> scattered(size_t(4096 / w > 0 ? 4096 / w : 1));
  std::vector<float> whole = all[size_t(comm.rank())];
  whole.resize(scattered.size() * size_t(w));
  comm.set_reduce_order(ReduceOrder::kNative);
  comm.all_reduce(view(data), ReduceOp::kSum);
  comm.reduce_scatter(view(scattered), view(whole), ReduceOp::kSum);
  comm.set_reduce_order(ReduceOrder::kOrdered);
  auto bound = [&](size_t i, long double& exact) {
    long double magnitude = 0;
    exact = 0;
    for (int r = 0; r < w; ++r) {
      exact += all[size_t(r)][i];
      magnitude += std::fabs(all[size_t(r)][i]);
    }
    return double(magnitude) * w * std::numeric_limits<float>::epsilon();
  };
  for (size_t i = 0; i < data.size(); ++i) {
    long double exact = 0;
    const double b = bound(i, exact);
    ASSERT_LE(std::fabs(double(data[i] - exact)), b) << "all_reduce element " << i;
  }
  for (size_t i = 0; i < scattered.size(); ++i) {
    const size_t g = size_t(comm.rank()) * scattered.size() + i;
    long double exact = 0;
    const double b = bound(g, exact);
    ASSERT_LE(std::fabs(double(scattered[i] - exact)), b) << "reduce_scatter element " << g;
  }
  check_all_reduce<float>(ReduceOp::kSum, 36);  // ordered again: bitwise
  comm.set_reduce_order(ReduceOrder::kNative);
  check_all_reduce<float>(ReduceOp::kMax, 37);  // max is exact and ordered either way
  comm.set_reduce_order(ReduceOrder::kOrdered);
}

TEST(Collectives, AllReduceMaxAndIntegers) {
  check_all_reduce<float>(ReduceOp::kMax, 33);
  check_all_reduce<double>(ReduceOp::kMax, 34);
  check_all_reduce<int64_t>(ReduceOp::kSum, 35);
  check_all_reduce<int32_t>(ReduceOp::kMax, 36);
  check_all_reduce<uint8_t>(ReduceOp::kMax, 37);
  std::vector<uint8_t> codes(5);
  EXPECT_THROW(world().all_reduce(view(codes), ReduceOp::kSum), Error);  // overflow: refused
}

TEST(Collectives, MaxPropagatesNaNFromAnyRank) {
  Communicator& comm = world();
  const int w = comm.world_size();
  for (int nan_rank = 0; nan_rank < w; ++nan_rank) {
    std::vector<float> data = {float(comm.rank()), 1.0f, -2.0f};
    if (comm.rank() == nan_rank) data[1] = std::numeric_limits<float>::quiet_NaN();
    comm.all_reduce(view(data), ReduceOp::kMax);
    EXPECT_EQ(data[0], float(w - 1));
    EXPECT_TRUE(std::isnan(data[1])) << "NaN on rank " << nan_rank << " was dropped";
    EXPECT_EQ(data[2], -2.0f);
  }
}

TEST(Collectives, BroadcastFromEveryRoot) {
  Communicator& comm = world();
  for (int root = 0; root < comm.world_size(); ++root) {
    auto expected = make_values<Bf16Bits>(root, 1001, 40);
    std::vector<Bf16Bits> data = make_values<Bf16Bits>(comm.rank(), 1001, 40);
    comm.broadcast(view(data), root);
    size_t bad = 0;
    for (size_t i = 0; i < data.size(); ++i) bad += data[i].bits != expected[i].bits;
    EXPECT_EQ(bad, 0u) << "root " << root;
    auto expected_f64 = make_values<double>(root, 17, 41);
    std::vector<double> d = make_values<double>(comm.rank(), 17, 41);
    comm.broadcast(view(d), root);
    EXPECT_EQ(d, expected_f64);
  }
  comm.barrier();
}

TEST(Collectives, AsyncOpsProgressWhileTheCallerComputes) {
  Communicator& comm = world();
  const int w = comm.world_size();
  const int64_t n = 1 << 18;
  auto all = values_of_all_ranks<float>(w, n, 50);
  std::vector<float> reduced = all[size_t(comm.rank())];
  std::vector<int64_t> mine = {comm.rank() * 10 + 1, comm.rank() * 10 + 2};
  std::vector<int64_t> gathered(size_t(2 * w));
  CommHandle h_reduce = comm.all_reduce_async(view(reduced), ReduceOp::kSum);
  CommHandle h_gather = comm.all_gather_async(view(gathered), view(mine));
  CommHandle h_barrier = comm.barrier_async();
  // Compute that does not touch the buffers, as the next unit's forward would.
  double busy = 0;
  for (int i = 0; i < 2000000; ++i) busy += std::sqrt(double(i));
  EXPECT_GT(busy, 0.0);
  if (world().overlaps()) {
    // The caller never enters MPI here: only the communicator's worker can finish the ops.
    while (!h_barrier.test()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(h_reduce.test());
    EXPECT_TRUE(h_gather.test());
  }
  h_barrier.wait();
  h_gather.wait();  // waits in another order than issue order: fine
  h_reduce.wait();
  h_reduce.wait();  // idempotent
  for (int r = 0; r < w; ++r) {
    EXPECT_EQ(gathered[size_t(2 * r)], r * 10 + 1);
    EXPECT_EQ(gathered[size_t(2 * r + 1)], r * 10 + 2);
  }
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i += 997) {
    bad += !same_bits(reduced[size_t(i)], golden_reduce(all, size_t(i), ReduceOp::kSum));
  }
  EXPECT_EQ(bad, 0);
}

TEST(Collectives, HandleDestroyedWithoutWaitStillCompletes) {
  Communicator& comm = world();
  std::vector<int32_t> data = {comm.rank() + 1};
  { CommHandle dropped = comm.all_reduce_async(view(data), ReduceOp::kSum); }
  const int w = comm.world_size();
  EXPECT_EQ(data[0], w * (w + 1) / 2);
}

TEST(Collectives, WaitOnDeviceOfAHostCollectiveIsAWait) {
  // Host memory has no compute stream to order: the result must be in place on return, as after
  // wait() (the parameter store finishes its gathers and reductions this way on every device).
  Communicator& comm = world();
  const int w = comm.world_size();
  const int64_t n = 1 << 16;
  auto all = values_of_all_ranks<float>(w, n, 51);
  std::vector<float> reduced = all[size_t(comm.rank())];
  CommHandle handle = comm.all_reduce_async(view(reduced), ReduceOp::kSum);
  handle.wait_on_device();
  EXPECT_TRUE(handle.test());
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    bad += !same_bits(reduced[size_t(i)], golden_reduce(all, size_t(i), ReduceOp::kSum));
  }
  EXPECT_EQ(bad, 0);
  handle.wait();  // nothing left to wait for
}

TEST(Collectives, AnOpAbandonedWhileAnErrorUnwindsNeverStarts) {
  // Rank 0's worker is held in A until its peers join it; meanwhile rank 0 issues B and an error
  // unwinds past B's handle, which lets go of B without waiting. B must never run (its buffers
  // may be gone), so rank 0's next collective, C, pairs with its peers' C. Were B to run, it
  // would pair with the peers' C instead, and rank 0's C would wait for a partner: the bounded
  // wait below turns that into a failure rather than a hang.
  MpiCommunicator& comm = world();
  if (comm.world_size() < 2 || !comm.overlaps()) GTEST_SKIP() << "needs a peer and ops on the worker thread";
  comm.set_collective_timeout(10.0);
  std::vector<double> a = {1.0}, b = {1.0}, c = {double(comm.rank() + 1)};
  if (comm.rank() == 0) {
    CommHandle held = comm.all_reduce_async(view(a), ReduceOp::kSum);
    try {
      CommHandle abandoned = comm.all_reduce_async(view(b), ReduceOp::kSum);
      throw std::runtime_error("an error unwinds past the handle");
    } catch (const std::runtime_error&) {
    }
    held.wait();
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // rank 0 queues and drops B meanwhile
    comm.all_reduce(view(a), ReduceOp::kSum);
  }
  comm.all_reduce(view(c), ReduceOp::kSum);
  comm.set_collective_timeout(0.0);
  const int w = comm.world_size();
  EXPECT_EQ(a[0], double(w));
  EXPECT_EQ(c[0], double(w * (w + 1) / 2));
  EXPECT_EQ(b[0], 1.0) << "the abandoned all_reduce ran";
}

TEST(Collectives, BadArgumentsAreRefusedWithTheReason) {
  Communicator& comm = world();
  std::vector<Bf16Bits> narrow(4);
  try {
    comm.all_reduce(view(narrow), ReduceOp::kSum);
    FAIL() << "a bf16 reduction was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot reduce bf16"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cast"), std::string::npos) << e.what();
  }
  std::vector<float> in(3), out(3 * comm.world_size() + 1);
  EXPECT_THROW(comm.all_gather(view(out), view(in)), Error);
  std::vector<int32_t> ints(3 * comm.world_size());
  EXPECT_THROW(comm.reduce_scatter(view(in), view(ints), ReduceOp::kSum), Error);
  EXPECT_THROW(comm.broadcast(view(in), comm.world_size()), Error);
  Tensor on_gpu(in.data(), DType::kF32, Shape{3}, Device::cuda(0));
  EXPECT_THROW(comm.all_reduce(on_gpu, ReduceOp::kSum), Error);
}

TEST(Collectives, MpiCheckKeepsTheFailingExpression) {
  int value = 0;
  const int bad_root = world().world_size();  // invalid on every rank: each fails locally
  try {
    FARTHING_MPI_CHECK(MPI_Bcast(&value, 1, MPI_INT, bad_root, world().mpi_comm()));
    FAIL() << "an invalid root was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("MPI_Bcast(&value, 1, MPI_INT, bad_root"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("MPI error"), std::string::npos) << e.what();
  }
}

TEST(AbortOnError, OneProcessReturnsOneOnOneLine) {
  // At world size > 1 the helper ends the job and names the rank (tests/dist/test_fault.sh).
  if (world().world_size() > 1) GTEST_SKIP() << "aborts at world size > 1: see test_fault.sh";
  unsetenv("FARTHING_DEBUG");
  ::testing::internal::CaptureStderr();
  const int rc = run_main_or_abort([]() -> int { FARTHING_FAIL("boom ", 42); });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(err, "farthing: error: boom 42\n");  // no rank at world size 1, no source location
  // FARTHING_DEBUG=1 adds where it was raised.
  setenv("FARTHING_DEBUG", "1", 1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_main_or_abort([]() -> int { FARTHING_CHECK(1 + 1 == 3, "arithmetic ", "broke"); }), 1);
  const std::string debug = ::testing::internal::GetCapturedStderr();
  unsetenv("FARTHING_DEBUG");
  EXPECT_NE(debug.find("farthing: error: arithmetic broke\n  at "), std::string::npos) << debug;
  EXPECT_NE(debug.find("[check failed: 1 + 1 == 3]"), std::string::npos) << debug;
  EXPECT_EQ(run_main_or_abort([] { return 3; }), 3);
}

TEST(Topology, MatchesTheLauncher) {
  const Topology& t = world().topology();
  EXPECT_GE(t.rank, 0);
  EXPECT_LT(t.rank, t.world_size);
  EXPECT_EQ(t.node_count, 1);  // this test machine
  EXPECT_EQ(t.local_size, t.world_size);
  EXPECT_EQ(t.local_rank, t.rank);
  const LauncherEnv env = read_launcher_env();
  if (env.launcher == "openmpi") {
    EXPECT_EQ(env.rank, t.rank);
    EXPECT_EQ(env.world_size, t.world_size);
    EXPECT_EQ(env.local_rank, t.local_rank);
    EXPECT_EQ(env.local_size, t.local_size);
    EXPECT_EQ(env.node_count, t.node_count);
  } else {
    EXPECT_EQ(t.world_size, 1) << "no launcher in the environment but world size > 1";
  }
}

TEST(Topology, LauncherEnvironments) {
  auto fake = [](std::vector<std::pair<const char*, const char*>> vars) {
    return [vars](const char* name) -> const char* {
      for (auto& [k, v] : vars)
        if (std::strcmp(k, name) == 0) return v;
      return nullptr;
    };
  };
  LauncherEnv slurm = read_launcher_env(fake({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"},
                                              {"SLURM_LOCALID", "1"}, {"SLURM_NNODES", "2"},
                                              {"SLURM_NTASKS_PER_NODE", "4"}}));
  EXPECT_EQ(slurm.launcher, "slurm");
  EXPECT_EQ(slurm.rank, 5);
  EXPECT_EQ(slurm.world_size, 8);
  EXPECT_EQ(slurm.local_rank, 1);
  EXPECT_EQ(slurm.local_size, 4);
  EXPECT_EQ(slurm.node_count, 2);
  LauncherEnv uneven = read_launcher_env(fake({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "3"},
                                               {"SLURM_NTASKS_PER_NODE", "2(x1),1"}}));
  EXPECT_FALSE(uneven.local_size.has_value());
  LauncherEnv ompi = read_launcher_env(fake({{"OMPI_COMM_WORLD_SIZE", "4"},
                                             {"OMPI_COMM_WORLD_RANK", "3"},
                                             {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                             {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                             {"OMPI_MCA_orte_num_nodes", "2"}}));
  EXPECT_EQ(ompi.launcher, "openmpi");
  EXPECT_EQ(ompi.rank, 3);
  EXPECT_EQ(ompi.node_count, 2);
  LauncherEnv none = read_launcher_env(fake({}));
  EXPECT_EQ(none.launcher, "");
  EXPECT_FALSE(none.rank.has_value());
}

}  // namespace
}  // namespace farthing
