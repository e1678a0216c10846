#include "rlock/permit_expirable_semaphore.hpp"

#include <utility>

#include "detail/blocking.hpp"
#include "detail/closed_completion.hpp"
#include "detail/expirable_semaphore_ops.hpp"
#include "detail/lock_call.hpp"
#include "detail/object_key.hpp"
#include "rlock/error.hpp"

namespace rlock {
namespace {

using detail::expirable_inspect;
using milliseconds = std::chrono::milliseconds;

// Why the arguments are refused, or "" when they are fine.
std::string bad_permits(std::int64_t permits) {
  if (permits < 1 || permits > permit_expirable_semaphore::max_permits_per_call) {
    return "permits must be 1 to " +
           std::to_string(permit_expirable_semaphore::max_permits_per_call) + ", not " +
           std::to_string(permits);
  }
  return {};
}

// The ids' bytes, or nullopt (with `why` set) when one is not a 32-character hex id.
std::optional<std::vector<std::string>> id_bytes(const std::vector<std::string>& ids,
                                                 std::string& why) {
  if (const std::string b = bad_permits(static_cast<std::int64_t>(ids.size())); !b.empty()) {
    why = "ids: " + b;
    return std::nullopt;
  }
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (const auto& id : ids) {
    auto bytes = detail::permit_id_bytes(id);
    if (!bytes) {
      why = "a permit id is 32 hex characters, not '" + id.substr(0, 64) + "'";
      return std::nullopt;
    }
    out.push_back(std::move(*bytes));
  }
  return out;
}

std::vector<std::string> hex_ids(const std::vector<std::string>& bytes) {
  std::vector<std::string> out;
  out.reserve(bytes.size());
  for (const auto& b : bytes) out.push_back(detail::permit_id_hex(b));
  return out;
}

}  // namespace

permit_expirable_semaphore::permit_expirable_semaphore(
    std::shared_ptr<detail::expirable_semaphore_service> svc, std::string name)
    : svc_(std::move(svc)),
      name_(std::move(name)),
      key_(detail::checked_key(*svc_->engine(), name_, "permit-expirable semaphore",
                               max_name_size)) {}

asio::io_context::executor_type permit_expirable_semaphore::executor() const {
  return svc_->engine()->io().get_executor();
}

void permit_expirable_semaphore::check_blocking_allowed() const {
  svc_->engine()->check_blocking_allowed();
}

// ---- async starts ----

void permit_expirable_semaphore::start_acquire(clock::time_point deadline,
                                               std::optional<milliseconds> lease,
                                               std::int64_t permits, std::stop_token stop,
                                               callback<std::vector<permit_id>> cb) {
  if (!bad_permits(permits).empty() || !detail::bad_expirable_lease(lease).empty()) {
    detail::post_or_complete_closed(svc_->engine()->io(), [cb = std::move(cb)] {
      cb(make_error_code(errc::invalid_argument), {});
    });
    return;
  }
  svc_->acquire(key_, permits, lease, deadline, std::move(stop),
                [cb = std::move(cb)](std::error_code ec, const std::vector<std::string>& ids,
                                     const std::string&) { cb(ec, hex_ids(ids)); });
}

void permit_expirable_semaphore::start_release(const std::vector<permit_id>& ids,
                                               callback<bool> cb) {
  std::string why;
  auto bytes = id_bytes(ids, why);
  if (!bytes) {
    detail::post_or_complete_closed(svc_->engine()->io(), [cb = std::move(cb)] {
      cb(make_error_code(errc::invalid_argument), false);
    });
    return;
  }
  svc_->release(key_, std::move(*bytes),
                [cb = std::move(cb)](std::error_code ec, std::int64_t r, const std::string&) {
                  cb(ec, !ec && r == 1);
                });
}

void permit_expirable_semaphore::start_update(const permit_id& id,
                                              std::optional<milliseconds> lease,
                                              callback<bool> cb) {
  std::string why;
  auto bytes = id_bytes({id}, why);
  if (!bytes || !detail::bad_expirable_lease(lease).empty()) {
    detail::post_or_complete_closed(svc_->engine()->io(), [cb = std::move(cb)] {
      cb(make_error_code(errc::invalid_argument), false);
    });
    return;
  }
  svc_->inspect(key_, expirable_inspect::update, bytes->front(), detail::expirable_lease_arg(lease),
                [cb = std::move(cb)](std::error_code ec, std::int64_t r, const std::string&) {
                  cb(ec, !ec && r == 1);
                });
}

// ---- blocking API ----

std::vector<permit_expirable_semaphore::permit_id> permit_expirable_semaphore::acquire_until(
    clock::time_point deadline, std::optional<milliseconds> lease, std::int64_t permits,
    std::stop_token stop, const char* op) {
  std::string why = bad_permits(permits);
  if (why.empty()) why = detail::bad_expirable_lease(lease);
  if (!why.empty()) {
    throw error(make_error_code(errc::invalid_argument),
                std::string(op) + " '" + name_ + "': " + why);
  }
  check_blocking_allowed();
  detail::blocking_result<detail::call_outcome<std::vector<std::string>>> w;
  svc_->acquire(key_, permits, lease, deadline, std::move(stop),
                [&w](std::error_code ec, std::vector<std::string> ids, const std::string& detail) {
                  w.set({ec, std::move(ids), detail});
                });
  auto r = w.take(svc_->engine()->cfg().blocking_spin);
  throw_if(r.ec, detail::context_with(std::string(op) + " '" + name_ + "'", r.detail));
  return hex_ids(r.value);
}

std::int64_t permit_expirable_semaphore::inspect(int what, const permit_id& id,
                                                 std::optional<milliseconds> lease, const char* op,
                                                 std::int64_t total) {
  std::string bytes;
  if (!id.empty() || what == static_cast<int>(expirable_inspect::lease) ||
      what == static_cast<int>(expirable_inspect::update)) {
    std::string why;
    auto b = id_bytes({id}, why);
    if (why.empty()) why = detail::bad_expirable_lease(lease);
    if (!b || !why.empty()) {
      throw error(make_error_code(errc::invalid_argument),
                  std::string(op) + " '" + name_ + "': " + why);
    }
    bytes = std::move(b->front());
  }
  check_blocking_allowed();
  detail::blocking_result<detail::call_outcome<std::int64_t>> w;
  const std::string number = what == static_cast<int>(expirable_inspect::set)
                                 ? std::to_string(total)
                                 : detail::expirable_lease_arg(lease);
  svc_->inspect(key_, static_cast<expirable_inspect>(what), bytes, number,
                [&w](std::error_code ec, std::int64_t n, const std::string& detail) {
                  w.set({ec, n, detail});
                });
  auto r = w.take(svc_->engine()->cfg().blocking_spin);
  throw_if(r.ec, detail::context_with(std::string(op) + " '" + name_ + "'", r.detail));
  return r.value;
}

std::int64_t permit_expirable_semaphore::set(bool init, std::int64_t permits, const char* op) {
  check_blocking_allowed();
  detail::blocking_result<detail::call_outcome<std::int64_t>> w;
  svc_->set(key_, init, permits, [&w](std::error_code ec, std::int64_t n, const std::string& d) {
    w.set({ec, n, d});
  });
  auto r = w.take(svc_->engine()->cfg().blocking_spin);
  throw_if(r.ec, detail::context_with(std::string(op) + " '" + name_ + "'", r.detail));
  return r.value;
}

bool permit_expirable_semaphore::try_set_permits(std::int64_t permits) {
  if (permits < 0) {
    throw error(make_error_code(errc::invalid_argument),
                "try_set_permits '" + name_ + "': permits must not be negative, not " +
                    std::to_string(permits));
  }
  return set(true, permits, "try_set_permits") == 1;
}

std::int64_t permit_expirable_semaphore::add_permits(std::int64_t permits) {
  return set(false, permits, "add_permits");
}

std::int64_t permit_expirable_semaphore::available_permits() {
  return inspect(static_cast<int>(expirable_inspect::available), {}, std::nullopt,
                 "available_permits");
}

std::int64_t permit_expirable_semaphore::acquired_permits() {
  return inspect(static_cast<int>(expirable_inspect::acquired), {}, std::nullopt,
                 "acquired_permits");
}

std::int64_t permit_expirable_semaphore::total_permits() {
  return inspect(static_cast<int>(expirable_inspect::permits), {}, std::nullopt, "total_permits");
}

std::int64_t permit_expirable_semaphore::set_permits(std::int64_t permits) {
  if (permits < 0) {
    throw error(make_error_code(errc::invalid_argument),
                "set_permits '" + name_ + "': permits must not be negative, not " +
                    std::to_string(permits));
  }
  return inspect(static_cast<int>(expirable_inspect::set), {}, std::nullopt, "set_permits",
                 permits);
}

std::optional<permit_expirable_semaphore::permit_id> permit_expirable_semaphore::try_acquire(
    std::optional<milliseconds> lease) {
  auto ids = acquire_until(clock::now(), lease, 1, {}, "try_acquire");
  if (ids.empty()) return std::nullopt;
  return std::move(ids.front());
}

std::optional<permit_expirable_semaphore::permit_id> permit_expirable_semaphore::try_acquire_for(
    milliseconds wait, std::optional<milliseconds> lease) {
  auto ids = acquire_until(detail::deadline_after(wait), lease, 1, {}, "try_acquire_for");
  if (ids.empty()) return std::nullopt;
  return std::move(ids.front());
}

std::vector<permit_expirable_semaphore::permit_id> permit_expirable_semaphore::try_acquire_for(
    milliseconds wait, std::optional<milliseconds> lease, std::int64_t permits) {
  return acquire_until(detail::deadline_after(wait), lease, permits, {}, "try_acquire_for");
}

permit_expirable_semaphore::permit_id permit_expirable_semaphore::acquire(
    std::optional<milliseconds> lease, std::stop_token stop) {
  auto ids = acquire_until(clock::time_point::max(), lease, 1, std::move(stop), "acquire");
  if (ids.empty())
    throw error(make_error_code(errc::timeout), "acquire '" + name_ + "': not taken");
  return std::move(ids.front());
}

bool permit_expirable_semaphore::try_release(const std::vector<permit_id>& ids) {
  std::string why;
  auto bytes = id_bytes(ids, why);
  if (!bytes) {
    throw error(make_error_code(errc::invalid_argument), "try_release '" + name_ + "': " + why);
  }
  check_blocking_allowed();
  detail::blocking_result<detail::call_outcome<std::int64_t>> w;
  svc_->release(key_, std::move(*bytes),
                [&w](std::error_code ec, std::int64_t n, const std::string& detail) {
                  w.set({ec, n, detail});
                });
  auto r = w.take(svc_->engine()->cfg().blocking_spin);
  throw_if(r.ec, detail::context_with("try_release '" + name_ + "'", r.detail));
  return r.value == 1;
}

bool permit_expirable_semaphore::try_release(const permit_id& id) {
  return try_release(std::vector<permit_id>{id});
}

void permit_expirable_semaphore::release(const permit_id& id) {
  if (!try_release(id)) {
    throw error(make_error_code(errc::not_owner),
                "release '" + name_ + "': permit " + id +
                    " was not held (released before, or its lease had ended)");
  }
}

bool permit_expirable_semaphore::update_lease_time(const permit_id& id,
                                                   std::optional<milliseconds> lease) {
  return inspect(static_cast<int>(expirable_inspect::update), id, lease, "update_lease_time") == 1;
}

std::optional<milliseconds> permit_expirable_semaphore::lease_time(const permit_id& id) {
  const std::int64_t ms =
      inspect(static_cast<int>(expirable_inspect::lease), id, std::nullopt, "lease_time");
  if (ms == -2) return std::nullopt;
  if (ms == -1) return milliseconds::max();
  return milliseconds(std::max<std::int64_t>(ms, 0));
}

}  // namespace rlock
