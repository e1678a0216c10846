#include "duration.hpp"

#include <cstdint>
#include <cstdio>
#include <limits>

namespace rlock::cli {
namespace {

using std::chrono::milliseconds;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::optional<milliseconds> fail(std::string* why, std::string reason) {
  if (why != nullptr) *why = std::move(reason);
  return std::nullopt;
}

/// Nanoseconds per unit, 0 for an unknown unit.
std::uint64_t unit_ns(std::string_view unit) {
  if (unit == "ms") return 1'000'000ULL;
  if (unit == "s") return 1'000'000'000ULL;
  if (unit == "m") return 60'000'000'000ULL;
  if (unit == "h") return 3'600'000'000'000ULL;
  return 0;
}

}  // namespace

std::optional<milliseconds> parse_duration(std::string_view text, std::string* why) {
  constexpr std::string_view hint = " (expected e.g. 250ms, 10s, 1.5s, 2m, 1h30m)";
  if (text.empty()) return fail(why, "empty duration" + std::string(hint));
  if (text.front() == '-') return fail(why, "negative duration '" + std::string(text) + "'");
  if (text.front() == '+')
    return fail(why, "signed duration '" + std::string(text) + "'" + std::string(hint));
  const auto max_ns = static_cast<std::uint64_t>(max_duration.count()) * 1'000'000ULL;
  const std::string quoted = "'" + std::string(text) + "'";
  std::uint64_t total_ns = 0;
  std::uint64_t previous_unit_ns = 0;  // 0 before the first term
  std::size_t i = 0;
  while (i < text.size()) {
    // <digits>[.<digits>]
    if (!is_digit(text[i])) return fail(why, "malformed duration " + quoted + std::string(hint));
    std::uint64_t whole = 0;
    for (; i < text.size() && is_digit(text[i]); ++i) {
      const auto digit = static_cast<std::uint64_t>(text[i] - '0');
      if (whole > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) {
        return fail(why, "duration " + quoted + " is out of range (at most 87600h)");
      }
      whole = whole * 10 + digit;
    }
    std::uint64_t frac = 0;
    std::uint64_t frac_scale = 1;
    if (i < text.size() && text[i] == '.') {
      ++i;
      if (i == text.size() || !is_digit(text[i])) {
        return fail(why, "malformed duration " + quoted + std::string(hint));
      }
      for (; i < text.size() && is_digit(text[i]); ++i) {
        if (frac_scale == 1000) {
          return fail(why, "duration " + quoted + " has more than 3 decimal places");
        }
        frac = frac * 10 + static_cast<std::uint64_t>(text[i] - '0');
        frac_scale *= 10;
      }
    }
    // <unit>
    const std::size_t unit_start = i;
    while (i < text.size() && !is_digit(text[i]) && text[i] != '.') ++i;
    const std::string_view unit = text.substr(unit_start, i - unit_start);
    if (unit.empty()) {
      return fail(why, "duration " + quoted + " has no unit (use ms, s, m or h)");
    }
    const std::uint64_t per_unit = unit_ns(unit);
    if (per_unit == 0) {
      return fail(why, "unknown unit '" + std::string(unit) + "' in duration " + quoted +
                           " (use ms, s, m or h)");
    }
    // Go's ParseDuration adds up 1h1h to 2h; a repeated or misordered unit is more likely a
    // typo (1h1m meant, or 1m30s swapped) than a sum, so it is refused.
    if (previous_unit_ns != 0 && per_unit == previous_unit_ns) {
      return fail(why, "duration " + quoted + " repeats unit '" + std::string(unit) +
                           "' (each unit once, largest first, e.g. 1h30m)");
    }
    if (previous_unit_ns != 0 && per_unit > previous_unit_ns) {
      return fail(why, "duration " + quoted + " has unit '" + std::string(unit) +
                           "' after a smaller one (largest first, e.g. 1m30s)");
    }
    previous_unit_ns = per_unit;
    if (whole > max_ns / per_unit) {
      return fail(why, "duration " + quoted + " is out of range (at most 87600h)");
    }
    // frac < 1000 and per_unit <= 3.6e12: the product fits in 64 bits.
    const std::uint64_t term = whole * per_unit + frac * per_unit / frac_scale;
    if (term > max_ns - total_ns) {
      return fail(why, "duration " + quoted + " is out of range (at most 87600h)");
    }
    total_ns += term;
  }
  if (total_ns % 1'000'000ULL != 0) {
    return fail(why, "duration " + quoted + " is finer than the 1ms resolution");
  }
  return milliseconds(static_cast<std::int64_t>(total_ns / 1'000'000ULL));
}

std::string format_duration(milliseconds d) {
  const long long ms = d.count();
  char buf[48];
  if (ms < 0) return "-" + format_duration(milliseconds(-ms));
  if (ms < 1000) {
    std::snprintf(buf, sizeof buf, "%lldms", ms);
  } else if (ms < 60'000 && ms % 1000 == 0) {
    std::snprintf(buf, sizeof buf, "%llds", ms / 1000);
  } else if (ms < 60'000) {
    std::snprintf(buf, sizeof buf, "%lld.%llds", ms / 1000, (ms % 1000) / 100);
  } else if (ms < 3'600'000) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", ms / 60'000, (ms % 60'000) / 1000);
  } else {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", ms / 3'600'000, (ms % 3'600'000) / 60'000);
  }
  return buf;
}

std::string format_latency_ns(long long ns) {
  char buf[32];
  if (ns < 1'000'000) {
    std::snprintf(buf, sizeof buf, "%.3fms", static_cast<double>(ns) / 1e6);
  } else if (ns < 1'000'000'000) {
    std::snprintf(buf, sizeof buf, "%.2fms", static_cast<double>(ns) / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.3fs", static_cast<double>(ns) / 1e9);
  }
  return buf;
}

}  // namespace rlock::cli
