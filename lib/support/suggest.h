// "Did you mean" hints for unknown names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace qr {

// The candidate closest to `word` by edit distance (transpositions count once), if close enough
// to be a plausible typo; empty otherwise.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

} // namespace qr
