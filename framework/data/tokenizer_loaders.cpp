// tokenizer_loaders.cpp — see tokenizer_loaders.h.
#include "framework/data/tokenizer_loaders.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "framework/ckpt/mapped_file.h"
#include "framework/core/checked_math.h"
#include "framework/data/sentencepiece_model.h"

namespace farthing::data {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kSpacePiece = "\xE2\x96\x81";  // "▁"

// NOTE: real tokenizer.json files nest Sequence steps one or two deep; deeper is refused before
// the recursion can exhaust the stack. Ids past kMaxTokenId (4M, 16x the largest vocabularies
// in use) are refused before the vocabulary is sized by them.
constexpr int kMaxSequenceDepth = 16;
constexpr int64_t kMaxTokenId = int64_t(1) << 22;

// A token id from a tokenizer file, checked to be in [0, kMaxTokenId).
int64_t token_id(const json& id, const std::string& what, const std::string& source) {
  FARTHING_CHECK(id.is_number_integer(), "tokenizer ", source, ": ", what, " has id ", id.dump(),
                 "; expected an integer");
  FARTHING_CHECK(!id.is_number_unsigned() || id.get<uint64_t>() < uint64_t(kMaxTokenId), "tokenizer ", source,
                 ": ", what, " has id ", id.dump(), "; expected an id from 0 below ", kMaxTokenId);
  const int64_t v = id.get<int64_t>();
  FARTHING_CHECK(v >= 0 && v < kMaxTokenId, "tokenizer ", source, ": ", what, " has id ", v,
                 "; expected an id from 0 below ", kMaxTokenId);
  return v;
}

// Runs fn, turning a JSON type or key error into an Error naming the tokenizer file.
template <class Fn>
auto naming_json_errors(const std::string& source, Fn&& fn) {
  try {
    return fn();
  } catch (const json::exception& e) {
    FARTHING_FAIL("tokenizer ", source, " is malformed: ", e.what());
  }
}

std::pair<std::string, std::string> split_merge(const std::string& merge, const std::string& source) {
  const size_t space = merge.find(' ', 1);
  FARTHING_CHECK(space != std::string::npos, "tokenizer ", source, ": merge '", merge, "' is not 'left right'");
  return {merge.substr(0, space), merge.substr(space + 1)};
}

// Collects byte-level pre-tokenizer regexes from an HF pre_tokenizer; returns whether a
// ByteLevel step was seen.
bool collect_pre_tokenizer(const json& pre, std::vector<std::string>& patterns, const std::string& source,
                           int depth = 0) {
  check_depth(depth, kMaxSequenceDepth, "tokenizer ", source, ": pre_tokenizer Sequence");
  FARTHING_CHECK(pre.is_object(), "tokenizer ", source, ": a pre_tokenizer is ", pre.type_name(), "; expected an object");
  const std::string type = pre.value("type", "");
  if (type == "Sequence") {
    bool byte_level = false;
    for (const json& p : pre.at("pretokenizers")) byte_level |= collect_pre_tokenizer(p, patterns, source, depth + 1);
    return byte_level;
  }
  if (type == "ByteLevel") {
    if (pre.value("use_regex", true)) patterns.push_back(kGpt2Pattern);
    FARTHING_CHECK(!pre.value("add_prefix_space", false), "tokenizer ", source,
                   ": ByteLevel add_prefix_space=true is not supported");
    return true;
  }
  if (type == "Split") {
    FARTHING_CHECK(pre.value("behavior", "") == "Isolated" && !pre.value("invert", false), "tokenizer ", source,
                   ": only Split with behavior Isolated (not inverted) is supported");
    // NOTE: never operator[] on a const json: a missing key there is undefined behaviour (it read
    // freed memory under ASan, found by tests/fuzz); contains/at/value only.
    FARTHING_CHECK(pre.contains("pattern") && pre.at("pattern").is_object() && pre.at("pattern").contains("Regex") &&
                       pre.at("pattern").at("Regex").is_string(),
                   "tokenizer ", source, ": only Split by Regex is supported (\"pattern\": {\"Regex\": string})");
    patterns.push_back(pre.at("pattern").at("Regex").get<std::string>());
    return false;
  }
  if (type == "Digits") {
    patterns.push_back(pre.value("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)");
    return false;
  }
  FARTHING_FAIL("tokenizer ", source, ": pre-tokenizer type '", type, "' is not supported");
}

// SentencePiece-style normaliser: Prepend "▁" and/or Replace " " -> "▁" (in a Sequence);
// NFC is accepted and not applied (see tokenizer.h). Returns whether Prepend was seen.
bool collect_normalizer(const json& norm, bool& spm_like, const std::string& source, int depth = 0) {
  if (norm.is_null()) return false;
  check_depth(depth, kMaxSequenceDepth, "tokenizer ", source, ": normalizer Sequence");
  FARTHING_CHECK(norm.is_object(), "tokenizer ", source, ": a normalizer is ", norm.type_name(), "; expected an object");
  const std::string type = norm.value("type", "");
  if (type == "Sequence") {
    bool prepend = false;
    for (const json& n : norm.at("normalizers")) prepend |= collect_normalizer(n, spm_like, source, depth + 1);
    return prepend;
  }
  if (type == "NFC") return false;
  if (type == "Prepend") {
    FARTHING_CHECK(norm.value("prepend", "") == kSpacePiece, "tokenizer ", source, ": only Prepend '▁' is supported");
    spm_like = true;
    return true;
  }
  if (type == "Replace") {
    FARTHING_CHECK(norm.contains("pattern") && norm.at("pattern").is_object() &&
                       norm.at("pattern").value("String", "") == " " && norm.value("content", "") == kSpacePiece,
                   "tokenizer ", source, ": only Replace ' ' -> '▁' is supported");
    spm_like = true;
    return false;
  }
  FARTHING_FAIL("tokenizer ", source, ": normalizer type '", type, "' is not supported");
}

}  // namespace

namespace {
TokenizerSpec hf_tokenizer_spec(const fs::path& path);
}  // namespace

TokenizerSpec load_hf_tokenizer_spec(const fs::path& path) {
  return naming_json_errors(path.string(), [&] { return hf_tokenizer_spec(path); });
}

namespace {
TokenizerSpec hf_tokenizer_spec(const fs::path& path) {
  std::ifstream in(path);
  FARTHING_CHECK(in.good(), "cannot open tokenizer ", path.string());
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    FARTHING_FAIL(path.string(), " is not valid JSON: ", e.what());
  }
  TokenizerSpec spec;
  spec.source = path.string();
  const json& model = j.at("model");
  FARTHING_CHECK(model.value("type", "BPE") == "BPE", "tokenizer ", spec.source, ": model type '",
                 model.value("type", ""), "' is not supported (only BPE)");
  int64_t n = 0;
  FARTHING_CHECK(j.is_object() && model.is_object(), "tokenizer ", spec.source, ": \"model\" is not an object");
  for (const auto& [piece, id] : model.at("vocab").items()) n = std::max<int64_t>(n, token_id(id, "piece '" + piece + "'", spec.source) + 1);
  for (const json& t : j.value("added_tokens", json::array())) {
    n = std::max<int64_t>(n, token_id(t.at("id"), "an added token", spec.source) + 1);
  }
  spec.pieces.assign(size_t(n), "");
  for (const auto& [piece, id] : model.at("vocab").items()) spec.pieces[size_t(id.get<int64_t>())] = piece;
  for (const json& t : j.value("added_tokens", json::array())) {
    AddedToken a;
    a.content = t.at("content").get<std::string>();
    a.id = int32_t(t.at("id").get<int64_t>());
    a.special = t.value("special", true);
    a.lstrip = t.value("lstrip", false);
    a.rstrip = t.value("rstrip", false);
    spec.pieces[size_t(a.id)] = a.content;
    spec.added_tokens.push_back(std::move(a));
  }
  for (const json& m : model.at("merges")) {
    if (m.is_string()) spec.merges.push_back(split_merge(m.get<std::string>(), spec.source));
    else spec.merges.emplace_back(m.at(0).get<std::string>(), m.at(1).get<std::string>());
  }
  spec.ignore_merges = model.value("ignore_merges", false);
  spec.byte_fallback = model.value("byte_fallback", false);
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    const std::string unk = model["unk_token"].get<std::string>();
    for (size_t id = 0; id < spec.pieces.size(); ++id) {
      if (spec.pieces[id] == unk) spec.unk_id = int32_t(id);
    }
  }
  bool spm_like = false;
  const bool prepend = collect_normalizer(j.value("normalizer", json()), spm_like, spec.source);
  const json pre = j.value("pre_tokenizer", json());
  bool byte_level = false;
  if (!pre.is_null()) {
    if (pre.value("type", "") == "Metaspace") {
      spm_like = true;
      spec.add_dummy_prefix = pre.value("prepend_scheme", "always") != "never" && pre.value("add_prefix_space", true);
    } else {
      byte_level = collect_pre_tokenizer(pre, spec.split_patterns, spec.source);
    }
  }
  FARTHING_CHECK(byte_level != spm_like, "tokenizer ", spec.source,
                 ": cannot tell byte-level BPE (ByteLevel pre-tokenizer) from SentencePiece-style BPE "
                 "(▁ normaliser or Metaspace)");
  spec.kind = byte_level ? TokenizerKind::kByteLevel : TokenizerKind::kSentencePiece;
  if (spm_like && prepend) spec.add_dummy_prefix = true;
  // BOS/EOS: the first special token of the post-processor template, and the usual names.
  const json post = j.value("post_processor", json());
  if (post.is_object() && post.value("type", "") == "TemplateProcessing" && post.contains("single") &&
      post.at("single").is_array() && !post.at("single").empty() && post.at("single")[0].is_object() &&
      post.at("single")[0].contains("SpecialToken")) {
    spec.add_bos = true;
  }
  for (const AddedToken& t : spec.added_tokens) {
    if (t.content == "<s>" || t.content == "<|begin_of_text|>") spec.bos_id = t.id;
    if (t.content == "</s>" || t.content == "<|end_of_text|>" || t.content == "<|endoftext|>") {
      if (spec.eos_id < 0) spec.eos_id = t.id;
    }
  }
  return spec;
}
}  // namespace

TokenizerSpec load_llama2c_tokenizer_spec(const fs::path& path) {
  ckpt::MappedFile file(path);
  ckpt::ByteReader r(file.data(), file.size(), file.name());
  TokenizerSpec spec;
  spec.source = file.name();
  const int32_t max_len = r.read<int32_t>("max_token_length");
  FARTHING_CHECK(max_len > 0 && max_len < (1 << 16), file.name(), " is not a llama2.c tokenizer: max_token_length is ",
                 max_len);
  while (r.offset() < file.size()) {
    spec.scores.push_back(r.read<float>("a token score"));
    const int32_t len = r.read<int32_t>("a token length");
    FARTHING_CHECK(len >= 0 && len <= max_len, file.name(), ": token ", spec.pieces.size(), " has length ", len,
                   " but max_token_length is ", max_len);
    spec.pieces.push_back(r.read_bytes(uint64_t(len), "token bytes"));
  }
  FARTHING_CHECK(spec.pieces.size() > 3, file.name(), " holds only ", spec.pieces.size(), " tokens");
  spec.kind = TokenizerKind::kSentencePiece;
  spec.space_piece = " ";
  spec.add_dummy_prefix = true;
  spec.byte_fallback = true;
  spec.unk_id = 0;
  spec.bos_id = 1;
  spec.eos_id = 2;
  spec.add_bos = true;
  spec.mergeable.assign(spec.pieces.size(), 1);
  for (size_t id = 0; id < 3; ++id) spec.mergeable[id] = 0;
  return spec;
}

namespace {
TokenizerSpec gguf_spec(const ckpt::GgufFile& gguf);
}  // namespace

TokenizerSpec gguf_tokenizer_spec(const ckpt::GgufFile& gguf) {
  return naming_json_errors(gguf.name(), [&] { return gguf_spec(gguf); });
}

namespace {
TokenizerSpec gguf_spec(const ckpt::GgufFile& gguf) {
  TokenizerSpec spec;
  spec.source = gguf.name();
  const std::string model = gguf.get_string("tokenizer.ggml.model", "");
  FARTHING_CHECK(!model.empty(), gguf.name(), " carries no tokenizer (tokenizer.ggml.model is missing)");
  const json& tokens = gguf.at("tokenizer.ggml.tokens");
  spec.pieces.reserve(tokens.size());
  for (const json& t : tokens) spec.pieces.push_back(t.get<std::string>());
  std::vector<int64_t> types(spec.pieces.size(), 1);
  if (gguf.has("tokenizer.ggml.token_type")) {
    const json& tt = gguf.at("tokenizer.ggml.token_type");
    FARTHING_CHECK(tt.size() == spec.pieces.size(), gguf.name(), ": tokenizer.ggml.token_type has ", tt.size(),
                   " entries for ", spec.pieces.size(), " tokens");
    for (size_t i = 0; i < tt.size(); ++i) types[i] = tt[i].get<int64_t>();
  }
  // llama.cpp token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
  for (size_t id = 0; id < types.size(); ++id) {
    if (types[id] == 3 || types[id] == 4) {
      AddedToken a;
      a.content = spec.pieces[id];
      a.id = int32_t(id);
      a.special = types[id] == 3;
      if (!a.content.empty()) spec.added_tokens.push_back(std::move(a));
    }
  }
  spec.bos_id = int32_t(gguf.get_int("tokenizer.ggml.bos_token_id", -1));
  spec.eos_id = int32_t(gguf.get_int("tokenizer.ggml.eos_token_id", -1));
  spec.unk_id = int32_t(gguf.get_int("tokenizer.ggml.unknown_token_id", -1));
  if (model == "gpt2") {
    spec.kind = TokenizerKind::kByteLevel;
    spec.unk_id = -1;  // llama.cpp's BPE drops bytes it has no token for; it never emits <unk>
    spec.add_bos = gguf.has("tokenizer.ggml.add_bos_token") && gguf.at("tokenizer.ggml.add_bos_token").get<bool>();
    for (const json& m : gguf.at("tokenizer.ggml.merges")) spec.merges.push_back(split_merge(m.get<std::string>(), spec.source));
    const std::string pre = gguf.get_string("tokenizer.ggml.pre", "default");
    if (pre == "default" || pre == "gpt-2" || pre == "gpt2") {
      spec.split_patterns = {kGpt2Pattern};
    } else if (pre == "llama-bpe" || pre == "llama3") {
      spec.split_patterns = {kLlama3Pattern};
      spec.ignore_merges = true;
    } else if (pre == "qwen2") {
      spec.split_patterns = {kQwen2Pattern};
    } else if (pre == "smollm") {
      spec.split_patterns = {R"(\p{N})", kGpt2Pattern};
    } else {
      FARTHING_FAIL(gguf.name(), ": tokenizer.ggml.pre '", pre, "' is not supported; known: default, gpt-2, "
                    "llama-bpe, qwen2, smollm");
    }
  } else if (model == "llama") {
    spec.kind = TokenizerKind::kSentencePiece;
    const json& scores = gguf.at("tokenizer.ggml.scores");
    FARTHING_CHECK(scores.size() == spec.pieces.size(), gguf.name(), ": tokenizer.ggml.scores has ", scores.size(),
                   " entries for ", spec.pieces.size(), " tokens");
    for (const json& s : scores) spec.scores.push_back(s.get<float>());
    spec.mergeable.assign(spec.pieces.size(), 0);
    for (size_t id = 0; id < types.size(); ++id) spec.mergeable[id] = types[id] == 1 || types[id] == 0;
    spec.byte_fallback = true;
    spec.add_dummy_prefix = !gguf.has("tokenizer.ggml.add_space_prefix") ||
                            gguf.at("tokenizer.ggml.add_space_prefix").get<bool>();
    spec.add_bos = !gguf.has("tokenizer.ggml.add_bos_token") || gguf.at("tokenizer.ggml.add_bos_token").get<bool>();
  } else {
    FARTHING_FAIL(gguf.name(), ": tokenizer.ggml.model '", model, "' is not supported (gpt2 or llama)");
  }
  return spec;
}
}  // namespace

Tokenizer load_tokenizer(const fs::path& path) {
  if (fs::is_directory(path)) return Tokenizer(load_hf_tokenizer_spec(path / "tokenizer.json"));
  const std::string ext = path.extension().string();
  if (ext == ".json") return Tokenizer(load_hf_tokenizer_spec(path));
  if (ext == ".gguf") return Tokenizer(gguf_tokenizer_spec(ckpt::GgufFile(path)));
  if (ext == ".model") return Tokenizer(load_sentencepiece_model_spec(path));
  return Tokenizer(load_llama2c_tokenizer_spec(path));
}

}  // namespace farthing::data
