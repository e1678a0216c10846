// A change request that counts once (the semaphore's and the countdown latch's scripts): each
// request carries a key of its own, "<prefix>:{<name>}:<32 hex request id>", in which its script
// stores its result; an attempt that finds the key returns that result without changing
// anything again. So the request may be sent again after a lost reply (idempotent), and a
// resend first closes the connection the lost attempt may still run on (close_unknown).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detail/core.hpp"
#include "detail/lock_keys.hpp"

namespace rlock::detail {

/// A new request key "<prefix>:{<name>}:<32 hex request id>", in the object's slot.
inline std::string once_key(std::string_view prefix, std::string_view raw_name) {
  const std::string id = random_request_id();
  std::string out = prefix_name(prefix, raw_name, 1 + id.size());
  out += ':';
  out += id;
  return out;
}

/// How long a request key must last, in ms: past every attempt of its request (each within
/// the request timeout, with the retry delays between them), and an undo sent after the last.
inline std::string once_ttl_ms(const config& cfg) {
  return std::to_string((cfg.timeout + cfg.retry_delay_max).count() * (cfg.retry_attempts + 1));
}

/// True when `r` answered its request on its only attempt: no late attempt can reach the
/// server, so nothing will read the request's key again (it may go to core::spent()).
inline bool answered_once(const exec_result& r) {
  return !r.ec && !r.earlier_attempt_may_have_run;
}

/// `then` (may be empty), wrapped so that, when the request was answered on its only attempt,
/// its own key `key` goes to core::spent() first, and with it `undone` (empty: none): the key
/// of an acquire this request undoes, which only this request could still read, to pass only
/// when no late attempt of that acquire can come either.
inline exec_callback spend_when_answered(std::shared_ptr<core> c, std::string key,
                                         exec_callback then = {}, std::string undone = {}) {
  return [c = std::move(c), key = std::move(key), undone = std::move(undone),
          then = std::move(then)](exec_result r) {
    if (answered_once(r)) {
      std::vector<std::string> spent{key};
      if (!undone.empty()) spent.push_back(undone);
      c->spent().put(std::move(spent));
    }
    if (then) then(std::move(r));
  };
}

/// Options of a request that its key makes safe to send again, routed by `route_key`.
inline exec_options once_options(std::string_view route_key) {
  exec_options o;
  o.idempotent = true;
  o.close_unknown = true;
  o.route_key = route_key;
  return o;
}

/// A completion that expects an integer reply: done(ec, value, detail), with the request's
/// error as it came, or protocol_error for a reply of another type.
inline exec_callback integer_result(
    std::function<void(std::error_code, std::int64_t, const std::string&)> done) {
  return [done = std::move(done)](const exec_result& r) {
    if (r.ec) {
      done(r.ec, 0, r.detail);
    } else if (!r.value.is_integer()) {
      done(make_error_code(errc::protocol_error), 0, "unexpected reply " + r.value.to_string());
    } else {
      done({}, r.value.integer(), {});
    }
  };
}

}  // namespace rlock::detail
