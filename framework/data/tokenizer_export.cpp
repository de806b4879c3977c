// tokenizer_export.cpp — see tokenizer_export.h.
#include "framework/data/tokenizer_export.h"

#include <algorithm>
#include <fstream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/data/utf8.h"

namespace farthing::data {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kSpacePiece = "\xE2\x96\x81";

// Score-ordered vocabularies as rank-ordered merges: pieces by descending score (then id), each
// with every split whose halves are pieces.
std::vector<std::pair<std::string, std::string>> merges_from_scores(const TokenizerSpec& spec) {
  std::vector<int32_t> order(spec.pieces.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return spec.scores[size_t(a)] > spec.scores[size_t(b)]; });
  std::unordered_map<std::string, int32_t> ids;
  for (size_t i = 0; i < spec.pieces.size(); ++i) ids.emplace(spec.pieces[i], int32_t(i));
  std::vector<uint8_t> added(spec.pieces.size(), 0);
  for (const AddedToken& t : spec.added_tokens) added[size_t(t.id)] = 1;
  std::vector<std::pair<std::string, std::string>> merges;
  for (int32_t id : order) {
    if (added[size_t(id)] || (!spec.mergeable.empty() && !spec.mergeable[size_t(id)])) continue;
    const std::string& piece = spec.pieces[size_t(id)];
    if (piece.size() == 6 && piece.starts_with("<0x") && piece.back() == '>') continue;
    for (size_t k = utf8_char_len(piece, 0); k < piece.size(); k += utf8_char_len(piece, k)) {
      const std::string left = piece.substr(0, k), right = piece.substr(k);
      if (ids.count(left) && ids.count(right)) merges.emplace_back(left, right);
    }
  }
  return merges;
}

void write_json(const fs::path& path, const json& j) {
  std::string text;
  try {
    text = j.dump(2);
  } catch (const json::exception& e) {
    FARTHING_FAIL("cannot write ", path.string(), ": a token is not valid UTF-8 (", e.what(), ")");
  }
  std::ofstream out(path, std::ios::trunc);
  FARTHING_CHECK(out.good(), "cannot create ", path.string());
  out << text << "\n";
  FARTHING_CHECK(out.good(), "writing ", path.string(), " failed");
}

// llama2.c's tok512.bin writes spaces as " "; HF's SentencePiece-style files use "▁".
TokenizerSpec with_metaspace(const TokenizerSpec& in) {
  TokenizerSpec spec = in;
  if (spec.kind == TokenizerKind::kByteLevel || spec.space_piece == kSpacePiece) return spec;
  auto convert = [&](std::string& piece) {
    FARTHING_CHECK(piece.find(kSpacePiece) == std::string::npos, "tokenizer ", spec.source, ": piece '", piece,
                   "' already holds '▁', so its spaces cannot be rewritten as '▁' for tokenizer.json");
    std::string out;
    for (size_t pos = 0; pos < piece.size();) {
      if (piece.compare(pos, in.space_piece.size(), in.space_piece) == 0) {
        out += kSpacePiece;
        pos += in.space_piece.size();
      } else {
        out += piece[pos++];
      }
    }
    piece = out;
  };
  for (std::string& p : spec.pieces) convert(p);
  for (auto& [l, r] : spec.merges) {
    convert(l);
    convert(r);
  }
  spec.space_piece = kSpacePiece;
  return spec;
}

}  // namespace

void write_hf_tokenizer_files(const Tokenizer& tokenizer, const fs::path& dir, const std::string& chat_template) {
  const TokenizerSpec spec = with_metaspace(tokenizer.spec());
  const bool byte_level = spec.kind == TokenizerKind::kByteLevel;
  fs::create_directories(dir);
  json added = json::array();
  for (const AddedToken& t : spec.added_tokens) {
    added.push_back({{"id", t.id}, {"content", t.content}, {"single_word", false}, {"lstrip", t.lstrip},
                     {"rstrip", t.rstrip}, {"normalized", false}, {"special", t.special}});
  }
  json vocab = json::object();
  for (size_t id = 0; id < spec.pieces.size(); ++id) {
    if (!vocab.contains(spec.pieces[id])) vocab[spec.pieces[id]] = id;
  }
  const auto merges = spec.merges.empty() ? merges_from_scores(spec) : spec.merges;
  json merge_list = json::array();
  for (const auto& [l, r] : merges) merge_list.push_back({l, r});
  json model = {{"type", "BPE"}, {"dropout", nullptr}, {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr}, {"fuse_unk", !byte_level}, {"byte_fallback", spec.byte_fallback},
                {"ignore_merges", spec.ignore_merges}, {"vocab", vocab}, {"merges", merge_list}};
  model["unk_token"] = spec.unk_id >= 0 ? json(spec.pieces[size_t(spec.unk_id)]) : json(nullptr);
  json j = {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}, {"added_tokens", added},
            {"post_processor", nullptr}, {"model", model}};
  if (byte_level) {
    json pre = json::array();
    for (const std::string& p : spec.split_patterns) {
      pre.push_back({{"type", "Split"}, {"pattern", {{"Regex", p}}}, {"behavior", "Isolated"}, {"invert", false}});
    }
    pre.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}});
    j["normalizer"] = nullptr;
    j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", pre}};
    j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  } else {
    json norms = json::array();
    if (spec.add_dummy_prefix) norms.push_back({{"type", "Prepend"}, {"prepend", kSpacePiece}});
    norms.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpacePiece}});
    j["normalizer"] = {{"type", "Sequence"}, {"normalizers", norms}};
    j["pre_tokenizer"] = nullptr;
    json decoders = json::array({{{"type", "Replace"}, {"pattern", {{"String", kSpacePiece}}}, {"content", " "}},
                                 {{"type", "ByteFallback"}}, {{"type", "Fuse"}}});
    if (spec.add_dummy_prefix) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    j["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};
  }
  write_json(dir / "tokenizer.json", j);
  json config = {{"tokenizer_class", "PreTrainedTokenizerFast"}, {"add_bos_token", spec.add_bos},
                 {"add_eos_token", false}, {"clean_up_tokenization_spaces", false}};
  if (spec.bos_id >= 0) config["bos_token"] = spec.pieces[size_t(spec.bos_id)];
  if (spec.eos_id >= 0) config["eos_token"] = spec.pieces[size_t(spec.eos_id)];
  if (spec.unk_id >= 0) config["unk_token"] = spec.pieces[size_t(spec.unk_id)];
  if (!chat_template.empty()) config["chat_template"] = chat_template;
  write_json(dir / "tokenizer_config.json", config);
}

}  // namespace farthing::data
