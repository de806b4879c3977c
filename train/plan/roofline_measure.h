// roofline_measure.h — `farthing plan RECIPE --roofline DEVICE --measure-ops`: every row's
// calls of the step on paper (train/plan/roofline.h) run on this machine's device, shape
// by shape, through the backend's NnOps (the ops the model calls), and timed; a row's measured
// time is the sum over its shapes of count x the best seconds per call.
//
// Each op runs alone on buffers of its own, so the figure is the op's own speed at the step's
// shapes: no launch gaps, host waits or cache effects of the real step between them (bench train
// measures the whole step). Not run: FP8 quantization and FP8 GEMMs (bench numerics and bench
// gemm measure those), and the optimizer step (bench optim).
// Relies on: framework/backend (Backend, NnOps, Buffer). Tested by: tests/train/plan/test_roofline_measure.cpp
// (a stub backend: each shape's calls and each row's sum), tests/cli/test_plan_roofline_measure.sh.
#pragma once

#include <functional>
#include <vector>

#include "framework/backend/backend.h"
#include "train/plan/roofline.h"

namespace farthing::train {

struct RooflineMeasureOptions {
  GemmDtype gemm = GemmDtype::kBF16;       // the recipe's compute: its GEMMs' operand type
  GemmDtype attention = GemmDtype::kBF16;  // AttentionShape::dtype (bf16 compute runs cuDNN's on CUDA)
  double min_seconds = 0.1;                // per shape: timed batches until this much time is spent
  std::function<double()> clock;           // seconds; empty: the host's steady clock (time_best.h)
};

// Seconds of each row of `step` (in its order) on `backend`'s device; negative for a row that is
// not run (see above).
std::vector<double> measure_roofline_rows(const train::RooflineStep& step, Backend& backend,
                                          const RooflineMeasureOptions& options);

}  // namespace farthing::train
