#include "detail/lock_replies.hpp"

#include <string_view>

#include "detail/whole_number.hpp"

namespace rlock::detail {
namespace {

std::error_code script_error() {
  return make_error_code(errc::script_error);
}

}  // namespace

acquire_fsm::reply decode_acquire(const exec_result& r, long long& server_ms) {
  acquire_fsm::reply out;
  server_ms = -1;
  if (r.ec) {
    out.ec = r.ec;
    return out;
  }
  const reply_view v = r.value;
  if (v.is_nil()) {
    out.acquired = true;
  } else if (v.is_integer() && v.integer() >= -1) {
    out.ttl_ms = v.integer();
  } else if (v.is_array() && v.size() == 3 && v[0].is_integer() && v[0].integer() >= -1 &&
             v[1].is_integer() && v[1].integer() > 0 && v[2].is_integer() &&
             (v[2].integer() == 0 || v[2].integer() == 1)) {
    out.ttl_ms = v[0].integer();
    server_ms = v[1].integer();
    out.holder_hands_off = v[2].integer() == 1;
  } else {
    out.ec = script_error();
  }
  return out;
}

unlock_outcome decode_unlock(const exec_result& r) {
  unlock_outcome out;
  if (r.ec) {
    out.ec = r.ec;
    return out;
  }
  const reply_view v = r.value;
  if (v.is_nil()) {
    out.result = unlock_result::not_owner;
  } else if (v.is_integer() && v.integer() == 1) {
    out.result = unlock_result::released;
  } else if (v.is_integer() && v.integer() == 0) {
    out.result = unlock_result::still_held;
  } else {
    out.ec = script_error();
  }
  return out;
}

std::optional<bool> decode_force_unlock(const exec_result& r, std::error_code& ec) {
  ec = r.ec;
  if (ec) return std::nullopt;
  const reply_view v = r.value;
  if (v.is_integer() && (v.integer() == 0 || v.integer() == 1)) return v.integer() == 1;
  ec = script_error();
  return std::nullopt;
}

std::optional<std::vector<bool>> decode_renew(const exec_result& r, std::size_t keys) {
  if (r.ec) return std::nullopt;
  const reply_view v = r.value;
  if (!v.is_array() || v.size() != keys) return std::nullopt;
  std::vector<bool> out;
  out.reserve(keys);
  for (std::size_t i = 0; i < keys; ++i) {
    const reply_view e = v[i];
    if (!e.is_integer() || (e.integer() != 0 && e.integer() != 1)) return std::nullopt;
    out.push_back(e.integer() == 1);
  }
  return out;
}

std::optional<refresh_outcome> decode_refresh(const exec_result& r, std::size_t waiters) {
  if (r.ec) return std::nullopt;
  const reply_view v = r.value;
  if (!v.is_array() || v.size() != waiters + 1 || !v[0].is_integer() || v[0].integer() <= 0) {
    return std::nullopt;
  }
  refresh_outcome out;
  out.server_ms = v[0].integer();
  for (std::size_t i = 1; i <= waiters; ++i) {
    const reply_view e = v[i];
    if (!e.is_integer() || e.integer() < 0 || e.integer() > 3) return std::nullopt;
    out.status.push_back(static_cast<int>(e.integer()));
  }
  return out;
}

std::pair<std::error_code, long long> decode_counter(const exec_result& r) {
  if (r.ec || !r.value.is_string()) return {r.ec, 0};
  const auto n = parse_whole_number(r.value.str());
  if (!n) return {make_error_code(errc::wrong_type), 0};
  return {std::error_code{}, *n};
}

}  // namespace rlock::detail
