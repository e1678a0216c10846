#include "rlock/countdown_latch.hpp"

#include <utility>

#include "detail/blocking.hpp"
#include "detail/countdown_latch_ops.hpp"
#include "detail/lock_call.hpp"
#include "detail/object_key.hpp"
#include "rlock/error.hpp"

namespace rlock {
namespace {

using detail::countdown_change;

}  // namespace

countdown_latch::countdown_latch(std::shared_ptr<detail::countdown_latch_service> svc,
                                 std::string name)
    : svc_(std::move(svc)),
      name_(std::move(name)),
      key_(detail::checked_key(*svc_->engine(), name_, "countdown latch", max_name_size)) {}

asio::io_context::executor_type countdown_latch::executor() const {
  return svc_->engine()->io().get_executor();
}

countdown_latch::clock::time_point countdown_latch::deadline_for(milliseconds wait) {
  return detail::deadline_after(wait);
}

// ---- async starts ----

void countdown_latch::start_await(clock::time_point deadline, std::stop_token stop,
                                  callback<bool> cb) {
  svc_->await(key_, deadline, std::move(stop),
              [cb = std::move(cb)](std::error_code ec, bool reached, const std::string&) {
                cb(ec, reached);
              });
}

void countdown_latch::start_count_down(callback<std::int64_t> cb) {
  svc_->change(
      key_, countdown_change::count_down, 0,
      [cb = std::move(cb)](std::error_code ec, std::int64_t n, const std::string&) { cb(ec, n); });
}

// ---- blocking API ----

std::int64_t countdown_latch::change(int what, std::int64_t count, const char* op) {
  svc_->engine()->check_blocking_allowed();
  detail::blocking_result<detail::call_outcome<std::int64_t>> w;
  svc_->change(key_, static_cast<countdown_change>(what), count,
               [&w](std::error_code ec, std::int64_t n, const std::string& detail) {
                 w.set({ec, n, detail});
               });
  auto r = w.take(svc_->engine()->cfg().blocking_spin);
  throw_if(r.ec, detail::context_with(std::string(op) + " '" + name_ + "'", r.detail));
  return r.value;
}

bool countdown_latch::await_impl(clock::time_point deadline, std::stop_token stop, const char* op) {
  svc_->engine()->check_blocking_allowed();
  detail::blocking_result<detail::call_outcome<bool>> w;
  svc_->await(key_, deadline, std::move(stop),
              [&w](std::error_code ec, bool reached, const std::string& detail) {
                w.set({ec, reached, detail});
              });
  auto r = w.take(svc_->engine()->cfg().blocking_spin);
  throw_if(r.ec, detail::context_with(std::string(op) + " '" + name_ + "'", r.detail));
  return r.value;
}

bool countdown_latch::try_set_count(std::int64_t count) {
  if (count < 0) {
    throw error(make_error_code(errc::invalid_argument),
                "countdown latch '" + name_ + "': the count must not be negative, not " +
                    std::to_string(count));
  }
  return change(static_cast<int>(countdown_change::init), count, "try_set_count") == 1;
}

std::int64_t countdown_latch::count_down() {
  return change(static_cast<int>(countdown_change::count_down), 0, "count_down");
}

bool countdown_latch::remove() {
  return change(static_cast<int>(countdown_change::remove), 0, "remove") == 1;
}

std::int64_t countdown_latch::count() {
  svc_->engine()->check_blocking_allowed();
  detail::blocking_result<detail::call_outcome<std::int64_t>> w;
  svc_->count(key_, [&w](std::error_code ec, std::int64_t n, const std::string& detail) {
    w.set({ec, n, detail});
  });
  auto r = w.take(svc_->engine()->cfg().blocking_spin);
  throw_if(r.ec, detail::context_with("count '" + name_ + "'", r.detail));
  return r.value;
}

bool countdown_latch::await_for(milliseconds wait) {
  return await_impl(detail::deadline_after(wait), {}, "await_for");
}

bool countdown_latch::await_until(clock::time_point deadline) {
  return await_impl(deadline, {}, "await_until");
}

void countdown_latch::await(std::stop_token stop) {
  if (!await_impl(clock::time_point::max(), std::move(stop), "await")) {
    throw error(make_error_code(errc::timeout), "await '" + name_ + "': not reached");
  }
}

}  // namespace rlock
