// model_test_options.h — ModelOptions from the three fields the model tests vary (compute mode,
// checkpointing, logits rows per loss chunk), the rest at their defaults: brace-initialising the
// struct positionally would leave its later fields to chance as it grows (and GCC warns).
// Used by tests/models/test_model_{goldens,modes,adamw_steps}.cpp, test_gradcheck.cpp.
#pragma once

#include <cstdint>

#include "models/common/transformer.h"

namespace farthing::models::testing {

inline ModelOptions model_options(ComputeMode compute, Checkpointing checkpointing, int64_t loss_chunk_rows) {
  ModelOptions o;
  o.compute = compute;
  o.checkpointing = checkpointing;
  o.loss_chunk_rows = loss_chunk_rows;
  return o;
}

}  // namespace farthing::models::testing
