// model_source.h — where a run's architecture, first weights and tokenizer come from: a preset
// (random init) or a checkpoint users bring (HF safetensors dir, .gguf, llama2.c .bin); the
// tokenizer from model.tokenizer, else next to the weights (tokenizer.json in an HF dir, the
// GGUF's own metadata).
// Relies on: framework/ckpt/read_model.h, framework/data/tokenizer_loaders.h, models/.
// Tested by: tests/train/loop/, tests/cli/.
#pragma once

#include <memory>
#include <optional>

#include "framework/ckpt/model_file.h"
#include "framework/data/tokenizer.h"
#include "train/recipe/run_config.h"
#include "models/common/model_config.h"

namespace farthing::train {

struct ModelSource {
  models::ModelConfig config;
  std::optional<ckpt::ModelFile> file;          // weights to start from (none: random init)
  std::unique_ptr<data::Tokenizer> tokenizer;   // nullptr when none is known
};

// Reads config and weights (when model.path is set) and the tokenizer. Errors name the path.
ModelSource open_model_source(const recipe::ModelSection& model, bool need_tokenizer);

}  // namespace farthing::train
