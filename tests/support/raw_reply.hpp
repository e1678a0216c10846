// raw_reply: an owning, copyable value for one RESP2 reply, as seen by the test harness.
//
// Guarantees: `str` holds the exact bytes of string, status and error replies (binary-safe);
// `integer` is set only for kind::integer; `elements` only for kind::array. A default-constructed
// reply is nil. Two replies compare equal when type and contents are equal.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace rlock::test {

struct raw_reply {
  enum class kind { string, status, error, integer, nil, array };

  kind type = kind::nil;
  std::string str{};
  long long integer = 0;
  std::vector<raw_reply> elements{};

  bool is_string() const { return type == kind::string; }
  bool is_status() const { return type == kind::status; }
  bool is_error() const { return type == kind::error; }
  bool is_integer() const { return type == kind::integer; }
  bool is_nil() const { return type == kind::nil; }
  bool is_array() const { return type == kind::array; }

  // The reply as text, in the style of `redis-cli --raw` but unambiguous for the common cases:
  // string/status -> the bytes; integer -> decimal; nil -> "(nil)"; error -> "(error) <message>";
  // array -> the elements' text joined by '\n' (nested arrays are flattened; empty -> "").
  std::string text() const;

  // For an array of alternating field/value strings (HGETALL, CONFIG GET): the pairs as a map.
  // Throws std::logic_error if the reply is not such an array.
  std::map<std::string, std::string> as_map() const;

  bool operator==(const raw_reply&) const = default;

  static raw_reply make_string(std::string s) { return {kind::string, std::move(s), 0, {}}; }
  static raw_reply make_status(std::string s) { return {kind::status, std::move(s), 0, {}}; }
  static raw_reply make_error(std::string s) { return {kind::error, std::move(s), 0, {}}; }
  static raw_reply make_integer(long long v) { return {kind::integer, {}, v, {}}; }
  static raw_reply make_nil() { return {}; }
  static raw_reply make_array(std::vector<raw_reply> e) {
    return {kind::array, {}, 0, std::move(e)};
  }
};

const char* to_string(raw_reply::kind k);

// Debug form for test failure messages, e.g. [(integer) 1, "a\x00b", (nil), (error) ERR x].
std::ostream& operator<<(std::ostream& out, const raw_reply& reply);

}  // namespace rlock::test
