// timed_communicator.h — a Communicator that forwards every collective to another and records
// when this rank was inside it: the issue of each collective and every wait or test on its
// handle, as spans on the steady clock. What remains of a step outside those spans is the rank's
// own work; `farthing bench dist` and the scaling model (train/loop/step_timeline.h)
// split a step that way.
// NOTE: host time. On the CPU a collective's work happens inside those calls; a GPU communicator's
// happens on its stream, and the spans then show only what the host waited for.
// Relies on: framework/dist/communicator.h. Tested by: tests/train/plan/test_scaling_model.cpp.
#pragma once

#include <vector>

#include "framework/dist/communicator.h"

namespace farthing::dist {

// Seconds on the steady clock (any fixed origin): the one clock of spans and step timelines.
double steady_seconds();

struct TimeSpan {
  double begin = 0.0, end = 0.0;
};

class TimedCommunicator final : public Communicator {
 public:
  // Both must outlive this object; spans grows by one entry per call into the communicator.
  TimedCommunicator(Communicator& inner, std::vector<TimeSpan>& spans) : inner_(inner), spans_(spans) {}

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
  CommHandle timed(Issue&& issue);
  Communicator& inner_;
  std::vector<TimeSpan>& spans_;
};

}  // namespace farthing::dist
