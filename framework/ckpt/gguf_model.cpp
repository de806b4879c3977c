// gguf_model.cpp — see gguf_model.h.
#include "framework/ckpt/gguf_model.h"

#include <memory>
#include <regex>

#include "framework/ckpt/gguf.h"
#include "framework/ckpt/rope_permute.h"

namespace farthing::ckpt {

namespace {
// GGUF llama tensor name -> HF name ("" when unknown).
std::string hf_llama_name(const std::string& name, int& layer, std::string& role) {
  static const std::regex kBlock(R"(blk\.(\d+)\.(\w+)\.weight)");
  std::smatch m;
  role.clear();
  layer = -1;
  if (name == "token_embd.weight") return "model.embed_tokens.weight";
  if (name == "output_norm.weight") return "model.norm.weight";
  if (name == "output.weight") return "lm_head.weight";
  if (!std::regex_match(name, m, kBlock)) return "";
  FARTHING_CHECK(m[1].length() <= 6, "tensor '", name, "' names layer ", m[1].str(), "; expected a layer number below 10^6");
  layer = std::stoi(m[1]);
  role = m[2];
  static const std::pair<const char*, const char*> kRoles[] = {
      {"attn_norm", "input_layernorm"},       {"ffn_norm", "post_attention_layernorm"},
      {"attn_q", "self_attn.q_proj"},         {"attn_k", "self_attn.k_proj"},
      {"attn_v", "self_attn.v_proj"},         {"attn_output", "self_attn.o_proj"},
      {"ffn_gate", "mlp.gate_proj"},          {"ffn_up", "mlp.up_proj"},
      {"ffn_down", "mlp.down_proj"}};
  for (const auto& [gguf_role, hf_role] : kRoles) {
    if (role == gguf_role) return "model.layers." + m[1].str() + "." + hf_role + ".weight";
  }
  return "";
}
}  // namespace

ModelFile read_gguf_model(const std::filesystem::path& path, bool lazy) {
  const auto opened = std::make_shared<GgufFile>(path);
  const GgufFile& gguf = *opened;
  ModelFile model;
  model.source = gguf.name();
  model.format = "gguf";
  const std::string arch = gguf.get_string("general.architecture", "");
  FARTHING_CHECK(!arch.empty(), gguf.name(), " has no general.architecture: not a GGUF model file");
  const std::string p = arch + ".";
  nlohmann::json& c = model.config;
  c["model_type"] = arch;
  const bool llama = arch == "llama";
  if (llama) c["architectures"] = {"LlamaForCausalLM"};
  if (gguf.has(p + "embedding_length")) c["hidden_size"] = gguf.get_int(p + "embedding_length");
  if (gguf.has(p + "feed_forward_length")) c["intermediate_size"] = gguf.get_int(p + "feed_forward_length");
  if (gguf.has(p + "block_count")) c["num_hidden_layers"] = gguf.get_int(p + "block_count");
  const int64_t n_head = gguf.get_int(p + "attention.head_count", 0);
  const int64_t n_head_kv = gguf.get_int(p + "attention.head_count_kv", n_head);
  if (n_head > 0) {
    c["num_attention_heads"] = n_head;
    c["num_key_value_heads"] = n_head_kv;
  }
  if (gguf.has(p + "context_length")) c["max_position_embeddings"] = gguf.get_int(p + "context_length");
  if (gguf.has(p + "attention.layer_norm_rms_epsilon")) {
    c["rms_norm_eps"] = gguf.get_float(p + "attention.layer_norm_rms_epsilon", 1e-5);
  }
  c["rope_theta"] = gguf.get_float(p + "rope.freq_base", 10000.0);
  if (gguf.has(p + "vocab_size")) c["vocab_size"] = gguf.get_int(p + "vocab_size");
  else if (gguf.has("tokenizer.ggml.tokens")) c["vocab_size"] = gguf.at("tokenizer.ggml.tokens").size();
  if (gguf.has("tokenizer.ggml.bos_token_id")) c["bos_token_id"] = gguf.get_int("tokenizer.ggml.bos_token_id");
  if (gguf.has("tokenizer.ggml.eos_token_id")) c["eos_token_id"] = gguf.get_int("tokenizer.ggml.eos_token_id");
  if (gguf.has("tokenizer.ggml.padding_token_id")) c["pad_token_id"] = gguf.get_int("tokenizer.ggml.padding_token_id");
  c["tie_word_embeddings"] = gguf.find_tensor("output.weight") == nullptr;
  c["torch_dtype"] = "float32";

  for (const GgufTensorInfo& info : gguf.tensors()) {
    std::vector<int64_t> dims(info.dims.rbegin(), info.dims.rend());  // PyTorch order
    int layer = -1;
    std::string role;
    std::string name = llama ? hf_llama_name(info.name, layer, role) : "";
    if (name.empty()) name = info.name;
    const Shape shape = shape_from_dims(dims, "tensor '" + info.name + "' in " + gguf.name());
    int64_t heads = 0;  // > 0: q/k rows to take back from llama.cpp's interleaved RoPE order
    if (llama && (role == "attn_q" || role == "attn_k")) {
      heads = role == "attn_q" ? n_head : n_head_kv;
      FARTHING_CHECK(heads > 0, gguf.name(), " has no llama.attention.head_count to undo the q/k permutation");
      FARTHING_CHECK(dims.size() == 2 && heads <= dims[0] / 2 && dims[0] % (2 * heads) == 0, "tensor '", info.name, "' in ",
                     gguf.name(), " has shape ", shape.str(), " but a multiple of 2*", heads,
                     " rows was expected");
    }
    auto decode = [opened, info, heads, dims](float* dst) {
      if (heads == 0) {
        opened->dequantize(info, dst);
        return;
      }
      std::vector<float> raw(size_t(info.n_elems));
      opened->dequantize(info, raw.data());
      rope_interleaved_to_half(raw.data(), dst, dims[0], dims[1], heads);
    };
    model.tensors.emplace(std::move(name), decoded_model_tensor(shape, std::move(decode), lazy));
  }
  return model;
}

}  // namespace farthing::ckpt
