// gguf_model.h — a GGUF model file as a ModelFile: config from the metadata, tensors
// dequantized to fp32, shapes in PyTorch order (GGUF dims reversed).
//
// For architecture "llama" the tensors get their HF names (blk.N.attn_q.weight ->
// model.layers.N.self_attn.q_proj.weight, ...) and llama.cpp's q/k row permutation is undone
// (rope_permute.h: q with head_count heads, k with head_count_kv), so the result is laid out
// exactly as HF's LlamaForCausalLM. Other architectures keep their GGUF names, unpermuted.
// Relies on: gguf.h, rope_permute.h. Tested by: tests/ckpt/test_gguf.cpp, tests/ckpt/test_export_verb.cpp
// (the special token ids, padding included).
#pragma once

#include <filesystem>

#include "framework/ckpt/model_file.h"

namespace farthing::ckpt {

ModelFile read_gguf_model(const std::filesystem::path& path, bool lazy = false);  // lazy: as read_safetensors

}  // namespace farthing::ckpt
