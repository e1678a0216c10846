// bench_json.hpp: the one-line JSON objects that `rlock bench --json` prints.
//
// Guarantees: json_object produces valid JSON (RFC 8259) with the members in the order they were
// added: strings through json_quote(), integers exactly, doubles in fixed notation with the
// given number of decimals (trailing zeros trimmed) and non-finite doubles as 0, nested objects
// and arrays of numbers. text() has no newline. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::cli {

/// A JSON number for `v` with at most `decimals` decimals ("0" if not finite).
std::string json_number(double v, int decimals = 3);

class json_object {
 public:
  json_object& add(std::string_view key, std::string_view value);
  json_object& add(std::string_view key, const char* value);
  json_object& add(std::string_view key, long long value);
  json_object& add(std::string_view key, std::uint64_t value);
  json_object& add(std::string_view key, int value);
  json_object& add(std::string_view key, bool value);
  json_object& add(std::string_view key, double value, int decimals = 3);
  json_object& add(std::string_view key, const json_object& value);
  json_object& add(std::string_view key, const std::vector<long long>& values);
  /// Microseconds from nanoseconds, 3 decimals.
  json_object& add_us(std::string_view key, long long ns);
  json_object& add_us(std::string_view key, const std::vector<long long>& ns);
  std::string text() const { return "{" + body_ + "}"; }

 private:
  json_object& raw(std::string_view key, const std::string& json);
  std::string body_{};
};

}  // namespace rlock::cli
