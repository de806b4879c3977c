// train_checkpoint_model.h — the model inside a farthing training checkpoint (HDF5, written by
// framework/train/train_checkpoint), as the ModelFile every other reader returns, so that
// `farthing export`, `generate` and `eval` take training checkpoints like any model file.
//
// Weights: the fp32 master when the run kept one (optim/<range>/master: exact, what the
// optimizer holds), else the bf16 working weights (model/<name>) widened exactly. The config is
// the checkpoint's model_config (HF config.json). Checksums are verified first.
// Relies on: h5_checkpoint_reader.h, model_file.h. Tested by: tests/train/test_train_export.sh.
#pragma once

#include <filesystem>

#include "framework/ckpt/model_file.h"

namespace farthing::ckpt {

// True when path looks like a training checkpoint (*.h5).
bool is_training_checkpoint(const std::filesystem::path& path);
ModelFile read_training_checkpoint_model(const std::filesystem::path& path);

}  // namespace farthing::ckpt
