#include "bench_json.hpp"

#include <cmath>
#include <cstdio>

#include "json_text.hpp"

namespace rlock::cli {

std::string json_number(double v, int decimals) {
  if (!std::isfinite(v)) return "0";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") return "0";
  return s;
}

json_object& json_object::raw(std::string_view key, const std::string& json) {
  if (!body_.empty()) body_ += ',';
  body_ += json_quote(key);
  body_ += ':';
  body_ += json;
  return *this;
}

json_object& json_object::add(std::string_view key, std::string_view value) {
  return raw(key, json_quote(value));
}
json_object& json_object::add(std::string_view key, const char* value) {
  return raw(key, json_quote(value));
}
json_object& json_object::add(std::string_view key, long long value) {
  return raw(key, std::to_string(value));
}
json_object& json_object::add(std::string_view key, std::uint64_t value) {
  return raw(key, std::to_string(value));
}
json_object& json_object::add(std::string_view key, int value) {
  return raw(key, std::to_string(value));
}
json_object& json_object::add(std::string_view key, bool value) {
  return raw(key, value ? "true" : "false");
}
json_object& json_object::add(std::string_view key, double value, int decimals) {
  return raw(key, json_number(value, decimals));
}
json_object& json_object::add(std::string_view key, const json_object& value) {
  return raw(key, value.text());
}
json_object& json_object::add(std::string_view key, const std::vector<long long>& values) {
  std::string a = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) a += ',';
    a += std::to_string(values[i]);
  }
  return raw(key, a + "]");
}
json_object& json_object::add_us(std::string_view key, long long ns) {
  return raw(key, json_number(static_cast<double>(ns) / 1e3));
}
json_object& json_object::add_us(std::string_view key, const std::vector<long long>& ns) {
  std::string a = "[";
  for (std::size_t i = 0; i < ns.size(); ++i) {
    if (i > 0) a += ',';
    a += json_number(static_cast<double>(ns[i]) / 1e3);
  }
  return raw(key, a + "]");
}

}  // namespace rlock::cli
