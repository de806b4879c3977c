// rope.h — rotary position embedding tables, one definition for the training forward
// (Transformer) and the KV-cache decoder, so cached keys equal the training forward's bit for bit.
// Relies on: model_config.h. Tested by: tests/models/test_model_goldens.cpp (vs transformers),
// tests/models/test_kv_cache_decoder.cpp.
#pragma once

#include <cstdint>
#include <vector>

#include "models/common/model_config.h"

namespace farthing::models {

// cos/sin of position t times each inverse frequency, (positions, head_dim / 2) row-major.
// NOTE: inverse frequencies as Hugging Face computes them (with "llama3" or "linear" scaling when
// configured), in double, rounded to fp32; the angle is the fp32 product position * inv_freq.
// sliding: the tables of a sliding-window layer (Gemma 3: base rope_local_theta, no scaling;
// without a rope_local_theta, Qwen's: the global tables).
void rope_tables(const ModelConfig& config, int64_t positions, std::vector<float>& cos_out,
                 std::vector<float>& sin_out, bool sliding = false);

}  // namespace farthing::models
