// memory_plan.h — bytes per parameter of an optimizer configuration, before allocating.
//
// Model state only: bf16 (or other) weights, gradients, fp32 master, moments. For 8-bit
// moments each state costs 1 byte plus one fp32 absmax per 256 elements. The measured
// counterpart is the memory tracker (framework/core/memory.h): tests/optim/test_optim_memory.cpp
// checks that the optimizer's buffers match this plan.
// Relies on: optim_config.h, core/dtype.h.
#pragma once

#include "framework/core/dtype.h"
#include "framework/optim/optim_config.h"

namespace farthing::optim {

struct BytesPerParam {
  double weights = 0.0;
  double grads = 0.0;
  double master = 0.0;
  double moments = 0.0;  // m and v together
  double total() const { return weights + grads + master + moments; }
};

BytesPerParam bytes_per_param(StateFormat state, MasterMode master, DType weight_dtype = DType::kBF16,
                              DType grad_dtype = DType::kBF16);

}  // namespace farthing::optim
