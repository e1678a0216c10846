// duration.hpp: the duration syntax of every rlock option that takes a time.
//
// Syntax: one or more <number><unit> terms written together, e.g. 250ms, 10s, 2m, 1h, 1.5s,
// 1m30s. Units: ms, s, m, h, each at most once and largest first. A number is decimal digits with
// an optional fraction of at most three digits. The total must be a whole number of milliseconds,
// at most max_duration (87600h, ten years). Zero ("0s") is valid syntax; options that need a
// positive value say so.
//
// Rejected, with a one-line reason: empty text, a sign, a number without unit, an unknown unit,
// spaces or any other character, a repeated or misordered unit (1h1h, 30s1m), sub-millisecond
// values (1.5ms) and overflow.
//
// Pure functions without state: safe from any thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace rlock::cli {

inline constexpr std::chrono::milliseconds max_duration = std::chrono::hours(87600);

/// The duration, or std::nullopt with *why (if given) set to the reason.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text,
                                                        std::string* why = nullptr);

/// A short human form for messages: 250ms, 1.5s, 2m05s, 1h02m.
std::string format_duration(std::chrono::milliseconds d);

/// A latency with sub-millisecond detail: 0.412ms, 12.34ms, 1.250s.
std::string format_latency_ns(long long ns);

}  // namespace rlock::cli
