#include "rlock/reply.hpp"

#include <hiredis/hiredis.h>

#include <utility>

namespace rlock {

reply_type reply_view::type() const noexcept {
  if (r_ == nullptr) return reply_type::nil;
  switch (r_->type) {
    case REDIS_REPLY_STRING:
      return reply_type::string;
    case REDIS_REPLY_ARRAY:
      return reply_type::array;
    case REDIS_REPLY_INTEGER:
      return reply_type::integer;
    case REDIS_REPLY_STATUS:
      return reply_type::status;
    case REDIS_REPLY_ERROR:
      return reply_type::error;
    default:
      return reply_type::nil;
  }
}

std::string_view reply_view::str() const noexcept {
  if (r_ == nullptr || r_->str == nullptr) return {};
  switch (r_->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      return {r_->str, r_->len};
    default:
      return {};
  }
}

long long reply_view::integer() const noexcept {
  return (r_ != nullptr && r_->type == REDIS_REPLY_INTEGER) ? r_->integer : 0;
}

std::size_t reply_view::size() const noexcept {
  return (r_ != nullptr && r_->type == REDIS_REPLY_ARRAY) ? r_->elements : 0;
}

reply_view reply_view::operator[](std::size_t i) const noexcept {
  if (i >= size()) return reply_view{};
  return reply_view{r_->element[i]};
}

namespace {

// redis-cli's quoting of bulk strings: printable bytes as they are, the usual escapes, and \xHH
// for everything else, so that a value with a newline or a quote stays unambiguous.
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      default:
        if (c >= 0x20 && c < 0x7f) {
          out += static_cast<char>(c);
        } else {
          static constexpr char hex[] = "0123456789abcdef";
          out += "\\x";
          out += hex[c >> 4];
          out += hex[c & 0xf];
        }
    }
  }
  out += '"';
  return out;
}

// Nested array elements are indented under their "N) " prefix, as redis-cli does.
std::string render(const reply_view& r, std::size_t indent) {
  switch (r.type()) {
    case reply_type::nil:
      return "(nil)";
    case reply_type::integer:
      return "(integer) " + std::to_string(r.integer());
    case reply_type::error:
      return "(error) " + std::string(r.str());
    case reply_type::status:
      return std::string(r.str());
    case reply_type::string:
      return quoted(r.str());
    case reply_type::array: {
      if (r.size() == 0) return "(empty array)";
      const std::size_t width = std::to_string(r.size()).size();
      std::string out;
      for (std::size_t i = 0; i < r.size(); ++i) {
        std::string label = std::to_string(i + 1);
        label.insert(0, width - label.size(), ' ');
        label += ") ";
        if (i != 0) out += '\n' + std::string(indent, ' ');
        out += label + render(r[i], indent + label.size());
      }
      return out;
    }
  }
  return {};
}

}  // namespace

std::string reply_view::to_string() const {
  return render(*this, 0);
}

reply::reply(::redisReply* r) noexcept : reply_view(r) {}

reply::reply(reply&& other) noexcept : reply_view(std::exchange(other.r_, nullptr)) {}

reply& reply::operator=(reply&& other) noexcept {
  if (this != &other) {
    reset();
    r_ = std::exchange(other.r_, nullptr);
  }
  return *this;
}

reply::~reply() {
  reset();
}

void reply::reset() noexcept {
  // hiredis' freeReplyObject takes a non-const pointer; this object owns the tree.
  if (r_ != nullptr) freeReplyObject(const_cast<::redisReply*>(r_));  // NOLINT
  r_ = nullptr;
}

}  // namespace rlock
