#include "demo_events.hpp"

#include <charconv>
#include <chrono>
#include <vector>

namespace rlock::cli {
namespace {

std::optional<long long> number(std::string_view s) {
  long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::vector<std::string_view> split(std::string_view line, std::size_t max_parts) {
  std::vector<std::string_view> parts;
  while (!line.empty() && parts.size() + 1 < max_parts) {
    const auto sp = line.find(' ');
    parts.push_back(line.substr(0, sp));
    if (sp == std::string_view::npos) return parts;
    line.remove_prefix(sp + 1);
  }
  if (!line.empty()) parts.push_back(line);
  return parts;
}

}  // namespace

std::string format_demo_event(const demo_event& e) {
  const std::string w = std::to_string(e.worker);
  switch (e.kind) {
    case demo_event_kind::ready:
      return "ready " + w + "\n";
    case demo_event_kind::acquired:
      return "acquired " + w + " " + std::to_string(e.seq) + " " + std::to_string(e.ns) + "\n";
    case demo_event_kind::released:
      return "released " + w + " " + std::to_string(e.seq) + " " + std::to_string(e.ns) + "\n";
    case demo_event_kind::done:
      return "done " + w + " " + std::to_string(e.seq) + "\n";
    case demo_event_kind::error: {
      std::string text = e.text;
      for (char& c : text) {
        if (c == '\n' || c == '\r') c = ' ';
      }
      return "error " + w + " " + text + "\n";
    }
  }
  return "\n";
}

std::optional<demo_event> parse_demo_event(std::string_view line) {
  const auto parts = split(line, 4);
  if (parts.size() < 2) return std::nullopt;
  const auto worker = number(parts[1]);
  if (!worker || *worker < 0 || *worker > 1'000'000) return std::nullopt;
  demo_event e;
  e.worker = static_cast<int>(*worker);
  const std::string_view kind = parts[0];
  if (kind == "ready" && parts.size() == 2) {
    e.kind = demo_event_kind::ready;
    return e;
  }
  if ((kind == "acquired" || kind == "released") && parts.size() == 4) {
    const auto seq = number(parts[2]);
    const auto ns = number(parts[3]);
    if (!seq || !ns) return std::nullopt;
    e.kind = kind == "acquired" ? demo_event_kind::acquired : demo_event_kind::released;
    e.seq = *seq;
    e.ns = *ns;
    return e;
  }
  if (kind == "done" && parts.size() == 3) {
    const auto count = number(parts[2]);
    if (!count) return std::nullopt;
    e.kind = demo_event_kind::done;
    e.seq = *count;
    return e;
  }
  if (kind == "error" && parts.size() >= 3) {
    e.kind = demo_event_kind::error;
    const std::size_t at = line.find(' ', line.find(' ') + 1);
    e.text = std::string(line.substr(at + 1));
    return e;
  }
  return std::nullopt;
}

long long steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace rlock::cli
