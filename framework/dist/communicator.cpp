// communicator.cpp — CommHandle and the argument checks shared by every Communicator.
#include "framework/dist/communicator.h"

#include <cstdio>
#include <exception>

#include "framework/core/error.h"

namespace farthing {

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kMax: return "max";
  }
  return "?";
}

CommHandle& CommHandle::operator=(CommHandle&& other) noexcept {
  if (this != &other) {
    wait_noexcept();
    op_ = std::move(other.op_);
  }
  return *this;
}

CommHandle::~CommHandle() {
  if (op_ && std::uncaught_exceptions() > 0 && !op_->test()) {
    // An error is unwinding past a collective still in flight. A peer may never join it (it
    // waits for this rank elsewhere), so waiting could hang the job before the tool reports
    // the error and aborts it (abort_on_error.h); the op is left to its communicator, and must
    // not start later on buffers that this unwinding frees.
    op_->abandon();
    op_.reset();
    return;
  }
  wait_noexcept();
}

void CommHandle::wait() {
  if (!op_) return;
  std::shared_ptr<Op> op = std::move(op_);  // finished (or failed) after this, either way
  op->wait();
}

void CommHandle::wait_on_device() {
  if (!op_) return;
  std::shared_ptr<Op> op = std::move(op_);
  op->wait_on_device();
}

bool CommHandle::test() { return !op_ || op_->test(); }

void CommHandle::wait_noexcept() noexcept {
  try {
    wait();
  } catch (const std::exception& error) {
    // A destructor may not throw; the collective's buffers are safe to free now either way.
    std::fprintf(stderr, "farthing: a collective that was never waited for failed: %s\n",
                 error.what());
  }
}

std::string CollectiveName::text() const {
  if (elements < 0) return collective;
  return error_detail::concat(collective, " of ", elements, " ", dtype_name(dtype));
}

std::string collective_timeout_message(const CollectiveName& what, int64_t number, double seconds,
                                       const std::string& absent) {
  return error_detail::concat(what.text(), " (collective #", number, " of this communicator) has not finished after ", seconds,
                              " s: ", absent.empty() ? "another rank has died, hung or stopped issuing collectives" : absent,
                              " (raise or disable the limit with distributed.collective_timeout_s; 0 waits forever)");
}

namespace {

void check_contiguous_on(const Communicator& comm, const Tensor& t, const char* what,
                         const char* collective) {
  FARTHING_CHECK(t.is_contiguous(), collective, ": ", what, " must be contiguous, got ",
                 t.describe());
  FARTHING_CHECK(t.device() == comm.device(), collective, ": ", what, " is ", t.describe(),
                 " but this communicator moves ", comm.device().name(), " buffers");
  FARTHING_CHECK(t.numel() == 0 || t.data() != nullptr, collective, ": ", what,
                 " has no data pointer (", t.describe(), ")");
}

}  // namespace

void check_reducible(DType dtype, ReduceOp op, const char* collective) {
  const bool ok = dtype == DType::kF32 || dtype == DType::kF64 || dtype == DType::kI32 ||
                  dtype == DType::kI64 || dtype == DType::kU8;
  FARTHING_CHECK(ok, collective, " (", reduce_op_name(op), ") cannot reduce ", dtype_name(dtype),
                 ": reductions run on f32, f64, i32, i64 or u8 (gradients are reduced in fp32: "
                 "cast narrow floats to f32 first)");
  // NOTE: a u8 sum overflows with no agreed meaning (Open MPI 4.1's vectorised MPI_SUM
  // saturates at 255 where C wraps), so u8 takes max only; sum counts in i32 or i64.
  FARTHING_CHECK(dtype != DType::kU8 || op == ReduceOp::kMax, collective,
                 " (sum) cannot reduce u8: u8 sums overflow (MPI libraries saturate or wrap); "
                 "count in i32 or i64, or use max");
}

void check_all_gather_args(const Communicator& comm, const Tensor& out, const Tensor& in) {
  check_contiguous_on(comm, out, "out", "all_gather");
  check_contiguous_on(comm, in, "in", "all_gather");
  FARTHING_CHECK(out.dtype() == in.dtype(), "all_gather: out is ", out.describe(), " but in is ",
                 in.describe(), " (dtypes must match)");
  FARTHING_CHECK(out.numel() == in.numel() * comm.world_size(), "all_gather: out has ", out.numel(),
                 " elements but in (", in.numel(), ") * world_size (", comm.world_size(), ") = ",
                 in.numel() * comm.world_size());
}

void check_reduce_scatter_args(const Communicator& comm, const Tensor& out, const Tensor& in,
                               ReduceOp op) {
  check_contiguous_on(comm, out, "out", "reduce_scatter");
  check_contiguous_on(comm, in, "in", "reduce_scatter");
  FARTHING_CHECK(out.dtype() == in.dtype(), "reduce_scatter: out is ", out.describe(),
                 " but in is ", in.describe(), " (dtypes must match)");
  check_reducible(in.dtype(), op, "reduce_scatter");
  FARTHING_CHECK(in.numel() == out.numel() * comm.world_size(), "reduce_scatter: in has ",
                 in.numel(), " elements but out (", out.numel(), ") * world_size (",
                 comm.world_size(), ") = ", out.numel() * comm.world_size());
}

void check_all_reduce_args(const Communicator& comm, const Tensor& inout, ReduceOp op) {
  check_contiguous_on(comm, inout, "inout", "all_reduce");
  check_reducible(inout.dtype(), op, "all_reduce");
}

void check_broadcast_args(const Communicator& comm, const Tensor& inout, int root) {
  check_contiguous_on(comm, inout, "inout", "broadcast");
  FARTHING_CHECK(root >= 0 && root < comm.world_size(), "broadcast: root ", root,
                 " is not a rank of a world of size ", comm.world_size());
}

}  // namespace farthing
