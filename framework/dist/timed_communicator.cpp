#include "framework/dist/timed_communicator.h"

#include <chrono>
#include <memory>
#include <utility>

namespace farthing::dist {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {

// The inner handle, with its waits and tests recorded.
class TimedOp final : public CommHandle::Op {
 public:
  TimedOp(CommHandle inner, std::vector<TimeSpan>& spans) : inner_(std::move(inner)), spans_(spans) {}
  bool test() override {
    const double begin = steady_seconds();
    const bool done = inner_.test();
    spans_.push_back({begin, steady_seconds()});
    return done;
  }
  void wait() override {
    const double begin = steady_seconds();
    inner_.wait();
    spans_.push_back({begin, steady_seconds()});
  }
  void wait_on_device() override {
    const double begin = steady_seconds();
    inner_.wait_on_device();
    spans_.push_back({begin, steady_seconds()});
  }

 private:
  CommHandle inner_;
  std::vector<TimeSpan>& spans_;
};

}  // namespace

template <class Issue>
CommHandle TimedCommunicator::timed(Issue&& issue) {
  const double begin = steady_seconds();
  CommHandle inner = issue();
  spans_.push_back({begin, steady_seconds()});
  return CommHandle(std::make_shared<TimedOp>(std::move(inner), spans_));
}

CommHandle TimedCommunicator::all_gather_async(const Tensor& out, const Tensor& in) {
  return timed([&] { return inner_.all_gather_async(out, in); });
}
CommHandle TimedCommunicator::reduce_scatter_async(const Tensor& out, const Tensor& in, ReduceOp op) {
  return timed([&] { return inner_.reduce_scatter_async(out, in, op); });
}
CommHandle TimedCommunicator::all_reduce_async(const Tensor& inout, ReduceOp op) {
  return timed([&] { return inner_.all_reduce_async(inout, op); });
}
CommHandle TimedCommunicator::broadcast_async(const Tensor& inout, int root) {
  return timed([&] { return inner_.broadcast_async(inout, root); });
}
CommHandle TimedCommunicator::barrier_async() {
  return timed([&] { return inner_.barrier_async(); });
}

}  // namespace farthing::dist
