// gemm_plan_exchange.h — one GEMM plan book for every rank: rank 0's (train.gemm_algorithm:
// timed). Different cuBLASLt algorithms sum in different orders, so ranks that each kept their
// own fastest would compute different bits; with rank 0's choices on every rank, np = N still
// equals np = 1 of the same choices (docs/cuda_ops.md "GEMM plans").
// Relies on: communicator.h, framework/backend/gemm_plan_book_text.h (the book travels as its text).
// Tested by: tests/dist/test_gemm_plan_exchange.cpp (np 2 and 3, and np 1 without mpirun).
#pragma once

#include "framework/dist/communicator.h"
#include "kernels/numerics/gemm_plan_book.h"

namespace farthing::dist {

// Collective over comm (a host communicator: MPI): returns rank 0's `mine` on every rank.
kernels::GemmPlanBook share_rank0_gemm_plan_book(Communicator& comm, const kernels::GemmPlanBook& mine);

}  // namespace farthing::dist
