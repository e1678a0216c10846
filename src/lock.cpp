#include "rlock/lock.hpp"

#include <atomic>
#include <string_view>

#include "detail/blocking.hpp"
#include "detail/closed_completion.hpp"
#include "detail/connection.hpp"
#include "detail/lock_call.hpp"
#include "detail/lock_replies.hpp"
#include "detail/lock_service.hpp"
#include "detail/object_key.hpp"

namespace rlock {
namespace {

using detail::clock;

// Leases beyond this are refused: PEXPIRE with an absolute time past the 64-bit ms range fails
// server-side with an obscure error; a century is longer than any sensible lease.
constexpr std::chrono::milliseconds max_lease = std::chrono::hours(24 * 365 * 100);

struct acquire_result {
  std::error_code ec;
  bool acquired = false;
};

}  // namespace

namespace {
std::atomic<std::uint64_t> next_owner_id{reserved_owner_ids + 1};
}  // namespace

std::uint64_t new_owner_id() noexcept {
  return next_owner_id.fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t this_thread_owner_id() noexcept {
  thread_local const std::uint64_t id = new_owner_id();
  return id;
}

reentrant_lock::reentrant_lock(std::shared_ptr<detail::lock_service> svc, std::string name)
    : svc_(std::move(svc)),
      name_(std::move(name)),
      key_(detail::checked_key(*svc_->engine(), name_, "lock", max_name_size)) {}

reentrant_lock::reentrant_lock(std::shared_ptr<detail::lock_service> svc, std::string name,
                               spin_backoff backoff)
    : reentrant_lock(std::move(svc), std::move(name)) {
  if (backoff.initial_delay < std::chrono::milliseconds(1) ||
      backoff.max_delay < backoff.initial_delay || backoff.multiplier < 1) {
    throw error(errc::invalid_argument,
                "spin_backoff: initial_delay must be at least 1 ms, max_delay at least "
                "initial_delay, multiplier at least 1");
  }
  spin_ = backoff;
  kind_ = lock_kind::spin;
}

reentrant_lock::reentrant_lock(std::shared_ptr<detail::lock_service> svc, std::string name,
                               lock_kind kind)
    : reentrant_lock(std::move(svc), std::move(name)) {
  kind_ = kind;
  if (kind == lock_kind::spin) spin_ = spin_backoff{};
}

asio::io_context::executor_type reentrant_lock::executor() const {
  return svc_->engine()->io().get_executor();
}

std::chrono::microseconds reentrant_lock::blocking_spin() const {
  return svc_->engine()->cfg().blocking_spin;
}

void reentrant_lock::check_blocking_allowed() const {
  svc_->engine()->check_blocking_allowed();
}

// ---- async starts ----

void reentrant_lock::start_acquire(std::uint64_t owner, acquire_options o, callback<bool> cb,
                                   detail::call_mode mode, const detail::unconfirmed_try* again) {
  if (o.lease && (*o.lease > max_lease)) {
    detail::post_or_complete_closed(svc_->engine()->io(), [cb = std::move(cb)] {
      cb(make_error_code(errc::invalid_argument), false);
    });
    return;
  }
  detail::acquire_request r;
  r.raw_name = key_;
  r.owner_id = owner;
  if (o.lease && o.lease->count() > 0) r.lease = *o.lease;
  if (o.wait) {
    r.single_attempt = o.wait->count() <= 0;
    // A single attempt has no wait budget: its one script, resends included, is bounded by one
    // request timeout (not retry_attempts of them: a paused server would hold try_lock() for
    // 4 x 3 s with the defaults).
    r.deadline = detail::deadline_after(r.single_attempt ? svc_->engine()->cfg().timeout : *o.wait);
  }
  r.stop = std::move(o.stop);
  r.error_detail = o.error_detail;
  if (again != nullptr) {
    r.unconfirmed_tries = again->tries;
    r.unconfirmed_detail = again->detail;
    r.not_before = again->not_before;
  }
  r.kind = kind_;
  r.spin = spin_;
  if (kind_ == lock_kind::fair) {
    // Redisson's threadWaitTime: the wait, or fair_lock_wait_timeout for a wait without end or
    // a single attempt (which never queues).
    const auto& cfg = svc_->engine()->cfg();
    r.fair_wait = o.wait && o.wait->count() > 0 ? *o.wait : cfg.fair_lock_wait_timeout;
  }
  // A posted call's reply is read by the I/O thread, which runs its completion too: a polling
  // caller that read it would handle this lock's state on its own core (blocking.hpp).
  r.completes_on_caller = mode == detail::call_mode::blocking_on_caller;
  if (mode == detail::call_mode::blocking_posted) {
    detail::post_or_complete_closed(svc_->engine()->io(),
                                    [svc = svc_, r = std::move(r), cb = std::move(cb)]() mutable {
                                      svc->acquire(std::move(r), std::move(cb));
                                    });
    return;
  }
  svc_->acquire(std::move(r), std::move(cb));
}

void reentrant_lock::start_unlock(std::uint64_t owner, void_callback cb, std::string* error_detail,
                                  detail::call_mode mode) {
  if (mode == detail::call_mode::blocking_posted) {
    detail::post_or_complete_closed(
        svc_->engine()->io(),
        [svc = svc_, key = key_, owner, kind = kind_, cb = std::move(cb), error_detail]() mutable {
          // Completed where its reply is read, the I/O thread (as a posted acquire).
          svc->unlock(key, owner, kind, std::move(cb), error_detail, false);
        });
    return;
  }
  svc_->unlock(key_, owner, kind_, std::move(cb), error_detail,
               mode == detail::call_mode::blocking_on_caller);
}

void reentrant_lock::start_force_unlock(callback<bool> cb, std::string* error_detail) {
  svc_->force_unlock(key_, kind_, std::move(cb), error_detail);
}

void reentrant_lock::start_is_locked(callback<bool> cb) {
  const std::string_view args[] = {"EXISTS", key_};
  detail::exec_options o;
  o.idempotent = true;
  o.route_key = key_;
  svc_->engine()->exec(args, o, [cb = std::move(cb)](detail::exec_result r) {
    cb(r.ec, !r.ec && r.value.integer() == 1);
  });
}

std::stop_token reentrant_lock::stop_on_cancel(asio::cancellation_slot slot, std::stop_token also) {
  // Owned by the slot's handler, which lives until the slot is cleared (when the operation
  // completes) or given another handler.
  struct link {
    std::stop_source source;
    std::optional<std::stop_callback<std::function<void()>>> forward;
  };
  auto l = std::make_shared<link>();
  if (also.stop_possible()) {
    l->forward.emplace(std::move(also),
                       std::function<void()>([s = l->source]() mutable { s.request_stop(); }));
  }
  slot.assign([l](asio::cancellation_type type) {
    using ct = asio::cancellation_type;
    if ((type & (ct::terminal | ct::partial | ct::total)) != ct::none) l->source.request_stop();
  });
  return l->source.get_token();
}

void reentrant_lock::start_hold_count(std::uint64_t owner, callback<long long> cb) {
  const std::string field = svc_->owner_field(owner);
  const std::string_view args[] = {"HGET", key_, field};
  detail::exec_options o;
  o.idempotent = true;
  o.route_key = key_;
  svc_->engine()->exec(args, o, [cb = std::move(cb)](detail::exec_result r) {
    // A field that is no hold count makes the key no lock: errc::wrong_type.
    const auto [ec, n] = detail::decode_counter(r);
    cb(ec, n);
  });
}

void reentrant_lock::start_ttl(callback<milliseconds> cb) {
  const std::string_view args[] = {"PTTL", key_};
  detail::exec_options o;
  o.idempotent = true;
  o.route_key = key_;
  svc_->engine()->exec(args, o, [cb = std::move(cb)](detail::exec_result r) {
    cb(r.ec, milliseconds(r.value.integer()));
  });
}

// ---- blocking ----

bool reentrant_lock::acquire(const acquire_options& opts) {
  check_blocking_allowed();
  detail::blocking_result<acquire_result> w;
  std::string why;  // written before the callback runs, read after take()
  acquire_options o = opts;
  o.error_detail = &why;
  detail::blocking_plan plan(blocking_spin());
  start_acquire(
      this_thread_owner_id(), std::move(o),
      [&w](std::error_code ec, bool ok) {
        w.set({ec, ok});
      },
      plan.mode());
  auto r = w.take(plan, &detail::connection::poll_replies_of_this_thread);
  if (r.ec) {
    if (opts.error_detail != nullptr && !why.empty()) *opts.error_detail = why;
    throw error(r.ec, detail::context_with("lock '" + name_ + "'", why));
  }
  return r.acquired;
}

void reentrant_lock::lock() {
  acquire({});
}

void reentrant_lock::lock(milliseconds lease) {
  acquire_options o;
  o.lease = lease;
  acquire(o);
}

void reentrant_lock::lock(std::stop_token stop) {
  acquire_options o;
  o.stop = std::move(stop);
  acquire(o);
}

void reentrant_lock::lock(milliseconds lease, std::stop_token stop) {
  acquire_options o;
  o.lease = lease;
  o.stop = std::move(stop);
  acquire(o);
}

bool reentrant_lock::try_lock() {
  acquire_options o;
  o.wait = milliseconds(0);
  return acquire(o);
}

bool reentrant_lock::try_lock(milliseconds wait, milliseconds lease) {
  acquire_options o;
  o.wait = wait;
  if (lease.count() > 0) o.lease = lease;
  return acquire(o);
}

std::error_code reentrant_lock::release(std::string* why) noexcept {
  // On one of the client's I/O threads it could not wait; that thread holds nothing of the
  // blocking API (a blocking acquire there is refused), so there is nothing to release either.
  // In a fork's child the hold is the parent's (the same owner field): it must not be released.
  if (svc_->engine()->on_io_thread() || svc_->engine()->forked()) {
    return make_error_code(errc::invalid_argument);
  }
  detail::blocking_result<std::error_code> w;
  detail::blocking_plan plan(blocking_spin());
  start_unlock(
      this_thread_owner_id(), [&w](std::error_code ec) { w.set(ec); }, why, plan.mode());
  return w.take(plan, &detail::connection::poll_replies_of_this_thread);
}

void reentrant_lock::unlock() noexcept {
  // A failure is the loss of the hold, told through its loss_token() (see lock.hpp).
  (void)release(nullptr);
}

void reentrant_lock::unlock(std::error_code& ec) noexcept {
  ec = release(nullptr);
}

void reentrant_lock::unlock_or_throw() {
  check_blocking_allowed();
  std::string why;
  const std::error_code ec = release(&why);
  if (ec == errc::not_owner) {
    throw error(ec, "attempt to unlock lock '" + name_ + "', not locked by current thread (owner " +
                        svc_->owner_field(this_thread_owner_id()) + ")");
  }
  throw_if(ec, detail::context_with("unlock '" + name_ + "'", why));
}

bool reentrant_lock::force_unlock() {
  check_blocking_allowed();
  detail::blocking_result<acquire_result> w;
  std::string why;
  start_force_unlock([&w](std::error_code ec, bool existed) { w.set({ec, existed}); }, &why);
  auto r = w.take(blocking_spin());
  throw_if(r.ec, detail::context_with("force_unlock '" + name_ + "'", why));
  return r.acquired;
}

bool reentrant_lock::is_locked() {
  check_blocking_allowed();
  detail::blocking_result<acquire_result> w;
  start_is_locked([&w](std::error_code ec, bool v) { w.set({ec, v}); });
  auto r = w.take(blocking_spin());
  throw_if(r.ec, "is_locked '" + name_ + "'");
  return r.acquired;
}

bool reentrant_lock::is_held_by_current_thread() {
  return hold_count() > 0;
}

bool reentrant_lock::is_held_by_thread(std::uint64_t owner_id) {
  check_blocking_allowed();
  detail::blocking_result<std::pair<std::error_code, long long>> w;
  start_hold_count(owner_id, [&w](std::error_code ec, long long n) { w.set({ec, n}); });
  auto [ec, n] = w.take(blocking_spin());
  throw_if(ec, "is_held_by_thread '" + name_ + "'");
  return n > 0;
}

long long reentrant_lock::hold_count() {
  check_blocking_allowed();
  detail::blocking_result<std::pair<std::error_code, long long>> w;
  start_hold_count(this_thread_owner_id(), [&w](std::error_code ec, long long n) {
    w.set({ec, n});
  });
  auto [ec, n] = w.take(blocking_spin());
  throw_if(ec, "hold_count '" + name_ + "'");
  return n;
}

std::chrono::milliseconds reentrant_lock::remain_time_to_live() {
  check_blocking_allowed();
  detail::blocking_result<std::pair<std::error_code, milliseconds>> w;
  start_ttl([&w](std::error_code ec, milliseconds v) { w.set({ec, v}); });
  auto [ec, v] = w.take(blocking_spin());
  throw_if(ec, "remain_time_to_live '" + name_ + "'");
  return v;
}

std::stop_token reentrant_lock::loss_token() const {
  return loss_token(this_thread_owner_id());
}
std::stop_token reentrant_lock::loss_token(std::uint64_t owner_id) const {
  return svc_->loss_token(key_, owner_id);
}
reentrant_lock::clock::time_point reentrant_lock::valid_until() const {
  return valid_until(this_thread_owner_id());
}
reentrant_lock::clock::time_point reentrant_lock::valid_until(std::uint64_t owner_id) const {
  return svc_->valid_until(key_, owner_id);
}

}  // namespace rlock
