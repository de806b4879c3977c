#include "framework/dist/timed_communicator.h"

#include <bit>
#include <chrono>
#include <memory>
#include <utility>

#include "framework/backend/op_profiler.h"

namespace farthing::dist {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint64_t SpanRecorder::enter() { return std::bit_cast<uint64_t>(steady_seconds()); }
void SpanRecorder::leave(uint64_t entered, const char* /*call*/) {
  spans_.push_back({std::bit_cast<double>(entered), steady_seconds()});
}

uint64_t ProfilerCommObserver::enter() {
  OpProfiler* profiler = active_op_profiler();
  if (profiler == nullptr) return 0;
  const OpProfiler::Entry e = profiler->enter();
  return (uint64_t(e.outermost) << 32) | e.begin_mark;
}
void ProfilerCommObserver::leave(uint64_t entered, const char* call) {
  OpProfiler* profiler = active_op_profiler();
  if (profiler == nullptr) return;
  const OpProfiler::Entry e{.outermost = (entered >> 32) != 0, .begin_mark = uint32_t(entered)};
  profiler->leave(e, call, 0.0, /*communication=*/true);
}

namespace {

// One call's report: entered on construction, left on destruction (also when the call throws).
class ObservedCall {
 public:
  ObservedCall(CommCallObserver& observer, const char* call)
      : observer_(observer), call_(call), entered_(observer.enter()) {}
  ~ObservedCall() { observer_.leave(entered_, call_); }
  ObservedCall(const ObservedCall&) = delete;
  ObservedCall& operator=(const ObservedCall&) = delete;

 private:
  CommCallObserver& observer_;
  const char* call_;
  uint64_t entered_;
};

// The inner handle, with its waits and tests reported.
class TimedOp final : public CommHandle::Op {
 public:
  TimedOp(CommHandle inner, CommCallObserver& observer) : inner_(std::move(inner)), observer_(observer) {}
  bool test() override {
    const ObservedCall call(observer_, "test");
    return inner_.test();
  }
  void wait() override {
    const ObservedCall call(observer_, "wait");
    inner_.wait();
  }
  void wait_on_device() override {
    const ObservedCall call(observer_, "wait on device");
    inner_.wait_on_device();
  }

 private:
  CommHandle inner_;
  CommCallObserver& observer_;
};

}  // namespace

template <class Issue>
CommHandle TimedCommunicator::timed(const char* call, Issue&& issue) {
  CommHandle inner;
  {
    const ObservedCall observed(observer_, call);
    inner = issue();
  }
  return CommHandle(std::make_shared<TimedOp>(std::move(inner), observer_));
}

CommHandle TimedCommunicator::all_gather_async(const Tensor& out, const Tensor& in) {
  return timed("all_gather", [&] { return inner_.all_gather_async(out, in); });
}
CommHandle TimedCommunicator::reduce_scatter_async(const Tensor& out, const Tensor& in, ReduceOp op) {
  return timed("reduce_scatter", [&] { return inner_.reduce_scatter_async(out, in, op); });
}
CommHandle TimedCommunicator::all_reduce_async(const Tensor& inout, ReduceOp op) {
  return timed("all_reduce", [&] { return inner_.all_reduce_async(inout, op); });
}
CommHandle TimedCommunicator::broadcast_async(const Tensor& inout, int root) {
  return timed("broadcast", [&] { return inner_.broadcast_async(inout, root); });
}
CommHandle TimedCommunicator::barrier_async() {
  return timed("barrier", [&] { return inner_.barrier_async(); });
}

}  // namespace farthing::dist
