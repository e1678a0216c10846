#include "rlock/semaphore.hpp"

#include <optional>
#include <utility>

#include "detail/blocking.hpp"
#include "detail/closed_completion.hpp"
#include "detail/lock_call.hpp"
#include "detail/lock_replies.hpp"
#include "detail/object_key.hpp"
#include "detail/semaphore_ops.hpp"
#include "rlock/error.hpp"

namespace rlock {
namespace {

using detail::semaphore_change;

void check_permits(std::int64_t permits, const std::string& name) {
  if (permits < 1) {
    throw error(
        make_error_code(errc::invalid_argument),
        "semaphore '" + name + "': permits must be at least 1, not " + std::to_string(permits));
  }
}

}  // namespace

semaphore::semaphore(std::shared_ptr<detail::semaphore_service> svc, std::string name)
    : svc_(std::move(svc)),
      name_(std::move(name)),
      key_(detail::checked_key(*svc_->engine(), name_, "semaphore", max_name_size)) {}

asio::io_context::executor_type semaphore::executor() const {
  return svc_->engine()->io().get_executor();
}

void semaphore::check_blocking_allowed() const {
  svc_->engine()->check_blocking_allowed();
}

semaphore::clock::time_point semaphore::deadline_for(milliseconds wait) {
  return detail::deadline_after(wait);
}

// ---- async starts ----

void semaphore::start_acquire(clock::time_point deadline, std::int64_t permits,
                              std::stop_token stop, callback<bool> cb) {
  if (permits < 1) {
    detail::post_or_complete_closed(svc_->engine()->io(), [cb = std::move(cb)] {
      cb(make_error_code(errc::invalid_argument), false);
    });
    return;
  }
  svc_->acquire(
      key_, permits, deadline, std::move(stop),
      [cb = std::move(cb)](std::error_code ec, bool taken, const std::string&) { cb(ec, taken); });
}

void semaphore::start_release(std::int64_t permits, callback<std::int64_t> cb) {
  if (permits < 1) {
    detail::post_or_complete_closed(svc_->engine()->io(), [cb = std::move(cb)] {
      cb(make_error_code(errc::invalid_argument), 0);
    });
    return;
  }
  svc_->change(
      key_, semaphore_change::release, permits,
      [cb = std::move(cb)](std::error_code ec, std::int64_t n, const std::string&) { cb(ec, n); });
}

// ---- blocking API ----

std::int64_t semaphore::change(int what, std::int64_t permits, const char* op) {
  check_blocking_allowed();
  detail::blocking_result<detail::call_outcome<std::int64_t>> w;
  svc_->change(key_, static_cast<semaphore_change>(what), permits,
               [&w](std::error_code ec, std::int64_t n, const std::string& detail) {
                 w.set({ec, n, detail});
               });
  auto r = w.take(svc_->engine()->cfg().blocking_spin);
  throw_if(r.ec, detail::context_with(std::string(op) + " '" + name_ + "'", r.detail));
  return r.value;
}

bool semaphore::acquire_until(clock::time_point deadline, std::int64_t permits,
                              std::stop_token stop, const char* op) {
  check_permits(permits, name_);
  check_blocking_allowed();
  detail::blocking_result<detail::call_outcome<bool>> w;
  svc_->acquire(key_, permits, deadline, std::move(stop),
                [&w](std::error_code ec, bool taken, const std::string& detail) {
                  w.set({ec, taken, detail});
                });
  auto r = w.take(svc_->engine()->cfg().blocking_spin);
  throw_if(r.ec, detail::context_with(std::string(op) + " '" + name_ + "'", r.detail));
  return r.value;
}

bool semaphore::try_set_permits(std::int64_t permits) {
  if (permits < 0) {
    throw error(
        make_error_code(errc::invalid_argument),
        "semaphore '" + name_ + "': permits must not be negative, not " + std::to_string(permits));
  }
  return change(static_cast<int>(semaphore_change::init), permits, "try_set_permits") == 1;
}

std::int64_t semaphore::add_permits(std::int64_t permits) {
  return change(static_cast<int>(semaphore_change::add), permits, "add_permits");
}

std::int64_t semaphore::drain_permits() {
  return change(static_cast<int>(semaphore_change::drain), 0, "drain_permits");
}

std::int64_t semaphore::available_permits() {
  check_blocking_allowed();
  detail::blocking_result<detail::call_outcome<std::int64_t>> w;
  const std::string_view args[] = {"GET", key_};
  detail::exec_options o;
  o.idempotent = true;
  o.route_key = key_;
  svc_->engine()->exec(args, o, [&w](detail::exec_result r) {
    // The lock's counter decoding: 0 for no key, wrong_type for anything but a whole number.
    const auto [ec, n] = detail::decode_counter(r);
    detail::call_outcome<std::int64_t> out{ec, n, r.detail};
    if (ec && !r.ec) out.detail = "the key holds no integer permit count";
    w.set(std::move(out));
  });
  auto r = w.take(svc_->engine()->cfg().blocking_spin);
  throw_if(r.ec, detail::context_with("available_permits '" + name_ + "'", r.detail));
  return r.value;
}

bool semaphore::try_acquire(std::int64_t permits) {
  return acquire_until(clock::now(), permits, {}, "try_acquire");
}

bool semaphore::try_acquire_for(milliseconds wait, std::int64_t permits) {
  return acquire_until(detail::deadline_after(wait), permits, {}, "try_acquire_for");
}

bool semaphore::try_acquire_until(clock::time_point deadline, std::int64_t permits) {
  return acquire_until(deadline, permits, {}, "try_acquire_until");
}

void semaphore::acquire(std::int64_t permits, std::stop_token stop) {
  if (!acquire_until(clock::time_point::max(), permits, std::move(stop), "acquire")) {
    throw error(make_error_code(errc::timeout), "acquire '" + name_ + "': not taken");
  }
}

std::int64_t semaphore::release(std::int64_t permits) {
  check_permits(permits, name_);
  return change(static_cast<int>(semaphore_change::release), permits, "release");
}

}  // namespace rlock
