// Internal to the public headers: converting a caller's duration to whole milliseconds.
#pragma once

#include <chrono>

namespace rlock::detail {

/// `d` rounded up to whole milliseconds, clamped to milliseconds' range: a wait such as
/// std::chrono::seconds::max() or hours::max() overflows a plain conversion (to a negative
/// count, which would mean "do not wait").
template <class Rep, class Period>
std::chrono::milliseconds saturating_ceil_ms(const std::chrono::duration<Rep, Period>& d) {
  using std::chrono::milliseconds;
  using wide = std::chrono::duration<long double, std::milli>;
  const wide w = std::chrono::duration_cast<wide>(d);
  if (w >= wide(milliseconds::max())) return milliseconds::max();
  if (w <= wide(milliseconds::min())) return milliseconds::min();
  return std::chrono::ceil<milliseconds>(d);
}

}  // namespace rlock::detail
