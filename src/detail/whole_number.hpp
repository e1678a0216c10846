// parse_whole_number: a decimal integer that makes up all of a text, within bounds.
#pragma once

#include <charconv>
#include <limits>
#include <optional>
#include <string_view>
#include <system_error>

namespace rlock::detail {

/// `text` as a base-10 integer in [lo, hi]. nullopt when `text` is empty, holds anything besides
/// the number (a '+', spaces, a tail), or the number is out of range.
inline std::optional<long long> parse_whole_number(
    std::string_view text, long long lo = std::numeric_limits<long long>::min(),
    long long hi = std::numeric_limits<long long>::max()) {
  long long v = 0;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc{} || p != end || v < lo || v > hi) return std::nullopt;
  return v;
}

}  // namespace rlock::detail
