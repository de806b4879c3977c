// llama2c.h — llama2.c's legacy .bin checkpoints (e.g. stories260K.bin) as a ModelFile.
//
// Header: 7 int32 {dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len};
// a negative vocab_size means the classifier is stored (untied). Then fp32 row-major [out, in]:
// token_embedding [V,D]; rms_att [L,D]; wq [L,D,D]; wk [L,KVD,D]; wv [L,KVD,D]; wo [L,D,D];
// rms_ffn [L,D]; w1 [L,H,D]; w2 [L,D,H]; w3 [L,H,D]; rms_final [D]; freq_cis_real and
// freq_cis_imag [seq_len, head_dim/2] (skipped); then wcls [V,D] when untied.
// Tensors get HF Llama names, and wq/wk rows are permuted from Meta's interleaved RoPE layout
// to HF's rotate-half layout (rope_permute.h). Config: HF config.json fields (rms_norm_eps 1e-5,
// rope_theta 10000, as llama2.c hard-codes).
// Relies on: mapped_file.h, model_file.h, rope_permute.h. Tested by: tests/ckpt/test_llama2c.cpp.
#pragma once

#include <filesystem>

#include "framework/ckpt/model_file.h"

namespace farthing::ckpt {

ModelFile read_llama2c(const std::filesystem::path& path, bool lazy = false);  // lazy: as read_safetensors

}  // namespace farthing::ckpt
