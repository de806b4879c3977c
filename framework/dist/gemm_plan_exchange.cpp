// gemm_plan_exchange.cpp — see gemm_plan_exchange.h.
#include "framework/dist/gemm_plan_exchange.h"

#include <string>
#include <vector>

#include "framework/backend/gemm_plan_book_text.h"

namespace farthing::dist {

kernels::GemmPlanBook share_rank0_gemm_plan_book(Communicator& comm, const kernels::GemmPlanBook& mine) {
  if (comm.world_size() == 1) return mine;
  std::string text = comm.rank() == 0 ? gemm_plan_book_text(mine) : std::string();
  int64_t bytes = int64_t(text.size());
  comm.broadcast(Tensor(&bytes, DType::kI64, Shape{1}), 0);
  text.resize(size_t(bytes));
  comm.broadcast(Tensor(text.data(), DType::kU8, Shape{bytes}), 0);
  return parse_gemm_plan_book(text, "rank 0's GEMM plan book");
}

}  // namespace farthing::dist
