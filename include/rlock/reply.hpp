// rlock/reply.hpp: a parsed Redis reply (RESP2), as returned by client::execute.
//
// Defines:
//   rlock::reply_type  the kind of a reply
//   rlock::reply_view  a non-owning, read-only view of a reply or of one of its elements
//   rlock::reply       the owner of a whole reply tree (move-only)
//
// A reply_view is valid as long as the reply it came from. Accessors never throw: the string of
// a non-string is empty and the integer of a non-integer is 0; check type() first.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

struct redisReply;  // hiredis

namespace rlock {

/// The RESP2 types. `status` is a simple string (+OK); `error` an error reply (-ERR ...).
enum class reply_type { string, array, integer, nil, status, error };

class reply_view {
 public:
  reply_view() = default;
  explicit reply_view(const ::redisReply* r) noexcept : r_(r) {}

  reply_type type() const noexcept;
  bool is_nil() const noexcept { return type() == reply_type::nil; }
  bool is_error() const noexcept { return type() == reply_type::error; }
  bool is_integer() const noexcept { return type() == reply_type::integer; }
  bool is_string() const noexcept { return type() == reply_type::string; }
  bool is_array() const noexcept { return type() == reply_type::array; }

  /// The bytes of a string, status or error reply (binary-safe); empty otherwise.
  std::string_view str() const noexcept;
  /// The value of an integer reply; 0 otherwise.
  long long integer() const noexcept;
  /// Number of elements of an array reply; 0 otherwise.
  std::size_t size() const noexcept;
  /// Element i of an array reply; a nil view when out of range.
  reply_view operator[](std::size_t i) const noexcept;
  /// A human-readable rendering in redis-cli's style, for logs and examples.
  std::string to_string() const;

 protected:
  const ::redisReply* r_ = nullptr;  // nullptr reads as nil
};

class reply : public reply_view {
 public:
  reply() = default;
  /// Takes ownership of a reply tree made by hiredis.
  explicit reply(::redisReply* r) noexcept;
  reply(reply&& other) noexcept;
  reply& operator=(reply&& other) noexcept;
  reply(const reply&) = delete;
  reply& operator=(const reply&) = delete;
  ~reply();

 private:
  void reset() noexcept;
};

}  // namespace rlock
