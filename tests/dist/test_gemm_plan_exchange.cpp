// test_gemm_plan_exchange.cpp — share_rank0_gemm_plan_book (framework/dist/gemm_plan_exchange.h):
// every rank leaves with rank 0's book, whatever each rank timed. Fake books: each rank names
// another device, its own keys and algorithm words that encode its rank, so any rank's choice
// surviving anywhere shows. Runs at np 1 (no mpirun), 2 and 3.
#include <gtest/gtest.h>

#include <string>

#include "framework/dist/gemm_plan_exchange.h"
#include "framework/dist/mpi_communicator.h"

namespace farthing {
namespace {

MpiCommunicator& world() {
  static std::unique_ptr<MpiCommunicator> comm = make_world_communicator();
  return *comm;
}

// What rank r timed: a key every rank planned (with its own choice), and one only it planned.
kernels::GemmPlanBook book_of_rank(int r) {
  kernels::GemmPlanBook book;
  book.device = "fake GPU " + std::to_string(r);
  book.library_version = 130100 + r;
  kernels::GemmAlgorithmBits bits{};
  for (size_t w = 0; w < bits.size(); ++w) bits[w] = (uint64_t(r + 1) << 32) | w;
  book.choices["dense bf16 m 64 n 128 k 256 lda 256 ldb 128 ldc 128 trans NN out bf16 align 256"] = bits;
  bits[7] ^= 0xffffffffffffffffull;
  book.choices["dense f32 m " + std::to_string(8 + r) + " n 8 k 8 lda 8 ldb 8 ldc 8 trans NT out f32 align 16"] = bits;
  return book;
}

TEST(GemmPlanExchange, EveryRankLeavesWithRank0sBook) {
  MpiCommunicator& comm = world();
  const kernels::GemmPlanBook shared = dist::share_rank0_gemm_plan_book(comm, book_of_rank(comm.rank()));
  EXPECT_EQ(shared, book_of_rank(0)) << "rank " << comm.rank();
  // Check the rule by one field too, so a failure says which part of another rank's book won.
  EXPECT_EQ(shared.device, "fake GPU 0");
  ASSERT_EQ(shared.choices.size(), 2u);
  EXPECT_EQ(shared.choices.begin()->second[0] >> 32, 1u);
}

TEST(GemmPlanExchange, AnEmptyBookIsSharedAsEmpty) {
  MpiCommunicator& comm = world();
  kernels::GemmPlanBook mine = comm.rank() == 0 ? kernels::GemmPlanBook{} : book_of_rank(comm.rank());
  const kernels::GemmPlanBook shared = dist::share_rank0_gemm_plan_book(comm, mine);
  EXPECT_TRUE(shared.choices.empty()) << "rank " << comm.rank();
  EXPECT_EQ(shared.device, "");
}

}  // namespace
}  // namespace farthing
