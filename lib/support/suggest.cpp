#include "support/suggest.h"

#include <algorithm>
#include <limits>

namespace qr {
namespace {

std::size_t distance(std::string_view a, std::string_view b) {
  // Optimal string alignment distance.
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i)
    d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j)
    d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::vector<std::string_view> tokens(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == '_' || s[i] == '.' || s[i] == '-') {
      if (i > start)
        out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

// Every word of `word` (split on '_') is a near-match of some word of the candidate, which has
// at most two words more: catches `tensor_paralel_size` for `tensor_model_parallel_size`.
bool words_match(std::string_view word, std::string_view candidate) {
  const auto w = tokens(word);
  const auto c = tokens(candidate);
  if (w.empty() || c.size() < w.size() || c.size() > w.size() + 2)
    return false;
  return std::all_of(w.begin(), w.end(), [&](std::string_view t) {
    return std::any_of(c.begin(), c.end(), [&](std::string_view u) {
      return distance(t, u) <= (t.size() > 5 ? 2u : 1u);
    });
  });
}

// Among candidates at the same distance, the likelier typo first: one that only adds or drops
// letters (`tpp` is `tp` typed with a doubled key, not `pp`), then the longer shared prefix, then
// the alphabetical first, so that the choice never depends on the candidates' order.
bool likelier(std::string_view word, std::size_t d, const std::string& a, const std::string& b) {
  auto indel_only = [&](const std::string& c) {
    return (word.size() > c.size() ? word.size() - c.size() : c.size() - word.size()) == d;
  };
  auto prefix = [&](const std::string& c) {
    std::size_t i = 0;
    while (i < word.size() && i < c.size() && word[i] == c[i])
      ++i;
    return i;
  };
  if (indel_only(a) != indel_only(b))
    return indel_only(a);
  if (prefix(a) != prefix(b))
    return prefix(a) > prefix(b);
  return a < b;
}

} // namespace

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  // A candidate whose every word the input nearly spells wins (`tensor_paralel_size` ->
  // `tensor_model_parallel_size`); otherwise the nearest within about one edit per three letters.
  // Text far longer than any name gets none (the distance table is length x length).
  if (word.size() > 256)
    return {};
  std::string best_words, best_edit;
  std::size_t words_d = std::numeric_limits<std::size_t>::max();
  std::size_t edit_d = std::numeric_limits<std::size_t>::max();
  for (const std::string& c : candidates) {
    const std::size_t d = distance(word, c);
    if (words_match(word, c) &&
        (d < words_d || (d == words_d && likelier(word, d, c, best_words)))) {
      words_d = d;
      best_words = c;
    }
    if (d < edit_d || (d == edit_d && likelier(word, d, c, best_edit))) {
      edit_d = d;
      best_edit = c;
    }
  }
  if (!best_words.empty())
    return best_words;
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  return edit_d <= limit ? best_edit : std::string{};
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string m = closest_match(word, candidates);
  return m.empty() ? std::string{} : " (did you mean '" + m + "'?)";
}

} // namespace qr
