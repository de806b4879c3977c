// train_device.h — train.device resolved on this machine: the device a run's buffers live on,
// and the one `farthing plan --measure-ops` times the step's ops on, from one definition.
// Relies on: backend/backend.h (cuda_available, visible_cuda_devices), recipe/run_config.h.
// Tested by: tests/cli/test_plan_roofline_measure.sh (plan), tests/train/loop/test_train_strict_device.sh (the trainer).
#pragma once

#include "framework/core/device.h"
#include "train/recipe/run_config.h"

namespace farthing::train {

// strict: the strict test device; cpu, or auto without a visible GPU: the CPU; else the CUDA
// device of this node-local rank (ranks beyond the GPUs share them). cuda without a visible GPU
// fails in one line naming train.device.
Device resolve_train_device(recipe::TrainDevice choice, int local_rank = 0);

}  // namespace farthing::train
