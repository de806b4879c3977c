// bpe_merge.cpp — see bpe_merge.h.
#include "framework/data/bpe_merge.h"

#include <queue>

namespace farthing::data {

void MergeTable::add(int32_t left, int32_t right, MergeRule rule) {
  auto [it, inserted] = rules_.emplace(key(left, right), rule);
  // The first (highest-priority) rule for a pair wins, as in HF's merge map.
  if (!inserted && rule.priority < it->second.priority) it->second = rule;
}

namespace {
struct Candidate {
  float priority;
  int32_t left;   // position of the left symbol
  int32_t right;  // position of the right symbol when queued
  int32_t left_id;
  int32_t right_id;
  bool operator>(const Candidate& o) const {
    if (priority != o.priority) return priority > o.priority;
    return left > o.left;
  }
};
}  // namespace

void bpe_merge(std::vector<BpeSymbol>& symbols, const MergeTable& table) {
  const int32_t n = int32_t(symbols.size());
  if (n < 2) return;
  std::vector<int32_t> prev(static_cast<size_t>(n)), next(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    prev[size_t(i)] = i - 1;
    next[size_t(i)] = i + 1 < n ? i + 1 : -1;
  }
  std::vector<uint8_t> alive(size_t(n), 1);
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto push = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const MergeRule* rule = table.find(symbols[size_t(l)].id, symbols[size_t(r)].id);
    if (rule) queue.push({rule->priority, l, r, symbols[size_t(l)].id, symbols[size_t(r)].id});
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i, i + 1);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    BpeSymbol& left = symbols[size_t(c.left)];
    if (!alive[size_t(c.left)] || next[size_t(c.left)] != c.right || left.id != c.left_id ||
        symbols[size_t(c.right)].id != c.right_id) {
      continue;  // stale: one side was merged since this pair was queued
    }
    const MergeRule* rule = table.find(c.left_id, c.right_id);
    left.id = rule->merged_id;
    left.len += symbols[size_t(c.right)].len;
    alive[size_t(c.right)] = 0;
    const int32_t after = next[size_t(c.right)];
    next[size_t(c.left)] = after;
    if (after >= 0) prev[size_t(after)] = c.left;
    push(prev[size_t(c.left)], c.left);
    push(c.left, after);
  }
  size_t out = 0;
  for (int32_t i = 0; i >= 0; i = next[size_t(i)]) symbols[out++] = symbols[size_t(i)];
  symbols.resize(out);
}

}  // namespace farthing::data
