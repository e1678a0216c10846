// rlock/countdown_latch.hpp: a countdown latch on Redis, wire-compatible with Redisson's
// RCountDownLatch.
//
// Defines:
//   rlock::countdown_latch   a count that processes wait to reach zero
//                            (client::get_countdown_latch)
//
// On the wire (Redisson's layout, protocol reference §10): the count is the string key <name>;
// the count down that reaches zero deletes it and publishes "0" on
// "redisson_countdownlatch__channel__{<name>}" (braces always added), and setting or deleting a
// latch publishes "1" there. Java RCountDownLatch peers count down and wait on the same key and
// channel. rlock adds one short-lived key per change, "rlock_countdown_request:{<name>}:<id>",
// that makes the change count once even when it is sent again (below); Redisson ignores it.
//
// Guarantees:
//   - A count down is applied at most once, also when it is sent again after a lost reply (a
//     broken connection, a timeout): the request's key returns the first attempt's result.
//     Redisson never resends its countDown instead, so a lost reply there may or may not have
//     counted.
//   - Waiting does not poll: a waiter subscribes to the channel and reads the count again at
//     each message (and after a reconnect, when messages may have gone unheard), until zero or
//     its deadline; and, beyond Redisson (whose await then waits on), once per
//     config::wait_recheck_interval (10 s, jittered) without a message, so that a latch key
//     that expired or was deleted, or a count changed unannounced, is seen within it. A latch that
//     does not exist counts as zero (as with Redisson), so waiting on a latch before it is set
//     returns at once: set it first.
//     Its subscription is bounded by config::subscription_timeout (errc::subscription_timeout,
//     also without a deadline of the wait's own).
//   - After a failover to a replica that had not received the last changes (replication is
//     asynchronous), the count is the replica's: a count down can be lost, and a latch that
//     had opened can be closed again.
//
// Bounds: every call is bounded. Blocking members without a wait take at most the configured
// request timeout and retries (config::timeout, retry_attempts); a waiting call returns by its
// deadline, or up to one request timeout later when the read in flight then is slow to answer.
// No read starts after the deadline: a server that answers BUSY or LOADING ends the wait by its
// deadline with errc::server_busy.
//
// Invalid: an empty name, a negative count (errc::invalid_argument). Blocking members throw
// rlock::error (derived from std::system_error) and must not be called from the client's
// completion handlers (use the async_ forms there); errc::wrong_type when the key holds
// something else than a count.
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
class countdown_latch_service;
}  // namespace detail

class countdown_latch {
 public:
  using milliseconds = std::chrono::milliseconds;
  using clock = std::chrono::steady_clock;
  /// The longest key (the name through config::name_mapper) a latch may have: 1 MiB.
  static constexpr std::size_t max_name_size = std::size_t{1} << 20;

  /// Made by client::get_countdown_latch(). Cheap to copy; copies refer to the same latch.
  countdown_latch(std::shared_ptr<detail::countdown_latch_service> svc, std::string name);

  /// The name as given; the key is the name through config::name_mapper.
  const std::string& name() const { return name_; }
  const std::string& key() const { return key_; }

  // ---- blocking API ----

  /// Sets the count if the latch has none (Redisson's trySetCount); true if it was set.
  bool try_set_count(std::int64_t count);
  /// Counts down by one and returns the count after it (0 once it reached zero, also for a
  /// latch that does not exist). Reaching zero wakes every waiter.
  std::int64_t count_down();
  /// The count now (0 for a latch that does not exist).
  std::int64_t count();
  /// Deletes the latch (Redisson's delete); true if it existed. Its waiters are told, and find
  /// no latch: a count of zero.
  bool remove();

  /// Waits up to `wait` for the count to reach zero; false if it did not.
  bool await_for(milliseconds wait);
  bool await_until(clock::time_point deadline);
  /// Waits for zero with no deadline (Redisson's await). A stop request throws errc::stopped.
  void await(std::stop_token stop = {});

  // ---- asynchronous API (completion tokens; handlers on the client's executor by default) ----

  /// Completes with (error_code, bool reached_zero) by `deadline` (see Bounds). A connected
  /// cancellation slot's cancellation completes it with errc::stopped.
  template <class CompletionToken>
  auto async_await_until(clock::time_point deadline, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(std::error_code, bool)>(
        [self = *this](auto handler, clock::time_point d) mutable {
          std::stop_token stop = detail::stop_token_of(handler);
          self.start_await(d, std::move(stop), self.wrap<bool>(std::move(handler)));
        },
        token, deadline);
  }
  template <class CompletionToken>
  auto async_await_for(milliseconds wait, CompletionToken&& token) {
    return async_await_until(deadline_for(wait), std::forward<CompletionToken>(token));
  }
  /// Completes with (error_code, std::int64_t count after).
  template <class CompletionToken>
  auto async_count_down(CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(std::error_code, std::int64_t)>(
        [self = *this](auto handler) mutable {
          self.start_count_down(self.wrap<std::int64_t>(std::move(handler)));
        },
        token);
  }

 private:
  template <class T>
  using callback = std::function<void(std::error_code, T)>;

  template <class T, class Handler>
  callback<T> wrap(Handler handler) {
    return detail::wrap_completion<T>(executor(), std::move(handler));
  }

  asio::io_context::executor_type executor() const;
  // Now + wait; time_point::max() for a wait too long to add.
  static clock::time_point deadline_for(milliseconds wait);
  void start_await(clock::time_point deadline, std::stop_token stop, callback<bool> cb);
  void start_count_down(callback<std::int64_t> cb);
  std::int64_t change(int what, std::int64_t count, const char* op);
  bool await_impl(clock::time_point deadline, std::stop_token stop, const char* op);

  std::shared_ptr<detail::countdown_latch_service> svc_;
  std::string name_;
  std::string key_;
};

}  // namespace rlock
