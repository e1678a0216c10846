// rlock/read_write_lock.hpp: a distributed read-write lock, wire-compatible with Redisson's
// RReadWriteLock.
//
// Defines:
//   rlock::rw_mode          the two halves: read (shared) and write (exclusive)
//   rlock::read_write_lock  the lock (client::get_read_write_lock); SharedTimedLockable, so
//                           std::unique_lock (write) and std::shared_lock (read) work with it
//
// On the wire (Redisson's layout, protocol reference §4): the key is the (mapped) name, a hash
// {"mode": "read"|"write", "<client-uuid>:<owner-id>": read holds,
// "<client-uuid>:<owner-id>:write": write holds} with a PEXPIRE; each read hold n of an owner
// also has the key "{<name>}:<client-uuid>:<owner-id>:rwlock_timeout:<n>" with its lease.
// Releases publish on "redisson_rwlock:{<name>}" ("0" after the last read, "1" after a write).
// Java RReadWriteLock peers share the lock: readers read together, a writer excludes both. rlock
// adds one short-lived key per acquire, "rlock_rwlock_latch:{<name>}:<request id>", that makes
// a resent acquire count once; every unlock writes Redisson's unlock latch
// "redisson_unlock_latch:{<name>}:<request id>" for the same purpose. Both expire after the
// request's retry window ((timeout + retry_delay_max) x (retry_attempts + 1)).
//
// Rules (Redisson's):
//   - Readers share the lock; a writer holds it alone. The write holder may also take the read
//     half (a downgrade: after its last write release the lock stays read-held by it).
//   - No upgrade: an owner that reads and asks for the write half waits for itself (until its
//     wait budget ends; lock() without a budget waits for ever). Release the read half first.
//   - Not fair: a waiting writer does not stop new readers, so a steady stream of overlapping
//     readers starves writers. Every waiting process tries at each release; a write release
//     lets every waiting reader in at once.
//   - Both halves are reentrant per owner; each release gives back one hold.
//
// Ownership: as reentrant_lock's (lock.hpp): the blocking API's owner is the calling thread
// (this_thread_owner_id()), the async API takes it explicitly.
//
// Leases: without a lease a hold gets lock_watchdog_timeout (30 s) and is renewed every third
// of it while held (a watchdog of its own, next to the reentrant locks'); a read hold's renewal
// renews its timeout keys too (only its own: Redisson renews every reader's, so that one live
// reader keeps a crashed one's holds). A hold with a lease expires after it. A re-entry sets
// the TTL to the greater of what is left and its lease (Redisson adds the lease to what is left).
//
// Failure semantics:
//   - loss_token(mode) is stopped when the hold is lost: renewal finds the owner's field gone
//     (expired, deleted, force-unlocked), renewal could not reach Redis before valid_until(),
//     an unlock finds the hold gone, an unlock's outcome stays unknown (renewal was stopped
//     first, so the hold ends with its lease), force_unlock() by this client, shutdown().
//     Past valid_until() another client may hold the lock.
//   - A pause of the holder shorter than its lease loses nothing; a longer one does, and the
//     loss is reported once the holder runs again.
//   - Waiting does not poll: a waiter subscribes to the channel and tries again at each release,
//     after a reconnect (releases may have gone unheard), and when the TTL that its failed try
//     returned has passed (a holder that crashed announces nothing), or at the latest after
//     config::wait_recheck_interval (10 s, jittered).
//     Its subscription is bounded by config::subscription_timeout (errc::subscription_timeout,
//     also without a deadline of the wait's own).
//   - Acquire and unlock are idempotent: a lost reply is resent without taking or releasing a
//     hold twice. An acquire that fails, is stopped or meets shutdown() leaves nothing held: a
//     try whose outcome is unknown is undone (after closing on the server the connections the
//     lost try may still run on).
//   - A failover to a replica that had not received the last changes (replication is
//     asynchronous) can lose holds: their holders are told at the next renewal.
//
// Bounds: one try (try_lock(), try_lock_shared()) and every release take at most the request
// timeout and retries (config::timeout, retry_attempts); a waiting acquire returns by its
// deadline, or up to one request timeout later when the try in flight then is slow to answer.
// No try starts after the deadline: a server that answers BUSY, LOADING or NOREPLICAS (nothing
// ran) ends the wait by its deadline with errc::server_busy.
//
// Invalid: an empty name or one longer than max_name_size (errc::invalid_argument when the
// lock is made); releasing a hold the owner does not have (release(mode, ec) gives
// errc::not_owner, unlock() and unlock_shared() do nothing); calling a blocking member from one
// of the client's completion handlers (errc::invalid_argument; unlock() and unlock_shared() do
// nothing). errc::wrong_type when the key holds another type, or is a hash without "mode" (a
// reentrant lock's, say), left as it is.
#pragma once

#include <asio/async_result.hpp>
#include <asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <system_error>

#include "rlock/detail/handler_dispatch.hpp"
#include "rlock/detail/saturating_duration.hpp"
#include "rlock/lock.hpp"

namespace rlock {

namespace detail {
class rw_lock_service;
}  // namespace detail

/// read: shared with other readers; write: exclusive.
enum class rw_mode { read, write };

class read_write_lock {
 public:
  using milliseconds = std::chrono::milliseconds;
  using clock = std::chrono::steady_clock;
  /// The longest key (the name through config::name_mapper) a lock may have: 1 MiB.
  static constexpr std::size_t max_name_size = std::size_t{1} << 20;

  /// Made by client::get_read_write_lock(). Cheap to copy; copies refer to the same lock.
  read_write_lock(std::shared_ptr<detail::rw_lock_service> svc, std::string name);

  /// The name as given; the key is the name through config::name_mapper.
  const std::string& name() const { return name_; }
  const std::string& key() const { return key_; }

  // ---- blocking API (owner: the calling thread) ----

  /// General form: waits up to opts.wait (nullopt: until taken; zero: one try) for `mode`,
  /// with opts.lease (nullopt: the watchdog's); returns whether it was taken. A stop request
  /// (opts.stop) throws errc::stopped. Throws rlock::error on failure.
  bool acquire(rw_mode mode, const acquire_options& opts);
  /// Releases one hold of `mode` of the calling thread; never throws. `ec`: {} when released,
  /// errc::not_owner when the thread held none (or the hold was lost), errc::timeout or
  /// connection_lost when the outcome is unknown (a final release's hold then ends with its
  /// lease at the latest, and its loss_token() is stopped), errc::shutdown after shutdown().
  void release(rw_mode mode, std::error_code& ec) noexcept;

  // The write half, as std::shared_timed_mutex's exclusive members.
  /// Waits until the write half is taken, with the watchdog lease.
  void lock() { acquire_or_throw(rw_mode::write, {}); }
  /// One try; never waits for a holder.
  bool try_lock() { return acquire(rw_mode::write, single_try()); }
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& d) {
    return acquire(rw_mode::write, within(detail::saturating_ceil_ms(d)));
  }
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& tp) {
    return try_lock_for(tp - Clock::now());
  }
  /// Releases one write hold of the calling thread; never throws (see release()).
  void unlock() noexcept;

  // The read half, as std::shared_timed_mutex's shared members.
  void lock_shared() { acquire_or_throw(rw_mode::read, {}); }
  bool try_lock_shared() { return acquire(rw_mode::read, single_try()); }
  template <class Rep, class Period>
  bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& d) {
    return acquire(rw_mode::read, within(detail::saturating_ceil_ms(d)));
  }
  template <class Clock, class Duration>
  bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration>& tp) {
    return try_lock_shared_for(tp - Clock::now());
  }
  void unlock_shared() noexcept;

  /// Deletes the lock whoever holds it, in either mode, and wakes its waiters; true if it
  /// existed. Holders in other processes learn of the loss at their next renewal; this
  /// client's at once. Never resent: a lost reply throws errc::timeout or connection_lost.
  bool force_unlock();
  /// The lock's mode on the server now: nullopt when nobody holds it.
  std::optional<rw_mode> mode();
  /// Holds of `mode` of the calling thread, as this client counts them (0 if none or lost).
  long long hold_count(rw_mode mode) const;
  long long hold_count(rw_mode mode, std::uint64_t owner_id) const;
  /// Stopped when the hold is lost (or if there is none); see Failure semantics. Its stop and
  /// any std::stop_callback run on one of the client's threads or the releasing thread: keep
  /// them quick.
  std::stop_token loss_token(rw_mode mode) const;
  std::stop_token loss_token(rw_mode mode, std::uint64_t owner_id) const;
  /// Send time of the last successful acquire or renewal plus the lease (time_point::min() if
  /// not held or lost).
  clock::time_point valid_until(rw_mode mode) const;
  clock::time_point valid_until(rw_mode mode, std::uint64_t owner_id) const;

  // ---- asynchronous API (explicit owner; any Asio completion token) ----

  /// Completes with (error_code, bool acquired). opts.stop, or a connected cancellation slot's
  /// cancellation (terminal, partial or total), ends the wait with errc::stopped, nothing held.
  template <class CompletionToken>
  auto async_acquire(rw_mode mode, std::uint64_t owner_id, acquire_options opts,
                     CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(std::error_code, bool)>(
        [self = *this](auto handler, rw_mode m, std::uint64_t owner,
                       const acquire_options& o) mutable {
          std::stop_token slot_stop = detail::stop_token_of(handler);
          self.start_acquire(m, owner, o, std::move(slot_stop),
                             self.wrap<bool>(std::move(handler)));
        },
        token, mode, owner_id, std::move(opts));
  }
  /// Completes with (error_code): as release()'s codes.
  template <class CompletionToken>
  auto async_unlock(rw_mode mode, std::uint64_t owner_id, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(std::error_code)>(
        [self = *this](auto handler, rw_mode m, std::uint64_t owner) mutable {
          self.start_unlock(m, owner,
                            detail::wrap_void_completion(self.executor(), std::move(handler)));
        },
        token, mode, owner_id);
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

  static acquire_options single_try() {
    acquire_options o;
    o.wait = milliseconds(0);
    return o;
  }
  static acquire_options within(milliseconds wait) {
    acquire_options o;
    o.wait = wait.count() > 0 ? wait : milliseconds(0);
    return o;
  }
  void acquire_or_throw(rw_mode mode, const acquire_options& opts);
  asio::io_context::executor_type executor() const;
  void start_acquire(rw_mode mode, std::uint64_t owner, const acquire_options& o,
                     std::stop_token also, callback<bool> cb);
  void start_unlock(rw_mode mode, std::uint64_t owner, std::function<void(std::error_code)> cb);
  void check_blocking_allowed() const;

  std::shared_ptr<detail::rw_lock_service> svc_;
  std::string name_;
  std::string key_;
};

}  // namespace rlock
