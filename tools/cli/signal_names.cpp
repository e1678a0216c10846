#include "signal_names.hpp"

#include <charconv>
#include <csignal>
#include <cstring>

namespace rlock::cli {

std::optional<int> parse_signal(std::string_view text) {
  if (text.empty()) return std::nullopt;
  const int last = SIGRTMIN - 1;
  if (text.front() >= '0' && text.front() <= '9') {
    int n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc{} || end != text.data() + text.size() || n < 1 || n > last) {
      return std::nullopt;
    }
    return n;
  }
  std::string upper;
  for (char c : text) upper += (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
  if (upper.starts_with("SIG")) upper.erase(0, 3);
  for (int s = 1; s <= last; ++s) {
    const char* abbrev = ::sigabbrev_np(s);
    if (abbrev != nullptr && upper == abbrev) return s;
  }
  return std::nullopt;
}

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace rlock::cli
