// staged_communicator.cpp — see staged_communicator.h.
#include "framework/dist/staged_communicator.h"

#include <utility>

#include "framework/backend/buffer.h"
#include "framework/core/error.h"
#include "framework/core/memory.h"

namespace farthing {

namespace {

// A host collective followed, on the waiting thread, by the copy of its result to the device.
class StagedOp final : public CommHandle::Op {
 public:
  StagedOp(CommHandle host_op, Backend& backend, Tensor to, Buffer from)
      : host_op_(std::move(host_op)), backend_(backend), to_(std::move(to)), from_(std::move(from)) {}
  bool test() override { return host_op_.test(); }
  void wait() override {
    host_op_.wait();
    if (copied_) return;
    copied_ = true;
    if (to_.numel() > 0) backend_.copy(to_, from_.view(to_.dtype(), Shape{to_.numel()}));
    from_ = Buffer();
  }

 private:
  CommHandle host_op_;
  Backend& backend_;
  Tensor to_;
  Buffer from_;
  bool copied_ = false;
};

}  // namespace

StagedCommunicator::StagedCommunicator(Communicator& host, Backend& backend) : host_(host), backend_(backend) {
  FARTHING_CHECK(host.device().is_cpu(), "StagedCommunicator: the carrying communicator must move host buffers, not ",
                 host.device().name(), " ones");
}

Buffer StagedCommunicator::stage(const Tensor& t, bool fill) {
  Buffer b(Device::cpu(), std::max<size_t>(t.nbytes(), 1), MemoryCategory::kCommBuffers);
  if (fill && t.numel() > 0) backend_.copy(b.view(t.dtype(), Shape{t.numel()}), t);
  return b;
}

CommHandle StagedCommunicator::finish_into(CommHandle host_op, const Tensor& to, Buffer from) {
  return CommHandle(std::make_shared<StagedOp>(std::move(host_op), backend_, to, std::move(from)));
}

CommHandle StagedCommunicator::all_gather_async(const Tensor& out, const Tensor& in) {
  check_all_gather_args(*this, out, in);
  Buffer out_host = stage(out, false);
  const Tensor out_view = out_host.view(out.dtype(), Shape{out.numel()});
  // This rank's slot of the host output holds its input: the host gather runs in place.
  const Tensor slot(static_cast<char*>(out_host.data()) + size_t(rank()) * in.nbytes(), in.dtype(), Shape{in.numel()});
  if (in.numel() > 0) backend_.copy(slot, in);
  CommHandle op = host_.all_gather_async(out_view, slot);
  return finish_into(std::move(op), out, std::move(out_host));
}

CommHandle StagedCommunicator::reduce_scatter_async(const Tensor& out, const Tensor& in, ReduceOp op) {
  check_reduce_scatter_args(*this, out, in, op);
  Buffer in_host = stage(in, true), out_host = stage(out, false);
  CommHandle host_op = host_.reduce_scatter_async(out_host.view(out.dtype(), Shape{out.numel()}),
                                                  in_host.view(in.dtype(), Shape{in.numel()}), op);
  // The input staging must outlive the host collective: the handle holds it until the wait.
  struct Holder final : CommHandle::Op {
    CommHandle inner;
    Buffer keep;
    bool test() override { return inner.test(); }
    void wait() override {
      inner.wait();
      keep = Buffer();
    }
  };
  auto holder = std::make_shared<Holder>();
  holder->inner = std::move(host_op);
  holder->keep = std::move(in_host);
  return finish_into(CommHandle(holder), out, std::move(out_host));
}

CommHandle StagedCommunicator::all_reduce_async(const Tensor& inout, ReduceOp op) {
  check_all_reduce_args(*this, inout, op);
  Buffer host = stage(inout, true);
  CommHandle host_op = host_.all_reduce_async(host.view(inout.dtype(), Shape{inout.numel()}), op);
  return finish_into(std::move(host_op), inout, std::move(host));
}

CommHandle StagedCommunicator::broadcast_async(const Tensor& inout, int root) {
  check_broadcast_args(*this, inout, root);
  Buffer host = stage(inout, rank() == root);
  CommHandle host_op = host_.broadcast_async(host.view(inout.dtype(), Shape{inout.numel()}), root);
  return finish_into(std::move(host_op), inout, std::move(host));
}

}  // namespace farthing
