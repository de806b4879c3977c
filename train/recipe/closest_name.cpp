// closest_name.cpp — see closest_name.h.
#include "train/recipe/closest_name.h"

#include <algorithm>
#include <numeric>

namespace farthing::recipe {

size_t edit_distance(std::string_view a, std::string_view b) {
  // One row of the dynamic-programming table: row[j] = distance(a[0, i), b[0, j)).
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitute});
    }
  }
  return row[b.size()];
}

std::string closest_name(std::string_view name, const std::vector<std::string>& candidates) {
  const size_t max_edits = std::max<size_t>(2, name.size() / 3);
  std::string best;
  size_t best_distance = max_edits + 1;
  for (const std::string& candidate : candidates) {
    const size_t d = edit_distance(name, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  const std::string best = closest_name(name, candidates);
  return best.empty() ? std::string() : " (did you mean '" + best + "'?)";
}

std::string join_names(const std::vector<std::string>& names, std::string_view separator) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += separator;
    out += n;
  }
  return out;
}

}  // namespace farthing::recipe
