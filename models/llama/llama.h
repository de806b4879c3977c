// llama.h — Llama-family models (Llama 2/3, SmolLM2, Qwen2, Qwen3, stories): presets per size with
// the published hyper-parameters (one builder per size, torchtune style) and the flat
// layout with Hugging Face names.
//
// Relies on: models/common. Tested by: tests/models/test_model_goldens.cpp, tests/models/test_flat_layout.cpp, test_model_goldens.cpp.
#pragma once

#include "models/common/model_config.h"
#include "models/common/transformer_spec.h"

namespace farthing::models {

ModelConfig llama_stories260k();  // llama2.c's tinyllamas stories260K
ModelConfig smollm2_135m();
ModelConfig smollm2_360m();
ModelConfig smollm2_1_7b();
ModelConfig llama3_2_1b();
ModelConfig llama3_2_3b();
ModelConfig llama3_1_8b();
ModelConfig llama3_1_70b();
ModelConfig qwen2_5_0_5b();
ModelConfig qwen2_5_1_5b();
ModelConfig qwen2_5_7b();
ModelConfig qwen3_0_6b();
ModelConfig qwen3_1_7b();
ModelConfig qwen3_4b();
ModelConfig qwen3_8b();
ModelConfig gemma3_1b();
ModelConfig gemma3_4b();

// Layout, in order: unit "embedding" (model.embed_tokens.weight); unit "block.i" per layer
// (input_layernorm, q/k/v_proj weights, their biases if any, o_proj, q_norm and k_norm if any,
// post_attention_layernorm,
// gate_proj, up_proj, down_proj); unit "head" (model.norm.weight, lm_head.weight if untied).
TransformerSpec llama_spec(const ModelConfig& config);

}  // namespace farthing::models
