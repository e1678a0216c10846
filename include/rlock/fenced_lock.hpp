// rlock/fenced_lock.hpp: a reentrant lock that hands each acquire a fencing token, wire-
// compatible with Redisson's RFencedLock.
//
// Defines:
//   rlock::fenced_lock     the lock (Redisson's RFencedLock): a reentrant_lock plus a token
//   rlock::fencing_token   the token type: a positive 64-bit integer
//
// Why: a holder can lose its lock without running (a pause longer than the lease, a partition,
// a failover that lost the write) and then act as if it still held it. A lock alone cannot stop
// that; the resource can, if every holder passes the token it was given and the resource refuses
// a token lower than the highest it has seen ("check token >= last seen", as Redisson and
// Kleppmann's fencing put it). The token is only as good as that check: rlock cannot make it.
//
// On the wire: everything of reentrant_lock (lock.hpp: the hash, the channel, the unlock latch,
// the wait queue), plus the counter "redisson_lock_token:{<name>}", a string with no TTL that is
// never deleted (Redisson's layout: one key per lock name stays on the server, Redisson #6510).
// Every successful acquire, a re-entry included, increments it while the owner holds the lock
// and returns the new value. Java RFencedLock peers increment the same counter in their acquire
// script, so tokens of rlock and Java holders of one name are ordered together.
//
// Guarantees:
//   - A token is issued to an owner only while that owner holds the lock on the server, so it
//     is greater than every token issued to an earlier holder of the lock, whichever client
//     (rlock or Java RFencedLock) issued it. A holder's re-entries get greater tokens still.
//   - Monotonic only as far as the Redis server keeps the counter: a failover to a replica that
//     had not yet received the last INCR, or a counter deleted by hand, can issue a token again.
//     Replication is asynchronous; config::replica_sync waits for the token's INCR as for the
//     acquire. A token the replicas did not acknowledge is not returned: the hold is released
//     and, as for an acquire they did not confirm, the whole fenced acquire is tried again
//     (config::replica_sync_tries in all, retry_delay apart, within the caller's wait; a
//     single try is not tried again); after the last try it fails with
//     errc::replication_not_confirmed, and each try that ran skipped its token.
//   - A plain reentrant_lock (or Java RLock) on the same name excludes fenced holders as usual,
//     but issues no token: the order of tokens is kept, a plain holder just has none to pass.
//
// Cost: rlock issues the token in a script of its own (lock_fence.lua: HEXISTS, INCR) sent right
// after the acquire has returned the hold, so a fenced acquire is one request more than a plain
// one (Redisson does the INCR inside its acquire script). The acquire itself, waiting included,
// is reentrant_lock's: queued hand-off, no herd, the same deadlines.
//
// Failure semantics: as reentrant_lock's (loss_token(), valid_until(), idempotent acquire and
// unlock), plus:
//   - The token step is bounded by the acquire's wait, and never by less than one request
//     timeout (config::timeout) after the hold was taken: a try_lock_and_get_token() without a
//     wait takes at most two timeouts in all (the acquire's, then the token's).
//   - When the token cannot be issued (the server does not answer within that bound, the
//     counter is not an integer, the hold was lost meanwhile), the hold just taken is released
//     again and the acquire fails with the token step's error (errc::timeout,
//     errc::script_error, errc::wrong_type, errc::lock_lost, ...). No hold without a token is
//     ever returned. An answer that did not arrive may still have incremented the counter:
//     that skips a token and keeps the order.
//   - A resent token step (its reply lost) issues a second, later token of the same hold; the
//     caller gets the later one.
//
// Invalid: as reentrant_lock's. Blocking members throw rlock::error (derived from
// std::system_error).
#pragma once

#include <asio/async_result.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <system_error>

#include "rlock/lock.hpp"

namespace rlock {

/// A fencing token: positive, greater than every token issued to an earlier holder of the lock.
using fencing_token = std::int64_t;

class fenced_lock {
 public:
  using milliseconds = std::chrono::milliseconds;
  using clock = std::chrono::steady_clock;

  /// Made by client::get_fenced_lock(). Cheap to copy; copies refer to the same lock.
  explicit fenced_lock(reentrant_lock lock);

  const std::string& name() const { return lock_.name(); }
  /// The lock's key (the name through config::name_mapper).
  const std::string& key() const { return lock_.key(); }
  /// The token counter's key: "redisson_lock_token:{<key>}" ("redisson_lock_token:<key>" when
  /// the key already has a hash tag), in the lock's cluster slot.
  const std::string& token_key() const { return token_key_; }
  /// The reentrant lock underneath, for what the fenced lock adds nothing to (loss_token(),
  /// valid_until(), is_locked(), hold_count(), the async unlock and queries). Acquiring through
  /// it issues no token.
  reentrant_lock& as_lock() { return lock_; }
  const reentrant_lock& as_lock() const { return lock_; }

  // ---- blocking API (owner: the calling thread) ----

  /// Waits until acquired (watchdog lease), returns the new token. Throws rlock::error.
  fencing_token lock_and_get_token();
  /// Waits until acquired with a fixed lease (not renewed), returns the new token.
  fencing_token lock_and_get_token(milliseconds lease);
  /// One attempt (watchdog lease): the new token, or nullopt if the lock is held by another.
  std::optional<fencing_token> try_lock_and_get_token();
  /// Waits up to `wait` (lease <= 0: the watchdog lease): the new token, or nullopt if not
  /// acquired within `wait`.
  std::optional<fencing_token> try_lock_and_get_token(milliseconds wait,
                                                      milliseconds lease = milliseconds(-1));
  /// General form (acquire_options as reentrant_lock::acquire): the token, or nullopt when
  /// not acquired within the wait.
  std::optional<fencing_token> acquire(const acquire_options& opts);

  /// TimedLockable, so std::lock_guard and std::unique_lock work. Each acquire issues a token
  /// as the members above do (Redisson's lock() and tryLock() increment the counter too); the
  /// value is not returned.
  void lock() { lock_and_get_token(); }
  bool try_lock() { return try_lock_and_get_token().has_value(); }
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& d) {
    return try_lock_and_get_token(detail::saturating_ceil_ms(d)).has_value();
  }
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& tp) {
    const auto now = Clock::now();
    if (tp <= now) return try_lock_and_get_token(milliseconds(0)).has_value();
    return try_lock_for(tp - now);
  }
  /// As reentrant_lock's: releases one hold of the calling thread, never throws.
  void unlock() noexcept { lock_.unlock(); }
  void unlock(std::error_code& ec) noexcept { lock_.unlock(ec); }
  void unlock_or_throw() { lock_.unlock_or_throw(); }

  /// The latest token issued for this lock (Redisson's getToken(): a GET of the counter, 0 if
  /// none was ever issued). It may be another holder's: a holder must use the token its own
  /// acquire returned.
  fencing_token token();

  // ---- asynchronous API (explicit owner; any Asio completion token) ----
  // Cancellation as reentrant_lock::async_acquire's. Once the hold is taken the token step is
  // not withdrawn (it is bounded as above).

  /// Completes with (error_code, std::optional<fencing_token>): the token, or nullopt when not
  /// acquired within the wait.
  template <class CompletionToken>
  auto async_acquire(std::uint64_t owner_id, acquire_options opts, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken,
                                void(std::error_code, std::optional<fencing_token>)>(
        // Moved, not only read (see reentrant_lock::async_acquire: a clang-tidy 14 false
        // positive).
        // NOLINTNEXTLINE(performance-unnecessary-value-param)
        [self = *this](auto handler, std::uint64_t owner, acquire_options o) mutable {
          reentrant_lock::link_cancellation(o, handler);
          self.start_acquire(
              owner, std::move(o),
              self.lock_.template wrap<std::optional<fencing_token>>(std::move(handler)));
        },
        token, owner_id, std::move(opts));
  }
  /// Releases one hold of `owner_id`. Completes with (error_code), as
  /// reentrant_lock::async_unlock.
  template <class CompletionToken>
  auto async_unlock(std::uint64_t owner_id, CompletionToken&& token) {
    return lock_.async_unlock(owner_id, std::forward<CompletionToken>(token));
  }
  /// Completes with (error_code, fencing_token): as token().
  template <class CompletionToken>
  auto async_token(CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(std::error_code, fencing_token)>(
        [self = *this](auto handler) mutable {
          self.start_token(self.lock_.template wrap<fencing_token>(std::move(handler)));
        },
        token);
  }

 private:
  using token_callback = std::function<void(std::error_code, std::optional<fencing_token>)>;

  /// One fenced acquire across its tries (fenced_lock.cpp).
  struct acquire_state;

  // `mode`: as reentrant_lock::start_acquire's.
  void start_acquire(std::uint64_t owner, acquire_options o, token_callback cb,
                     detail::call_mode mode = detail::call_mode::async);
  /// One try: the acquire, then its token. `again`: null for the first try, else a try again
  /// after a token the replicas did not confirm.
  void run_try(const std::shared_ptr<acquire_state>& st, const detail::unconfirmed_try* again);
  /// The token step of a try that took a hold: runs lock_fence.lua, bounded by the acquire's
  /// deadline (or one request timeout from now, if later); on failure releases that hold, and
  /// tries again when the replicas did not confirm the token (config::replica_sync_tries).
  void issue_token(const std::shared_ptr<acquire_state>& st);
  void start_token(std::function<void(std::error_code, fencing_token)> cb);

  reentrant_lock lock_;
  std::string token_key_;
};

}  // namespace rlock
