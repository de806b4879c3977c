// model_options.h — what a recipe asks of the model (compute mode, activation checkpointing,
// loss chunking, FP8 linear layers) and of the parameter store it runs over: one mapping each,
// shared by the trainer and `farthing plan`, so the plan sizes the model the trainer builds.
// Relies on: recipe/run_config.h, backend/fp8_policy.h, models/common/transformer.h.
// Tested by: tests/train/plan/test_memory_estimate.cpp (the plan against real steps), tests/train/loop/test_train_fp8.sh.
#pragma once

#include "framework/backend/fp8_policy.h"
#include "framework/dist/param_store.h"
#include "framework/optim/host_offload.h"
#include "framework/optim/optim_config.h"
#include "train/recipe/run_config.h"
#include "models/common/transformer.h"

namespace farthing::train {

// The fp8 section as the model's FP8 layers take it (a copy: the recipe holds the same enums).
Fp8Recipe fp8_recipe_of(const recipe::RunConfig& config);
bool uses_fp8(const recipe::RunConfig& config);
// train.precision nvfp4 / mxfp4: its section of `config` (which must outlive the model); else nullptr.
const Fp4Recipe* fp4_recipe_of(const recipe::RunConfig& config);
// Refuses FP4 on a CUDA device (compute capability as Backend::cuda_compute_capability) with one
// line saying why, unless the recipe opts into emulation (train.fp4_gpu_emulation).
void check_fp4_device(const recipe::RunConfig& config, Device device, int compute_capability);
// train.precision's compute mode: fp8 computes in bf16 with FP8 linear layers on top.
models::ComputeMode compute_mode_of(recipe::Precision precision);

// fp8: the recipe the model's FP8 layers follow (must outlive the model; ignored unless
// train.precision is fp8); history: delayed scaling's state, or null.
models::ModelOptions model_options_of(const recipe::RunConfig& config, const Fp8Recipe* fp8,
                                      Fp8AmaxHistory* history);

// train.grad_dtype resolved: what one backward's kept gradient is stored as (auto: f32 under
// precision fp32, else bf16).
DType one_backward_grad_dtype_of(const recipe::TrainSection& train);

// The parameter store's options for this recipe, with the optimizer's master mode (the compute
// reads an fp32 master under precision fp32).
dist::ParamStoreOptions store_options_of(const recipe::RunConfig& config, optim::MasterMode master);

// optimizer.offload and its ring, the slots sized for the gradients the store hands the optimizer
// (its kept dtype over `world_size` ranks).
optim::OffloadOptions offload_options_of(const recipe::RunConfig& config, const dist::ParamStoreOptions& store,
                                         int world_size);

}  // namespace farthing::train
