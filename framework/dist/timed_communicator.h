// timed_communicator.h — a Communicator that forwards every collective to another and reports
// when this rank was inside it: the issue of each collective and every wait or test on its
// handle. Two observers: spans on the steady clock (SpanRecorder: `farthing bench dist` and the
// scaling model, train/loop/step_timeline.h, take what remains of a step outside them as the
// rank's own work), and the step profile's op spans (framework/backend/op_profiler.h, as
// "communication").
// NOTE: host time. On the CPU a collective's work happens inside those calls; a GPU communicator's
// happens on its stream, and the spans then show only what the host waited for.
// Relies on: framework/dist/communicator.h. Tested by: tests/train/plan/test_scaling_model.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "framework/dist/communicator.h"

namespace farthing::dist {

// Seconds on the steady clock (any fixed origin): the one clock of spans and step timelines.
double steady_seconds();

struct TimeSpan {
  double begin = 0.0, end = 0.0;
};

// Told of each call into the inner communicator: enter() before it, leave() with enter's token
// after it (also when the call throws). `call` names it: "all_gather", "wait", ...
class CommCallObserver {
 public:
  virtual ~CommCallObserver() = default;
  virtual uint64_t enter() = 0;
  virtual void leave(uint64_t entered, const char* call) = 0;
};

// Each call as a span on the steady clock; spans grows by one entry per call.
class SpanRecorder final : public CommCallObserver {
 public:
  explicit SpanRecorder(std::vector<TimeSpan>& spans) : spans_(spans) {}
  uint64_t enter() override;
  void leave(uint64_t entered, const char* call) override;

 private:
  std::vector<TimeSpan>& spans_;
};

// Each call as an op span of the active step profiler (op_profiler.h), in the phase
// "communication"; nothing while none records.
class ProfilerCommObserver final : public CommCallObserver {
 public:
  uint64_t enter() override;
  void leave(uint64_t entered, const char* call) override;
};

class TimedCommunicator final : public Communicator {
 public:
  // Both must outlive this object.
  TimedCommunicator(Communicator& inner, CommCallObserver& observer) : inner_(inner), observer_(observer) {}
  // Spans on the steady clock (SpanRecorder); spans must outlive this object.
  TimedCommunicator(Communicator& inner, std::vector<TimeSpan>& spans)
      : inner_(inner), own_recorder_(std::make_unique<SpanRecorder>(spans)), observer_(*own_recorder_) {}

  const Topology& topology() const override { return inner_.topology(); }
  Device device() const override { return inner_.device(); }
  CommHandle all_gather_async(const Tensor& out, const Tensor& in) override;
  CommHandle reduce_scatter_async(const Tensor& out, const Tensor& in, ReduceOp op) override;
  CommHandle all_reduce_async(const Tensor& inout, ReduceOp op) override;
  CommHandle broadcast_async(const Tensor& inout, int root) override;
  CommHandle barrier_async() override;
  void set_collective_timeout(double seconds) override { inner_.set_collective_timeout(seconds); }
  void set_reduce_order(ReduceOrder order) override { inner_.set_reduce_order(order); }

 private:
  template <class Issue>
  CommHandle timed(const char* call, Issue&& issue);
  Communicator& inner_;
  std::unique_ptr<SpanRecorder> own_recorder_;
  CommCallObserver& observer_;
};

}  // namespace farthing::dist
