// weights_from_file.h — a checkpoint users bring (ckpt::ModelFile: safetensors, GGUF, llama2.c)
// onto a model: its config, and its tensors copied into a flat buffer of the model's layout
// under their Hugging Face names, every shape checked.
// Relies on: framework/ckpt/model_file.h, model_config.h, flat_layout.h.
// Tested by: tests/models/test_stories260k_greedy.cpp, tests/train/loop/.
#pragma once

#include "framework/ckpt/model_file.h"
#include "models/common/flat_layout.h"
#include "models/common/model_config.h"

namespace farthing::models {

// The architecture the file describes (its config.json fields, GGUF metadata or llama2.c header).
ModelConfig model_config_from_file(const ckpt::ModelFile& file);

// flat_params[layout] <- every tensor of the layout from `file` (fp32). Throws naming the file,
// the tensor and both shapes on a mismatch, or the missing tensor. Alignment gaps are zeroed.
void copy_weights_from_file(const ckpt::ModelFile& file, const FlatLayout& layout, float* flat_params);
// Checks that the file holds every tensor of the layout with its shape (before anything is read).
void check_weights_in_file(const ckpt::ModelFile& file, const FlatLayout& layout);
// Global elements [begin, end) of the flat parameters (p[g - begin] is element g), from the
// tensors that lie in that range (a unit: whole tensors), read one tensor at a time.
void copy_weights_range_from_file(const ckpt::ModelFile& file, const FlatLayout& layout, int64_t begin, int64_t end,
                                  float* p);

}  // namespace farthing::models
