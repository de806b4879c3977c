// llama2c.cpp — see llama2c.h.
#include "framework/ckpt/llama2c.h"

#include <cstring>
#include <memory>
#include <vector>

#include "framework/ckpt/mapped_file.h"
#include "framework/ckpt/rope_permute.h"
#include "framework/core/checked_math.h"

namespace farthing::ckpt {

ModelFile read_llama2c(const std::filesystem::path& path, bool lazy) {
  const auto mapped = std::make_shared<MappedFile>(path);
  const MappedFile& file = *mapped;
  const std::string& name = file.name();
  ByteReader r(file.data(), file.size(), name);
  int32_t h[7];
  for (int32_t& v : h) v = r.read<int32_t>("the llama2.c header (7 int32)");
  const int64_t dim = h[0], hidden = h[1], layers = h[2], heads = h[3], kv_heads = h[4], seq_len = h[6];
  const bool tied = h[5] > 0;
  const int64_t vocab = tied ? h[5] : -int64_t(h[5]);
  FARTHING_CHECK(dim > 0 && hidden > 0 && layers > 0 && heads > 0 && kv_heads > 0 && vocab > 0 && seq_len > 0 &&
                     dim % heads == 0 && heads % kv_heads == 0 && (dim / heads) % 2 == 0,
                 name, " is not a llama2.c checkpoint: header {dim ", dim, ", hidden_dim ", hidden, ", n_layers ",
                 layers, ", n_heads ", heads, ", n_kv_heads ", kv_heads, ", vocab_size ", h[5], ", seq_len ",
                 seq_len, "} is not a valid model");
  const int64_t head_dim = dim / heads, kv_dim = head_dim * kv_heads;

  ModelFile model;
  model.source = name;
  model.format = "llama2c";
  model.config = {
      {"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"hidden_size", dim},
      {"intermediate_size", hidden}, {"num_hidden_layers", layers}, {"num_attention_heads", heads},
      {"num_key_value_heads", kv_heads}, {"vocab_size", vocab}, {"max_position_embeddings", seq_len},
      {"rms_norm_eps", 1e-5}, {"rope_theta", 10000.0}, {"tie_word_embeddings", tied},
      {"hidden_act", "silu"}, {"bos_token_id", 1}, {"eos_token_id", 2}, {"torch_dtype", "float32"}};

  // Copies `count` consecutive [rows, cols] matrices into HF-named tensors.
  auto take = [&](const char* what, int64_t count, int64_t rows, int64_t cols, auto&& hf_name, int64_t permute_heads) {
    // The header's int32 sizes multiply past 64 bits (layers × hidden × dim × 4 can): checked, and
    // bounded like shape_from_dims (2^48 elements), before any is trusted against the file.
    const int64_t elems = checked_product({rows, cols == 0 ? 1 : cols}, int64_t(1) << 48, name, ": tensor ", what);
    const uint64_t bytes = checked_mul(checked_mul(uint64_t(count), uint64_t(elems), name, ": tensor ", what), 4,
                                       name, ": tensor ", what, " bytes");
    r.need(bytes, what);
    const uint8_t* src = file.data() + r.offset();
    for (int64_t i = 0; i < count; ++i) {
      const Shape shape = cols == 0 ? Shape{rows} : Shape{rows, cols};
      const uint8_t* s = src + uint64_t(i * elems) * 4;
      auto decode = [mapped, s, elems, rows, cols, permute_heads](float* dst) {
        if (permute_heads > 0) {
          std::vector<float> tmp(static_cast<size_t>(elems));  // src may be unaligned for floats; copy first
          std::memcpy(tmp.data(), s, size_t(elems) * 4);
          rope_interleaved_to_half(tmp.data(), dst, rows, cols, permute_heads);
        } else {
          std::memcpy(dst, s, size_t(elems) * 4);
        }
      };
      model.tensors.emplace(hf_name(i), decoded_model_tensor(shape, std::move(decode), lazy));
    }
    r.seek(r.offset() + bytes);
  };
  auto layer = [](const char* suffix) {
    return [suffix](int64_t i) { return "model.layers." + std::to_string(i) + "." + suffix; };
  };
  auto fixed = [](const char* n) { return [n](int64_t) { return std::string(n); }; };
  take("token_embedding", 1, vocab, dim, fixed("model.embed_tokens.weight"), 0);
  take("rms_att", layers, dim, 0, layer("input_layernorm.weight"), 0);
  take("wq", layers, dim, dim, layer("self_attn.q_proj.weight"), heads);
  take("wk", layers, kv_dim, dim, layer("self_attn.k_proj.weight"), kv_heads);
  take("wv", layers, kv_dim, dim, layer("self_attn.v_proj.weight"), 0);
  take("wo", layers, dim, dim, layer("self_attn.o_proj.weight"), 0);
  take("rms_ffn", layers, dim, 0, layer("post_attention_layernorm.weight"), 0);
  take("w1", layers, hidden, dim, layer("mlp.gate_proj.weight"), 0);
  take("w2", layers, dim, hidden, layer("mlp.down_proj.weight"), 0);
  take("w3", layers, hidden, dim, layer("mlp.up_proj.weight"), 0);
  take("rms_final", 1, dim, 0, fixed("model.norm.weight"), 0);
  const uint64_t freq_bytes =
      checked_mul(uint64_t(checked_product({seq_len, head_dim / 2}, int64_t(1) << 48, name, ": freq_cis")), 8, name,
                  ": freq_cis bytes");
  if (!tied) {
    r.need(freq_bytes, "freq_cis_real/imag");
    r.seek(r.offset() + freq_bytes);
    take("wcls (the untied classifier)", 1, vocab, dim, fixed("lm_head.weight"), 0);
  } else if (freq_bytes <= file.size() - r.offset()) {
    r.seek(r.offset() + freq_bytes);
  }
  FARTHING_CHECK(r.offset() == file.size(), name, " has ", file.size() - r.offset(),
                 " bytes after the last tensor: the header does not describe this file");
  return model;
}

}  // namespace farthing::ckpt
