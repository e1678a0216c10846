#include "rlock/reply.hpp"

#include <hiredis/hiredis.h>

#include <utility>

namespace rlock {

reply_type reply_view::type() const noexcept {
  if (r_ == nullptr) return reply_type::nil;
  switch (r_->type) {
    case REDIS_REPLY_STRING: return reply_type::string;
    case REDIS_REPLY_ARRAY: return reply_type::array;
    case REDIS_REPLY_INTEGER: return reply_type::integer;
    case REDIS_REPLY_STATUS: return reply_type::status;
    case REDIS_REPLY_ERROR: return reply_type::error;
    default: return reply_type::nil;
  }
}

std::string_view reply_view::str() const noexcept {
  if (r_ == nullptr || r_->str == nullptr) return {};
  switch (r_->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR: return {r_->str, r_->len};
    default: return {};
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

std::string reply_view::to_string() const {
  switch (type()) {
    case reply_type::nil: return "(nil)";
    case reply_type::integer: return "(integer) " + std::to_string(integer());
    case reply_type::error: return "(error) " + std::string(str());
    case reply_type::status: return std::string(str());
    case reply_type::string: return "\"" + std::string(str()) + "\"";
    case reply_type::array: {
      if (size() == 0) return "(empty array)";
      std::string out;
      for (std::size_t i = 0; i < size(); ++i) {
        if (i != 0) out += '\n';
        out += std::to_string(i + 1) + ") " + (*this)[i].to_string();
      }
      return out;
    }
  }
  return {};
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

reply::~reply() { reset(); }

void reply::reset() noexcept {
  // hiredis' freeReplyObject takes a non-const pointer; this object owns the tree.
  if (r_ != nullptr) freeReplyObject(const_cast<::redisReply*>(r_));  // NOLINT
  r_ = nullptr;
}

}  // namespace rlock
