// train_checkpoint_model.h — the model inside a farthing training checkpoint (HDF5, written by
// train/loop/train_checkpoint), as the ModelFile every other reader returns, so that
// `farthing export`, `generate` and `eval` take training checkpoints like any model file.
//
// Weights: the bf16 working weights (model/<name>, widened exactly) — the model the run computed
// with and evaluated, so a bf16 export, `generate` and `eval` reproduce it bit for bit; or, when
// asked (an fp32/fp16 export), the fp32 master where the run kept one (optim/<range>/master: the
// same model before its rounding to bf16, stochastic or nearest). The config is the checkpoint's
// model_config (HF config.json). Checksums are verified first.
// Relies on: h5_checkpoint_reader.h, model_file.h. Tested by: tests/train/loop/test_train_export.sh.
#pragma once

#include <filesystem>

#include "framework/ckpt/model_file.h"

namespace farthing::ckpt {

// True when path looks like a training checkpoint (*.h5).
bool is_training_checkpoint(const std::filesystem::path& path);
enum class CheckpointWeights {
  kWorking,          // model/<name>: the bf16 weights
  kMasterWhereKept,  // optim/<range>/master over them, where the run kept an fp32 master
};
ModelFile read_training_checkpoint_model(const std::filesystem::path& path,
                                         CheckpointWeights weights = CheckpointWeights::kWorking);

}  // namespace farthing::ckpt
