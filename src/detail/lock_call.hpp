// What the handles' calls share (lock.cpp, fenced_lock.cpp, semaphore.cpp,
// countdown_latch.cpp): the deadline a wait budget gives, what a blocking call waits for, and
// the text of what() when it fails.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <system_error>

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

/// What a blocking call waits for: the operation's code, its result, and the reply's text that
/// explains a failure.
template <class T>
struct call_outcome {
  std::error_code ec;
  T value{};
  std::string detail;
};

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
