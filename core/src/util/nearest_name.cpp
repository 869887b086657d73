#include "tilefilter/util/nearest_name.hpp"

#include <algorithm>
#include <cctype>

namespace tf {

int edit_distance(std::string_view a, std::string_view b) {
  auto same = [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  };
  // Optimal string alignment: Levenshtein plus the swap of two neighbours ("aplpy"), three rows.
  const std::size_t n = b.size();
  std::vector<int> before(n + 1), prev(n + 1), row(n + 1);
  for (std::size_t j = 0; j <= n; ++j) prev[j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    row[0] = static_cast<int>(i);
    for (std::size_t j = 1; j <= n; ++j) {
      const int cost = same(a[i - 1], b[j - 1]) ? 0 : 1;
      row[j] = std::min({prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1]))
        row[j] = std::min(row[j], before[j - 2] + 1);
    }
    before.swap(prev);
    prev.swap(row);
  }
  return prev[n];
}

std::string nearest_name(std::string_view word, const std::vector<std::string>& names) {
  const int limit = std::clamp(static_cast<int>(word.size()) / 3, 1, 3);
  std::string best;
  int best_distance = limit + 1;
  for (const auto& name : names) {
    const int d = edit_distance(word, name);
    if (d == 0) return {};
    if (d < best_distance) {
      best_distance = d;
      best = name;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& names) {
  return suggestion(nearest_name(word, names));
}

std::string suggestion(std::string_view name) {
  return name.empty() ? std::string() : "; did you mean '" + std::string(name) + "'?";
}

}  // namespace tf
