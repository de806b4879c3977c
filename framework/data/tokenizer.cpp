// tokenizer.cpp — see tokenizer.h.
#include "framework/data/tokenizer.h"

#include <algorithm>
#include <cstdio>

#include "framework/core/error.h"
#include "framework/data/utf8.h"

namespace farthing::data {

namespace {
// Words longer than this are merged without touching the cache.
constexpr size_t kMaxCachedWordBytes = 64;
constexpr size_t kMaxCacheEntries = 1 << 18;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  if (from.empty()) return std::string(text);
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(text.substr(pos));
  return out;
}

// "<0x41>" -> 0x41; -1 when piece is not a byte token.
int parse_byte_piece(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
  int value = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = piece[i];
    int digit = (c >= '0' && c <= '9') ? c - '0' : (c >= 'A' && c <= 'F') ? c - 'A' + 10
              : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}
}  // namespace

Tokenizer::Tokenizer(TokenizerSpec spec) : spec_(std::move(spec)) {
  const auto& pieces = spec_.pieces;
  const int32_t n = int32_t(pieces.size());
  FARTHING_CHECK(n > 0, "tokenizer ", spec_.source, " has an empty vocabulary");
  piece_to_id_.reserve(size_t(n) * 2);
  for (int32_t id = 0; id < n; ++id) piece_to_id_.emplace(pieces[size_t(id)], id);
  for (const AddedToken& t : spec_.added_tokens) {
    FARTHING_CHECK(t.id >= 0 && t.id < n, "tokenizer ", spec_.source, ": added token '", t.content,
                   "' has id ", t.id, " outside the vocabulary of ", n);
    FARTHING_CHECK(!t.content.empty(), "tokenizer ", spec_.source, ": added token ", t.id, " is empty");
  }
  std::vector<uint8_t> is_added(size_t(n), 0);
  for (const AddedToken& t : spec_.added_tokens) is_added[size_t(t.id)] = 1;

  token_bytes_.resize(size_t(n));
  is_byte_token_.assign(size_t(n), 0);
  byte_ids_.assign(256, -1);
  const bool byte_level = spec_.kind == TokenizerKind::kByteLevel;
  for (int32_t id = 0; id < n; ++id) {
    const std::string& piece = pieces[size_t(id)];
    std::string& bytes = token_bytes_[size_t(id)];
    if (is_added[size_t(id)]) {
      bytes = piece;
    } else if (byte_level) {
      if (!byte_level_decode(piece, bytes)) bytes = piece;
    } else if (const int b = parse_byte_piece(piece); b >= 0) {
      bytes = std::string(1, char(b));
      is_byte_token_[size_t(id)] = 1;
      if (byte_ids_[size_t(b)] < 0) byte_ids_[size_t(b)] = id;
    } else {
      bytes = replace_all(piece, spec_.space_piece, " ");
    }
  }
  for (const AddedToken& t : spec_.added_tokens) token_bytes_[size_t(t.id)] = t.content;

  if (byte_level) {
    // NOTE: some vocabularies lack a few bytes (SmolLM2: 0x04, 0xC0, 0xF5-0xFF, ...); such a
    // byte encodes as <unk> when there is one, else it is dropped, as HF and llama.cpp do.
    for (int b = 0; b < 256; ++b) {
      auto it = piece_to_id_.find(byte_level_char(uint8_t(b)));
      if (it != piece_to_id_.end()) byte_ids_[size_t(b)] = it->second;
    }
    if (spec_.ignore_merges) {
      for (int32_t id = 0; id < n; ++id) {
        if (!is_added[size_t(id)]) bytes_to_id_.emplace(token_bytes_[size_t(id)], id);
      }
    }
    splitter_ = RegexSplitter(spec_.split_patterns);
  }

  if (!spec_.merges.empty()) {
    for (size_t rank = 0; rank < spec_.merges.size(); ++rank) {
      const auto& [a, b] = spec_.merges[rank];
      const int32_t left = piece_id(a), right = piece_id(b), merged = piece_id(a + b);
      FARTHING_CHECK(left >= 0 && right >= 0 && merged >= 0, "tokenizer ", spec_.source, ": merge ",
                     rank, " '", a, " ", b, "' uses a piece missing from the vocabulary");
      merges_.add(left, right, {float(rank), merged});
    }
  } else {
    // Score order: any pair whose concatenation is a (mergeable) piece merges, best score first.
    FARTHING_CHECK(spec_.scores.size() == size_t(n), "tokenizer ", spec_.source, " has ", n,
                   " pieces but ", spec_.scores.size(), " scores and no merges");
    for (int32_t id = 0; id < n; ++id) {
      if (is_added[size_t(id)] || is_byte_token_[size_t(id)]) continue;
      if (!spec_.mergeable.empty() && !spec_.mergeable[size_t(id)]) continue;
      const std::string& piece = pieces[size_t(id)];
      for (size_t k = utf8_char_len(piece, 0); k < piece.size(); k += utf8_char_len(piece, k)) {
        const int32_t left = piece_id(std::string_view(piece).substr(0, k));
        const int32_t right = piece_id(std::string_view(piece).substr(k));
        if (left >= 0 && right >= 0) merges_.add(left, right, {-spec_.scores[size_t(id)], id});
      }
    }
  }

  if (!byte_level && !spec_.space_piece.empty()) {
    const std::string& sp = spec_.space_piece;
    split_words_at_spaces_ = true;
    for (int32_t id = 0; id < n && split_words_at_spaces_; ++id) {
      const std::string& piece = pieces[size_t(id)];
      for (size_t pos = piece.find(sp, 1); pos != std::string::npos; pos = piece.find(sp, pos + 1)) {
        if (pos < sp.size() || piece.compare(pos - sp.size(), sp.size(), sp) != 0) {
          split_words_at_spaces_ = false;  // "x▁" inside a piece: a merge may cross a word start
          break;
        }
      }
    }
  }

  added_by_first_byte_.assign(256, {});
  for (size_t i = 0; i < spec_.added_tokens.size(); ++i) {
    added_by_first_byte_[uint8_t(spec_.added_tokens[i].content[0])].push_back(int32_t(i));
  }
  for (auto& list : added_by_first_byte_) {
    std::stable_sort(list.begin(), list.end(), [&](int32_t x, int32_t y) {
      return spec_.added_tokens[size_t(x)].content.size() > spec_.added_tokens[size_t(y)].content.size();
    });
  }
}

int32_t Tokenizer::piece_id(std::string_view piece) const {
  auto it = piece_to_id_.find(piece);
  return it == piece_to_id_.end() ? -1 : it->second;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  size_t segment_begin = 0, pos = 0;
  while (pos < text.size()) {
    const AddedToken* match = nullptr;
    for (int32_t index : added_by_first_byte_[uint8_t(text[pos])]) {
      const AddedToken& t = spec_.added_tokens[size_t(index)];
      if (t.special && !parse_special) continue;
      if (text.compare(pos, t.content.size(), t.content) == 0) {
        match = &t;
        break;
      }
    }
    if (!match) {
      ++pos;
      continue;
    }
    size_t segment_end = pos;
    if (match->lstrip) {
      while (segment_end > segment_begin && is_space(text[segment_end - 1])) --segment_end;
    }
    encode_segment(text.substr(segment_begin, segment_end - segment_begin), out);
    out.push_back(match->id);
    pos += match->content.size();
    if (match->rstrip) {
      while (pos < text.size() && is_space(text[pos])) ++pos;
    }
    segment_begin = pos;
  }
  encode_segment(text.substr(segment_begin), out);
  return out;
}

void Tokenizer::encode_segment(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  if (spec_.kind == TokenizerKind::kSentencePiece) {
    encode_sentencepiece(text, out);
    return;
  }
  std::vector<std::string_view> words;
  splitter_.split(text, words);
  for (std::string_view word : words) encode_byte_level_word(word, out);
}

bool Tokenizer::cache_lookup(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() > kMaxCachedWordBytes) return false;
  std::lock_guard<std::mutex> lock(cache_mutex_);
  auto it = word_cache_.find(word);
  if (it == word_cache_.end()) return false;
  out.insert(out.end(), it->second.begin(), it->second.end());
  return true;
}

void Tokenizer::cache_store(std::string_view word, const std::vector<int32_t>& ids) const {
  if (word.size() > kMaxCachedWordBytes) return;
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (word_cache_.size() >= kMaxCacheEntries) word_cache_.clear();
  word_cache_.emplace(std::string(word), ids);
}

void Tokenizer::encode_byte_level_word(std::string_view word, std::vector<int32_t>& out) const {
  if (cache_lookup(word, out)) return;
  std::vector<int32_t> ids;
  if (spec_.ignore_merges) {
    auto it = bytes_to_id_.find(word);
    if (it != bytes_to_id_.end()) ids.push_back(it->second);
  }
  if (ids.empty()) {
    std::vector<BpeSymbol> symbols(word.size());
    for (size_t i = 0; i < word.size(); ++i) {
      symbols[i] = {byte_ids_[uint8_t(word[i])], uint32_t(i), 1};
    }
    bpe_merge(symbols, merges_);
    ids.reserve(symbols.size());
    for (const BpeSymbol& s : symbols) {
      if (s.id >= 0) ids.push_back(s.id);
      else if (spec_.unk_id >= 0) ids.push_back(spec_.unk_id);
    }
  }
  out.insert(out.end(), ids.begin(), ids.end());
  cache_store(word, ids);
}

void Tokenizer::encode_sentencepiece(std::string_view text, std::vector<int32_t>& out) const {
  const std::string& sp = spec_.space_piece;
  std::string normalized;
  normalized.reserve(text.size() + 8);
  if (spec_.add_dummy_prefix) normalized += sp;
  for (char c : text) {
    if (c == ' ') normalized += sp;
    else normalized += c;
  }
  if (!split_words_at_spaces_) {
    encode_sentencepiece_word(normalized, out);
    return;
  }
  // Words start at a space piece that follows something else: "a▁▁b▁c" -> "a", "▁▁b", "▁c".
  const std::string_view all(normalized);
  size_t word_begin = 0, pos = 0;
  bool in_space_run = false;
  while (pos < all.size()) {
    if (all.compare(pos, sp.size(), sp) == 0) {
      if (!in_space_run && pos > word_begin) {
        encode_sentencepiece_word(all.substr(word_begin, pos - word_begin), out);
        word_begin = pos;
      }
      in_space_run = true;
      pos += sp.size();
    } else {
      in_space_run = false;
      ++pos;
    }
  }
  if (word_begin < all.size()) encode_sentencepiece_word(all.substr(word_begin), out);
}

void Tokenizer::encode_sentencepiece_word(std::string_view word, std::vector<int32_t>& out) const {
  if (cache_lookup(word, out)) return;
  std::vector<BpeSymbol> symbols;
  symbols.reserve(word.size());
  for (size_t pos = 0; pos < word.size();) {
    const size_t len = utf8_char_len(word, pos);
    symbols.push_back({piece_id(word.substr(pos, len)), uint32_t(pos), uint32_t(len)});
    pos += len;
  }
  bpe_merge(symbols, merges_);
  std::vector<int32_t> ids;
  ids.reserve(symbols.size());
  for (const BpeSymbol& s : symbols) {
    if (s.id >= 0) {
      ids.push_back(s.id);
      continue;
    }
    bool all_bytes = spec_.byte_fallback;
    for (uint32_t i = 0; all_bytes && i < s.len; ++i) {
      all_bytes = byte_ids_[uint8_t(word[s.begin + i])] >= 0;
    }
    if (all_bytes) {
      for (uint32_t i = 0; i < s.len; ++i) ids.push_back(byte_ids_[uint8_t(word[s.begin + i])]);
    } else {
      FARTHING_CHECK(spec_.unk_id >= 0, "tokenizer ", spec_.source,
                     " cannot encode a character: no byte fallback and no <unk> token");
      ids.push_back(spec_.unk_id);
    }
  }
  out.insert(out.end(), ids.begin(), ids.end());
  cache_store(word, ids);
}

std::string Tokenizer::token_bytes(int32_t id) const {
  FARTHING_CHECK(id >= 0 && id < vocab_size(), "token id ", id, " is outside the vocabulary of ",
                 vocab_size(), " (tokenizer ", spec_.source, ")");
  return token_bytes_[size_t(id)];
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (int32_t id : ids) {
    FARTHING_CHECK(id >= 0 && id < vocab_size(), "token id ", id, " is outside the vocabulary of ",
                   vocab_size(), " (tokenizer ", spec_.source, ")");
    out += token_bytes_[size_t(id)];
  }
  if (spec_.kind == TokenizerKind::kSentencePiece && spec_.add_dummy_prefix && !out.empty() &&
      out[0] == ' ') {
    out.erase(0, 1);
  }
  return out;
}

}  // namespace farthing::data
