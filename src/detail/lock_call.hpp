// What the lock handles' calls share (lock.cpp, fenced_lock.cpp): the deadline a wait budget
// gives, and the text of what() when a blocking call fails.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace rlock::detail {

/// Now + `wait` on steady_clock: now for a wait of zero or less (a single attempt), and
/// time_point::max() for a wait too long to add without overflowing.
inline std::chrono::steady_clock::time_point deadline_after(std::chrono::milliseconds wait) {
  using time_point = std::chrono::steady_clock::time_point;
  const auto now = std::chrono::steady_clock::now();
  if (wait.count() <= 0) return now;
  if (wait >= std::chrono::duration_cast<std::chrono::milliseconds>(time_point::max() - now)) {
    return time_point::max();
  }
  return now + wait;
}

/// "<context>: <reply text>" when a reply explained the failure, else the context alone; what()
/// then appends the code's message.
inline std::string context_with(std::string context, std::string_view reply_text) {
  if (!reply_text.empty()) {
    context += ": ";
    context += reply_text;
  }
  return context;
}

}  // namespace rlock::detail
