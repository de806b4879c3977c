// gpt2.h — GPT-2 (LayerNorm, GELU-tanh, learned positions, tied head): presets per size
// with the published hyper-parameters and the flat layout with Hugging Face names.
//
// Relies on: models/common. Tested by: tests/models/test_model_goldens.cpp, tests/models/test_flat_layout.cpp, test_model_goldens.cpp.
#pragma once

#include "models/common/model_config.h"
#include "models/common/transformer_spec.h"

namespace farthing::models {

ModelConfig gpt2_124m();
ModelConfig gpt2_355m();
ModelConfig gpt2_774m();
ModelConfig gpt2_1_5b();

// Layout, in order: unit "embedding" (transformer.wte.weight, transformer.wpe.weight); unit
// "block.i" (ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj; weight then bias);
// unit "head" (transformer.ln_f). Conv1D weights keep Hugging Face's (in, out) shape.
TransformerSpec gpt2_spec(const ModelConfig& config);

}  // namespace farthing::models
