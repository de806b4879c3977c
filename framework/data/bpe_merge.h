// bpe_merge.h — the BPE merge loop shared by every tokenizer: rank-ordered (HF merges,
// GGUF gpt2) and score-ordered (SentencePiece, llama2.c) are both "lowest priority first,
// leftmost on ties", so one priority-queue implementation serves both.
//
// Relies on: nothing. Tested by: tests/tokenizers/test_tokenizer_unit.cpp and the golden tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace farthing::data {

struct MergeRule {
  float priority;     // lower merges first: the merge rank, or minus the merged piece's score
  int32_t merged_id;  // the token the pair becomes
};

// (left id, right id) -> rule.
class MergeTable {
 public:
  void add(int32_t left, int32_t right, MergeRule rule);
  const MergeRule* find(int32_t left, int32_t right) const {
    if (left < 0 || right < 0) return nullptr;
    auto it = rules_.find(key(left, right));
    return it == rules_.end() ? nullptr : &it->second;
  }
  size_t size() const { return rules_.size(); }

 private:
  static uint64_t key(int32_t l, int32_t r) { return (uint64_t(uint32_t(l)) << 32) | uint32_t(r); }
  std::unordered_map<uint64_t, MergeRule> rules_;
};

// A symbol of the word being merged: a token id (or -1: no token, e.g. an unknown character)
// and the byte span of the input it covers.
struct BpeSymbol {
  int32_t id;
  uint32_t begin;
  uint32_t len;
};

// Merges symbols in place until no adjacent pair has a rule. O(n log n): a min-heap of
// candidate pairs (priority, left position) over a linked list, stale entries skipped.
void bpe_merge(std::vector<BpeSymbol>& symbols, const MergeTable& table);

}  // namespace farthing::data
