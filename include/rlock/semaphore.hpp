// rlock/semaphore.hpp: a counting semaphore on Redis, wire-compatible with Redisson's RSemaphore.
//
// Defines:
//   rlock::semaphore   permits that processes take and give back (client::get_semaphore)
//
// On the wire (Redisson's layout, protocol reference §8): the permit count is the string key
// <name> (an integer, no TTL), and every change of it is published on "redisson_sc:{<name>}"
// with the new count. Java RSemaphore peers take and give back permits of the same key, and
// wake on the same channel. A semaphore that was never set has no key and no permits:
// try_set_permits() or add_permits() first. rlock adds one short-lived key per request,
// "rlock_semaphore_latch:{<name>}:<request id>", that makes the request count once even when it
// is sent again (below); Redisson ignores these keys.
//
// Guarantees:
//   - Every change is one atomic script; a change that is sent again after a lost reply (a
//     broken connection, a timeout) is applied at most once: the request's latch key returns the
//     first attempt's result. Redisson's own release is not idempotent; rlock's is.
//   - An acquire that fails or ends with an error (a timeout, a lost connection, a stop
//     request, shutdown) leaves no permit taken: a try whose outcome is unknown is undone,
//     after closing on the server the connections the lost attempt may still run on.
//   - Waiting does not poll: a waiter subscribes to the channel and tries again at each release
//     (and after a reconnect, when releases may have gone unheard), until its deadline; and,
//     beyond Redisson, once per config::wait_recheck_interval (10 s, jittered) without a
//     message, so that a count changed unannounced (set by hand) is seen within it.
//     Its subscription is bounded by config::subscription_timeout (errc::subscription_timeout,
//     also without a deadline of the wait's own).
//   - Not fair: every waiting process tries at each release, and any of them may win (as with
//     Redisson). A waiter asking for many permits can starve while others take few.
//   - Permits are not owned: any client may release them, also more than it took; the count
//     then grows past its initial value (as with Redisson). Nothing gives back the permits of a
//     process that died holding them: use a lock (lease and watchdog) where a holder may crash.
//   - After a failover to a replica that had not received the last changes (replication is
//     asynchronous), the count is the replica's: permits can be lost or appear twice. With
//     config::replica_sync, an acquire that returned and a change that returned were on the
//     replicas asked for then, unless the client reported the change with
//     client_event_kind::write_not_confirmed (a change is never failed for that: a release
//     reported as failed would be made again); a failover to one of them keeps them. The undo
//     of an acquire that failed is not waited for.
//
// Bounds: every call is bounded. Blocking members without a wait, and each try of an acquire,
// take at most the configured request timeout and retries (config::timeout, retry_attempts);
// a waiting acquire returns by its deadline, or up to one request timeout later when the try
// in flight then is slow to answer (its outcome must be known before it can return false). No
// try starts after the deadline: a server that answers BUSY, LOADING or NOREPLICAS (nothing
// ran) ends the wait by its deadline with errc::server_busy.
//
// Invalid: permits < 1 for acquire and release, an empty name (errc::invalid_argument, thrown
// when the semaphore is made or the call starts). Blocking members throw rlock::error (derived
// from std::system_error) and must not be called from the client's completion handlers (use
// the async_ forms there); errc::wrong_type when the key holds something else than a count.
#pragma once

#include <asio/async_result.hpp>
#include <asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <system_error>

#include "rlock/detail/handler_dispatch.hpp"

namespace rlock {

namespace detail {
class semaphore_service;
}  // namespace detail

class semaphore {
 public:
  using milliseconds = std::chrono::milliseconds;
  using clock = std::chrono::steady_clock;
  /// The longest key (the name through config::name_mapper) a semaphore may have: 1 MiB.
  static constexpr std::size_t max_name_size = std::size_t{1} << 20;

  /// Made by client::get_semaphore(). Cheap to copy; copies refer to the same semaphore.
  semaphore(std::shared_ptr<detail::semaphore_service> svc, std::string name);

  /// The name as given; the key is the name through config::name_mapper.
  const std::string& name() const { return name_; }
  const std::string& key() const { return key_; }

  // ---- blocking API ----

  /// Sets the count to `permits` if the semaphore has none (Redisson's trySetPermits); true if
  /// it was set. Waiters are told. `permits` may be 0 or more.
  bool try_set_permits(std::int64_t permits);
  /// Adds `permits` (negative: removes) to the count, a missing count counting 0, and returns
  /// the new count (Redisson's addPermits). Waiters are told.
  std::int64_t add_permits(std::int64_t permits);
  /// The permits available now (0 for a semaphore never set).
  std::int64_t available_permits();
  /// Takes every available permit: sets the count to 0 and returns what it was.
  std::int64_t drain_permits();

  /// One try: takes `permits` if that many are available now. Never waits for a release.
  bool try_acquire(std::int64_t permits = 1);
  /// Waits up to `wait` for `permits` to be available and takes them; false if they were not.
  bool try_acquire_for(milliseconds wait, std::int64_t permits = 1);
  bool try_acquire_until(clock::time_point deadline, std::int64_t permits = 1);
  /// Waits until `permits` are taken, with no deadline (Redisson's acquire). A stop request
  /// throws errc::stopped, taking nothing.
  void acquire(std::int64_t permits = 1, std::stop_token stop = {});
  /// Gives back `permits`, and returns the count after it. Waiters are told.
  std::int64_t release(std::int64_t permits = 1);

  // ---- asynchronous API (completion tokens; handlers on the client's executor by default) ----

  /// Completes with (error_code, bool taken) by `deadline` (see Bounds). A stop request, or a
  /// connected cancellation slot's cancellation, completes with errc::stopped.
  template <class CompletionToken>
  auto async_try_acquire_until(clock::time_point deadline, std::int64_t permits,
                               CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(std::error_code, bool)>(
        [self = *this](auto handler, clock::time_point d, std::int64_t p) mutable {
          std::stop_token stop = detail::stop_token_of(handler);
          self.start_acquire(d, p, std::move(stop), self.wrap<bool>(std::move(handler)));
        },
        token, deadline, permits);
  }
  template <class CompletionToken>
  auto async_try_acquire_for(milliseconds wait, std::int64_t permits, CompletionToken&& token) {
    return async_try_acquire_until(deadline_for(wait), permits,
                                   std::forward<CompletionToken>(token));
  }
  /// Completes with (error_code, std::int64_t count after the release).
  template <class CompletionToken>
  auto async_release(std::int64_t permits, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(std::error_code, std::int64_t)>(
        [self = *this](auto handler, std::int64_t p) mutable {
          self.start_release(p, self.wrap<std::int64_t>(std::move(handler)));
        },
        token, permits);
  }

 private:
  template <class T>
  using callback = std::function<void(std::error_code, T)>;

  // As reentrant_lock's: the handler runs on its associated executor (default: the client's),
  // whose context is kept busy until then.
  template <class T, class Handler>
  callback<T> wrap(Handler handler) {
    return detail::wrap_completion<T>(executor(), std::move(handler));
  }

  asio::io_context::executor_type executor() const;
  // Now + wait; time_point::max() for a wait too long to add.
  static clock::time_point deadline_for(milliseconds wait);
  void start_acquire(clock::time_point deadline, std::int64_t permits, std::stop_token stop,
                     callback<bool> cb);
  void start_release(std::int64_t permits, callback<std::int64_t> cb);
  std::int64_t change(int what, std::int64_t permits, const char* op);
  bool acquire_until(clock::time_point deadline, std::int64_t permits, std::stop_token stop,
                     const char* op);
  void check_blocking_allowed() const;

  std::shared_ptr<detail::semaphore_service> svc_;
  std::string name_;
  std::string key_;
};

}  // namespace rlock
