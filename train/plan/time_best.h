// time_best.h — the one timing loop of the benchmark suites and `farthing plan --measure-ops`.
//
// Work is timed from the host around `wait` (a device synchronisation, or nothing on the CPU), in
// batches of calls that double until one takes 2 ms, so that launch and synchronisation overhead
// is a small fraction; the best batch's seconds per call is kept, once at least three batches and
// min_seconds have passed (at most 200 batches). One untimed call first: plans, lazy loading,
// first touch. `clock` (seconds) is the host's steady clock unless given: a test's stub backend
// passes its own, which advances by a known time per call.
// Relies on: nothing but the standard library. Tested by: tests/train/plan/test_roofline_measure.cpp
// (a stub's known times come back exactly), tests/cli/test_plan_roofline_measure.sh (every measured
// row positive), and the suites that print their timings.
#pragma once

#include <functional>

namespace farthing::train {

double time_best(const std::function<void()>& queue, const std::function<void()>& wait, double min_seconds,
                 const std::function<double()>& clock = {});

}  // namespace farthing::train
