// rlock/multi_lock.hpp: several locks taken as one, all of them (Redisson's RedissonMultiLock)
// or a majority (Redisson's RedissonRedLock, the Redlock algorithm).
//
// Defines:
//   rlock::multi_lock   a group of reentrant_locks, from one client or several
//
// On the wire: nothing of its own. Each member is an ordinary reentrant_lock (lock.hpp) with
// its own key, client, lease and watchdog, so a Java MultiLock or RedLock over the same names
// excludes an rlock one, and a plain lock of one member's name excludes both.
//
// Acquire: the members are tried one after another, in the order given, each with the same
// owner id (the calling thread's for the blocking API), the acquire's lease and a share of the
// wait: all that is left for a MultiLock, left / members (at least 1 ms) for a RedLock, so
// that one silent server cannot use up the wait; and at most 1.5 s x members per round
// (Redisson's lock() bound; rlock bounds every round by it). The lock is held once every member has
// answered and the quorum is held (all members; a majority, members / 2 + 1, for a RedLock). A
// round that can no longer reach the quorum releases what it took and, while the wait lasts, starts
// again after a random pause of up to 50 ms. Give every multi_lock over the same names the same
// order (sort them): two that take them in opposite orders then cannot hold one each and wait for
// the other; if they do, each round ends by its bound and the random pauses break the tie.
// See detail/multi_acquire_fsm.hpp for the state machine and its tested properties.
//
// Guarantees and limits:
//   - All or nothing: an acquire that ends without the lock holds no member (each member's own
//     acquire undoes a try whose outcome is unknown, lock.hpp).
//   - A round in which no member answered "held by another", only errors (servers down,
//     refusing, silent), ends the acquire with the first error instead of waiting on: a
//     RedLock tolerates a minority of failed members, not a majority.
//   - loss_token() is stopped when so many held members are lost (lock.hpp's loss: expiry,
//     deletion, a renewal that could not reach its server in time) that fewer than the quorum
//     remain, and at the final unlock of a hold whose release failed. valid_until() is the
//     quorum-th latest member deadline (the earliest one for a MultiLock).
//   - RedLock is "efficiency-grade" (Redis's own docs, Kleppmann): its safety assumes bounded
//     clock drift and pauses between independent servers without persistence, and a restarted
//     server forgets its keys. For correctness use a fenced_lock (fenced_lock.hpp) and check
//     its token where the data is written.
//
// Invalid: an empty group, a quorum group (red_lock) of fewer than 3 members, one lock (the
// same key of the same client) given twice (errc::invalid_argument when it is made); calling a
// blocking member from a client's completion handler (errc::invalid_argument).
#pragma once

#include <asio/async_result.hpp>
#include <asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <system_error>
#include <vector>

#include "rlock/lock.hpp"

namespace rlock {

namespace detail {
struct multi_lock_state;
}  // namespace detail

class multi_lock {
 public:
  using milliseconds = std::chrono::milliseconds;
  using clock = std::chrono::steady_clock;

  /// Redisson's MultiLock: every lock in `locks`, in this order.
  explicit multi_lock(std::vector<reentrant_lock> locks);
  /// Redisson's RedLock: a majority of `locks`, each on an independent server (one client per
  /// server). At least 3.
  static multi_lock red_lock(std::vector<reentrant_lock> locks);

  std::size_t size() const;
  /// Members that must be held: size() for a MultiLock, size() / 2 + 1 for a RedLock.
  std::size_t quorum() const;

  // ---- blocking API (owner: the calling thread) ----

  /// Waits until held (watchdog leases, renewed while held). Throws rlock::error on failure.
  void lock();
  void lock(milliseconds lease);
  /// One round, each member tried once.
  bool try_lock();
  /// False when not held within `wait`. lease <= 0: the watchdog lease.
  bool try_lock(milliseconds wait, milliseconds lease = milliseconds(-1));
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& d) {
    return try_lock(detail::saturating_ceil_ms(d));
  }
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& tp) {
    const auto now = Clock::now();
    if (tp <= now) return try_lock(milliseconds(0));
    return try_lock_for(tp - now);
  }
  /// General form (wait budget, lease, stop token); returns whether it is held.
  bool acquire(const acquire_options& opts);
  /// Releases one hold: every member this hold took. Never throws.
  void unlock() noexcept;
  /// As unlock(); `ec`: {} when released (for a RedLock: a quorum of members released),
  /// errc::not_owner when the thread holds none, else the first member's failure.
  void unlock(std::error_code& ec) noexcept;

  std::stop_token loss_token() const;
  std::stop_token loss_token(std::uint64_t owner_id) const;
  clock::time_point valid_until() const;
  clock::time_point valid_until(std::uint64_t owner_id) const;

  // ---- asynchronous API (explicit owner; any Asio completion token) ----
  // Handlers run on their associated executor, by default the first member's client's.

  /// Completes with (error_code, bool acquired). opts.stop, or a connected cancellation slot's
  /// cancellation, ends the wait with errc::stopped, nothing held.
  template <class CompletionToken>
  auto async_acquire(std::uint64_t owner_id, acquire_options opts, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(std::error_code, bool)>(
        [self = *this](auto handler, std::uint64_t owner, const acquire_options& o) mutable {
          std::stop_token slot_stop = detail::stop_token_of(handler);
          self.start_acquire(owner, o, std::move(slot_stop),
                             detail::wrap_completion<bool>(self.executor(), std::move(handler)));
        },
        token, owner_id, std::move(opts));
  }
  /// Completes with (error_code), as unlock(ec).
  template <class CompletionToken>
  auto async_unlock(std::uint64_t owner_id, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(std::error_code)>(
        [self = *this](auto handler, std::uint64_t owner) mutable {
          self.start_unlock(owner,
                            detail::wrap_void_completion(self.executor(), std::move(handler)));
        },
        token, owner_id);
  }

 private:
  multi_lock(std::vector<reentrant_lock> locks, bool majority);
  asio::io_context::executor_type executor() const;
  void start_acquire(std::uint64_t owner, const acquire_options& o, std::stop_token also,
                     std::function<void(std::error_code, bool)> cb);
  void start_unlock(std::uint64_t owner, std::function<void(std::error_code)> cb);
  void check_blocking_allowed() const;

  std::shared_ptr<detail::multi_lock_state> state_;
};

}  // namespace rlock
