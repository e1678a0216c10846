#include "lock_before_end.hpp"

#include <chrono>

#include "demo_events.hpp"

namespace rlock::cli {

bool lock_before_end(rlock::lock& l, long long end_ns) {
  const long long left_ns = end_ns - steady_now_ns();
  if (left_ns <= 0) return false;
  const auto wait = std::chrono::ceil<std::chrono::milliseconds>(std::chrono::nanoseconds(left_ns));
  try {
    return l.try_lock(wait);
  } catch (const rlock::error& e) {
    if (e.code() == rlock::errc::timeout && steady_now_ns() >= end_ns) return false;
    throw;
  }
}

}  // namespace rlock::cli
