// rlock/lock.hpp: the reentrant distributed lock, wire-compatible with Redisson's RLock.
//
// Defines:
//   rlock::reentrant_lock        the lock (Redisson's RLock); rlock::lock is an alias
//   rlock::acquire_options       wait budget, lease and stop token of one acquire
//   rlock::this_thread_owner_id  the owner id the blocking API uses for the calling thread
//   rlock::new_owner_id          a fresh owner id for the async API, never a thread's
//
// On the wire: the key is the (mapped) name, a hash {"<client-uuid>:<owner-id>" -> hold count}
// with a PEXPIRE; unlock publishes "0" on "redisson_lock__channel:{<name>}". Java Redisson clients
// and rlock clients exclude each other on the same name. With config::lock_queue (the default)
// rlock waiters also join "rlock_queue:{<name>}" and are handed the lock on their process's
// "rlock_handoff:{<name>}:<client-uuid>"; they listen on the Redisson channel only while the
// holder is a client that does not hand over (its client uuid is not version 8: Java Redisson,
// or rlock with the queue off). A spin lock (client::get_spin_lock, spin_lock.hpp) is a
// reentrant_lock on the same hash whose waiters poll and whose release publishes nothing. A fair
// lock (client::get_fair_lock, Redisson's RFairLock) is one whose waiters queue in
// "redisson_lock_queue:{<name>}" (eviction times, on the server's clock, in
// "redisson_lock_timeout:{<name>}") and are served in arrival order, each told on its own channel
// "redisson_lock__channel:{<name>}:<owner field>" when it is the head and the lock is free; a
// waiter that gives up leaves the queue, a crashed one is evicted at its time (its wait, or
// config::fair_lock_wait_timeout). A live rlock waiter is not evicted, however long the hold it
// waits behind (unlike Redisson's, #3004): it tries again at least three times per wait time and
// each try moves its eviction time out to (its place + 1) wait times from now, which holds while
// the waiters ahead of it use no longer a wait time than it does (a take or leave ahead lowers
// its time by the taker's wait). Its failure semantics are the reentrant lock's below.
//
// Ownership: a hold belongs to an owner id within its client. The blocking API uses the calling
// thread's id (like Redisson's thread id), so std::lock_guard, std::unique_lock and
// std::scoped_lock work (reentrant_lock is TimedLockable). The async API takes the owner id
// explicitly, so coroutine code can hold a lock across threads.
//
// Leases: without a lease the lock gets lock_watchdog_timeout (30 s) and the client's watchdog
// renews it every third of that while it is held (a round every third; with many locks, its
// scripts spread over the next sixth, most urgent lease first). With a lease the lock expires after
// it and is not renewed. Re-entry resets the TTL to the new acquire's lease, and valid_until()
// follows it. Once any hold of an owner was taken without a lease, the watchdog renews the lock
// until the owner's final unlock (a re-entry with a shorter lease, or a partial unlock, does not
// cut it short); an unlock that leaves holds sets the TTL to the watchdog's lease then, else to the
// last acquire's lease (Redisson's behaviour). Renewal never shortens a TTL (Redisson's sets it
// to the watchdog's lease): an inner hold with a longer lease keeps it.
//
// Fairness: with config::lock_queue (the default) rlock waiters are served first come, first
// served across processes: an unlock hands the lock to the first live waiter in the queue and
// wakes only that waiter's process. Java Redisson clients barge: they take the lock whenever
// they find it free (after an unlock with nobody queued, or an expiry). So while rlock waiters
// keep the queue non-empty, every unlock hands the lock on inside the queue and a Java waiter
// never finds it free: Java clients can starve until the queue drains (mutual exclusion holds
// throughout). Give locks contended by both a pause between rlock holds, or turn the queue off
// (config::lock_queue) for them. A queued waiter that dies within its liveness
// (config::lock_queue_liveness) before the lock reaches it may still be handed the lock: the
// hand-off's TTL ends at the waiter's queue deadline (at most one liveness, 6 s by default),
// not after its lease, so the lock is free again by then, for Java clients too. A live waiter
// extends it to its own lease when told (an explicit lease at once, one more script; under the
// watchdog by its first renewal, within a third of that TTL, or with many held locks at most
// two thirds).
// With the queue off, waiters are FIFO within one process and only the first contends in Redis
// (one unlock costs at most one acquire script per process); across processes the first script
// after an unlock wins.
//
// Failure semantics:
//   - The holder learns of a loss: loss_token() is stopped when renewal finds the owner field
//     gone (expired, deleted, force-unlocked), or when renewal could not reach Redis before
//     valid_until(), the lease's local deadline on steady_clock. Past valid_until() the holder
//     must assume another client may hold the lock. The same loss reaches config::on_event as
//     client_event_kind::lock_lost (for logs; the holder acts on its token).
//   - A pause of the holder (GC, SIGSTOP) shorter than the lease does not lose the lock; a
//     longer one does, and is reported through loss_token() once the holder runs again.
//   - A Redis failover can lose a lock that was not yet replicated (Redis replication is
//     asynchronous). With config::replica_sync an acquire returns only once that many replicas
//     (under config::all_connected_replicas, one of those connected, or none when none is)
//     have acknowledged it, a hand-off from the queue included (else it is undone and tried
//     again, config::replica_sync_tries in all within the wait, then fails with
//     errc::replication_not_confirmed),
//     which narrows that window but does not close it: renewals are not waited for, and the
//     replica promoted need not be one that acknowledged. Fencing tokens close it.
//   - Memory: a lock's keys have a TTL, so a server whose maxmemory-policy evicts (any policy
//     but noeviction: volatile-ttl evicts the shortest TTLs first, and a held lock's is short)
//     may delete a held lock under memory pressure. Another client may then take it before the
//     holder's next renewal (within a third of the lease) stops loss_token(). Locks belong on a
//     server with noeviction, where a full server fails acquires with errc::out_of_memory and
//     keeps the locks it has (its releases still work: they delete first).
//   - Clocks: the client times waits, leases and renewals on steady_clock only, so a jump of
//     its own wall clock changes nothing. The Redis server counts key expiry (the lease) and
//     the queue's deadlines on its wall clock. A jump of it forward past the lease ends the
//     lock on the server at once: another client may take it before the holder's next renewal
//     (within a third of the lease) stops loss_token(), and valid_until() cannot see it. A
//     jump forward past the queue's deadlines drops the waiters queued then: each queues again
//     at its next refresh (a third of config::lock_queue_liveness), behind whoever queued
//     since. A jump back lengthens the lease on the server by the jump, and renewal never
//     shortens a TTL: a holder that dies then leaves the lock for the jump plus the lease.
//   - Acquire and unlock are idempotent: a lost reply is resent without taking or releasing a
//     hold twice. An acquire whose outcome stays unknown is undone in the background; the
//     same owner's next acquire or unlock of that lock is sent once the undo has landed (an
//     unlock sent before it would take the hold the undo is for, and leave the owner's last
//     hold on the server for a lease). An undo that fails while the server cannot be reached
//     (timeouts, lost or refused connections, a busy server) is sent again, a retry delay
//     later (config::retry_delay_base, retry_delay_max), until it lands or no hold of that
//     acquire can be left (its lease, or the queue liveness for a hand-off, from when the
//     undo began); the owner's next acquire or unlock of the lock sends a waiting round at
//     once, and the client's close sends it one last time (within the close's bound). An undo
//     refused for good (NOPERM, OOM, WRONGTYPE), or whose last round failed while the owner
//     waited for it, ends; the owner's final unlock then releases any hold it finds left.
//   - Each unlock writes Redisson's unlock latch "redisson_unlock_latch:{<name>}:<request id>"
//     (its result, for a resent attempt to read), with a TTL of (timeout + retry_delay_max) x
//     retry_attempts. When the unlock was answered on its only attempt, nothing can read the
//     latch again, and the next unlock script of that lock from this client deletes it, in
//     the same DEL as the lock on a final release (Redisson sends a DEL instead; rlock adds no
//     request). A latch whose unlock was resent keeps its TTL: the earlier attempt may still
//     reach the server. Every attempt looks for its latch before it releases anything, so an
//     earlier attempt that reaches the server after its resend has run (stalled on a connection
//     the client gave up on, or sent on another connection of a pool) changes nothing, even if
//     the owner has taken the lock again since. One that reached it after the latch's TTL
//     would run as a new unlock: the TTL bounds how late a stalled network may deliver it.
//   - A resent acquire or unlock, and the undo of an acquire, first close on the server the
//     connections that earlier attempts were written to and may still run on (CLIENT KILL ID
//     <id> ADDR <addr>, in the same write, ahead of the command; the connection learns its id
//     with CLIENT INFO when it connects). What such a connection still carried then never
//     runs: an acquire attempt that would otherwise reach the server after its resend, or
//     after its undo, and after the owner's unlock, cannot take the free lock for nobody (a
//     hold that no one renews or releases, which other clients would wait out for its whole
//     lease). An attempt still on the network when its connection is closed is refused by the
//     server's TCP stack. A connection closed this way is one the client gave up on, or one on
//     which an attempt went unanswered within its timeout; with a pool
//     (config::connection_pool_size) the latter may still carry other requests, which then
//     fail as on any lost connection (errc::connection_lost, resent where that is safe).
//     Where the server refuses CLIENT INFO or CLIENT KILL (an ACL user without them, the
//     command renamed away, a server older than 6.2) this protection is off: unlocks keep the
//     latch's, acquires have none. Behind a proxy that multiplexes clients onto shared
//     connections the ids are the proxy's: such proxies commonly refuse CLIENT commands (the
//     protection is then off); one that passed them would have its shared connection closed.
//   - An acquire returns only with a lease ahead of it: a reply that arrives after less than a
//     tenth of its lease (at most 1 s) is left, counted from the request's send time (a stalled
//     network, a paused client), is not trusted. That acquire is undone and tried again within
//     the caller's wait; a single attempt (try_lock() without a wait) returns false.
//
// Invalid: calling a blocking member from one of the client's own completion handlers (it
// throws errc::invalid_argument instead of deadlocking; unlock() does nothing there);
// unlocking a hold of another owner (unlock_or_throw() throws errc::not_owner, like Redisson's
// IllegalMonitorStateException; unlock() does nothing).
#pragma once

#include <asio/associated_cancellation_slot.hpp>
#include <asio/async_result.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <system_error>
#include <type_traits>

#include "rlock/detail/call_mode.hpp"
#include "rlock/detail/handler_dispatch.hpp"
#include "rlock/detail/saturating_duration.hpp"
#include "rlock/error.hpp"
#include "rlock/spin_lock.hpp"

namespace rlock {

namespace detail {
class lock_service;
struct unconfirmed_try;
}  // namespace detail
class fenced_lock;
class multi_lock;

/// Owner ids from this bit up (2^62 and more) are rlock's: this_thread_owner_id() and
/// new_owner_id() draw from them. Ids the caller picks for the async API should stay below it
/// (small counters, object addresses): an id equal to a thread's would share that thread's holds
/// (re-entry instead of exclusion).
inline constexpr std::uint64_t reserved_owner_ids = std::uint64_t{1} << 62;

/// The owner id of the calling thread for the blocking API: unique within the process, never
/// reused, assigned on first use (reserved_owner_ids + 1, + 2, ...).
std::uint64_t this_thread_owner_id() noexcept;

/// A fresh owner id for the async API (a coroutine, a session): unique within the process, never
/// reused, never a thread's id (it comes from the same sequence as this_thread_owner_id()).
std::uint64_t new_owner_id() noexcept;

/// Which of Redisson's locks on a hash a reentrant_lock handle is: they share the key, owner
/// field, hold counts and watchdog, and differ in how waiters wait and what a release announces.
enum class lock_kind {
  reentrant,  ///< RLock (client::get_lock): waiters subscribe, a release publishes
  spin,       ///< RSpinLock (client::get_spin_lock, spin_lock.hpp): waiters poll, nothing published
  fair,       ///< RFairLock (client::get_fair_lock): a queue in arrival order, the head told
};

/// How one acquire behaves.
struct acquire_options {
  /// Wait budget on steady_clock: nullopt waits until acquired; zero (or negative) makes a
  /// single attempt. It bounds every step: subscribing, every command, every retry. A
  /// subscription not confirmed within config::subscription_timeout, when that ends before the
  /// wait, fails the acquire with errc::subscription_timeout.
  std::optional<std::chrono::milliseconds> wait;
  /// Lease: nullopt (or <= 0) takes the watchdog lease, renewed while held.
  std::optional<std::chrono::milliseconds> lease;
  /// A stop request ends the wait with errc::stopped and leaves nothing held.
  std::stop_token stop;
  /// Optional, for the asynchronous API (completion handlers carry only the code): when the
  /// acquire fails and a reply explains why (the server's error text, MISCONF say, or the
  /// transport's reason), the text is stored here before the handler runs; otherwise it is
  /// left as it was. Must outlive the operation. The blocking API puts it in what().
  std::string* error_detail = nullptr;
};

class reentrant_lock {
 public:
  using milliseconds = std::chrono::milliseconds;
  using clock = std::chrono::steady_clock;
  /// The longest key (the name through config::name_mapper) a lock may have: 1 MiB.
  static constexpr std::size_t max_name_size = std::size_t{1} << 20;

  /// Made by client::get_lock(). Cheap to copy; copies refer to the same lock.
  reentrant_lock(std::shared_ptr<detail::lock_service> svc, std::string name);
  /// Made by client::get_spin_lock(): a spin lock (spin_lock.hpp) on the same kind of key.
  /// Throws errc::invalid_argument for a backoff spin_lock.hpp calls invalid.
  reentrant_lock(std::shared_ptr<detail::lock_service> svc, std::string name, spin_backoff backoff);
  /// Made by client::get_fair_lock() (kind lock_kind::fair) or get_lock() (reentrant). A spin
  /// lock needs its backoff (the constructor above): lock_kind::spin takes the default one.
  reentrant_lock(std::shared_ptr<detail::lock_service> svc, std::string name, lock_kind kind);

  /// The name as given; the key is the name through config::name_mapper.
  const std::string& name() const { return name_; }
  const std::string& key() const { return key_; }
  lock_kind kind() const { return kind_; }
  /// A spin lock's backoff (client::get_spin_lock); nullopt for a lock that waits on its channel.
  const std::optional<spin_backoff>& spin() const { return spin_; }

  // ---- blocking API (owner: the calling thread) ----

  /// Waits until acquired, with the watchdog lease. Throws rlock::error on failure.
  void lock();
  /// Waits until acquired, with a fixed lease (not renewed).
  void lock(milliseconds lease);
  /// Interruptible (Redisson's lockInterruptibly): a stop request throws errc::stopped.
  void lock(std::stop_token stop);
  void lock(milliseconds lease, std::stop_token stop);
  /// One attempt with the watchdog lease; never waits for the lock. Bounded by one request
  /// timeout (config::timeout) in all, resends included: a server that does not answer by then
  /// (paused, hung) makes it throw errc::timeout.
  bool try_lock();
  /// Redisson's tryLock(wait, lease): false when not acquired within `wait`. lease <= 0 takes
  /// the watchdog lease. Once the server has answered that the lock is held, the end of the
  /// wait is always `false` (a re-try still in flight then is undone in the background); it
  /// throws errc::timeout only if no answer came within the wait at all.
  bool try_lock(milliseconds wait, milliseconds lease = milliseconds(-1));
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& d) {
    return try_lock(detail::saturating_ceil_ms(d));
  }
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& tp) {
    // A deadline already passed (time_point::min() included, where tp - now would overflow)
    // is one attempt that does not wait, as std::timed_mutex's.
    const auto now = Clock::now();
    if (tp <= now) return try_lock(milliseconds(0));
    return try_lock_for(tp - now);
  }
  /// General form: returns whether the lock was acquired.
  bool acquire(const acquire_options& opts);
  /// Releases one hold of the calling thread and waits for the server's answer (bounded like
  /// every request: config::timeout per attempt, config::retry_attempts; twice that after an
  /// acquire of this thread that gave up, whose undo is sent first). Never throws, as
  /// BasicLockable requires, so std::lock_guard, std::unique_lock and std::scoped_lock are safe.
  /// A release that fails loses nothing silently:
  ///  - the lock was gone already (expired, force-unlocked, lost in a failover): the hold's
  ///    loss_token() is stopped, at the latest when unlock() returns;
  ///  - the final release's outcome is unknown (timeout, connection lost): renewal was
  ///    cancelled before it was sent, so the lock ends with its lease at the latest, and the
  ///    loss_token() is stopped;
  ///  - a partial release's outcome is unknown: counted as done; the final release then
  ///    releases whatever is left on the server;
  ///  - with config::replica_sync, the replicas had not acknowledged the release after its
  ///    sends: it ran on the master, and the client reports
  ///    client_event_kind::write_not_confirmed (a failover to a replica that missed it brings
  ///    the lock back until its lease ends);
  ///  - the calling thread holds no hold, or calls from one of the client's completion
  ///    handlers: nothing happens.
  /// So a loss_token() taken while holding tells, after the release, whether the lock was held
  /// to the end. unlock(ec) and unlock_or_throw() say what went wrong.
  void unlock() noexcept;
  /// As unlock(); `ec` is {} when one hold was released, errc::not_owner when the calling thread
  /// held none (also when it held the lock and the lock was lost; errc::wrong_type if the key
  /// was meanwhile replaced by another type's value, which is left as it is), errc::timeout or
  /// errc::connection_lost when the outcome is unknown, errc::shutdown after
  /// client::shutdown(), errc::invalid_argument from one of the client's completion handlers.
  void unlock(std::error_code& ec) noexcept;
  /// As unlock(ec), but throws rlock::error for a failure, with the server's reply in what()
  /// (Redisson's unlock(): IllegalMonitorStateException is errc::not_owner). Not for the
  /// destructor of a lock guard.
  void unlock_or_throw();
  /// Deletes the lock whoever holds it and wakes its waiters; true if a lock existed. With the
  /// queued hand-off the first live queued waiter gets the lock at once. Holders in other
  /// processes learn of the loss at their next renewal (or when their lease ends); holders of
  /// this client at once. Never resent: when its reply is lost it throws errc::timeout or
  /// errc::connection_lost, and the lock may or may not have been deleted.
  bool force_unlock();

  bool is_locked();
  bool is_held_by_current_thread();
  bool is_held_by_thread(std::uint64_t owner_id);
  /// Holds of the calling thread (0 if none).
  long long hold_count();
  /// The lock's PTTL: -2 ms if it does not exist, -1 ms if it has no TTL.
  milliseconds remain_time_to_live();

  /// Stopped when the calling thread's hold is lost (or if it holds nothing), and at
  /// client::shutdown(). The stop (and any std::stop_callback registered on the token) runs on
  /// one of the client's I/O threads, or the thread calling unlock() or shutdown(), or an
  /// acquire of the same owner that finds the hold gone (it becomes a fresh acquire, and
  /// returns with the old token stopped): a callback must be quick and must not block, or it
  /// delays the renewal of the client's other locks.
  std::stop_token loss_token() const;
  std::stop_token loss_token(std::uint64_t owner_id) const;
  /// The local deadline of the calling thread's hold: send time of the last successful acquire
  /// or renewal plus the lease (time_point::min() if not held or lost).
  clock::time_point valid_until() const;
  clock::time_point valid_until(std::uint64_t owner_id) const;

  // ---- asynchronous API (explicit owner; any Asio completion token) ----
  // An operation keeps its own copy of this handle: a deferred one (asio::experimental::deferred,
  // use_awaitable) may be started after the handle it was made from is gone.
  // Per-operation cancellation (a handler's associated cancellation slot: asio::
  // bind_cancellation_slot, the awaitable operator ||, parallel_group): async_acquire,
  // async_lock and async_try_lock take any cancellation type (terminal, partial, total) as a
  // stop request: the wait ends with errc::stopped, nothing held or queued, no side effect
  // left (an acquire handed the lock meanwhile releases it). The other operations ignore it:
  // an unlock, once sent, is never withdrawn.

  /// Completes with (error_code, bool acquired).
  template <class CompletionToken>
  auto async_acquire(std::uint64_t owner_id, acquire_options opts, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(std::error_code, bool)>(
        // `o` is moved into start_acquire's by-value parameter, not only read: clang-tidy 14
        // misses the move in a member call with a dependent argument inside a generic lambda.
        // NOLINTNEXTLINE(performance-unnecessary-value-param)
        [self = *this](auto handler, std::uint64_t owner, acquire_options o) mutable {
          link_cancellation(o, handler);
          self.start_acquire(owner, std::move(o), self.wrap<bool>(std::move(handler)));
        },
        token, owner_id, std::move(opts));
  }
  /// Waits until acquired (watchdog lease unless `lease`). Completes with (error_code).
  template <class CompletionToken>
  auto async_lock(std::uint64_t owner_id, CompletionToken&& token) {
    return async_lock_impl(owner_id, {}, std::forward<CompletionToken>(token));
  }
  template <class CompletionToken>
  auto async_lock(std::uint64_t owner_id, milliseconds lease, CompletionToken&& token) {
    acquire_options o;
    o.lease = lease;
    return async_lock_impl(owner_id, std::move(o), std::forward<CompletionToken>(token));
  }
  /// One attempt. Completes with (error_code, bool).
  template <class CompletionToken>
  auto async_try_lock(std::uint64_t owner_id, CompletionToken&& token) {
    acquire_options o;
    o.wait = milliseconds(0);
    return async_acquire(owner_id, std::move(o), std::forward<CompletionToken>(token));
  }
  template <class CompletionToken>
  auto async_try_lock(std::uint64_t owner_id, milliseconds wait, milliseconds lease,
                      CompletionToken&& token) {
    acquire_options o;
    o.wait = wait;
    if (lease.count() > 0) o.lease = lease;
    return async_acquire(owner_id, std::move(o), std::forward<CompletionToken>(token));
  }
  /// Completes with (error_code); errc::not_owner if `owner_id` does not hold the lock.
  template <class CompletionToken>
  auto async_unlock(std::uint64_t owner_id, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(std::error_code)>(
        [self = *this](auto handler, std::uint64_t owner) mutable {
          self.start_unlock(owner, self.wrap_void(std::move(handler)));
        },
        token, owner_id);
  }
  /// Completes with (error_code, bool existed).
  template <class CompletionToken>
  auto async_force_unlock(CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(std::error_code, bool)>(
        [self = *this](auto handler) mutable {
          self.start_force_unlock(self.wrap<bool>(std::move(handler)));
        },
        token);
  }
  /// Completes with (error_code, bool).
  template <class CompletionToken>
  auto async_is_locked(CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(std::error_code, bool)>(
        [self = *this](auto handler) mutable {
          self.start_is_locked(self.wrap<bool>(std::move(handler)));
        },
        token);
  }
  /// Completes with (error_code, long long holds).
  template <class CompletionToken>
  auto async_hold_count(std::uint64_t owner_id, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(std::error_code, long long)>(
        [self = *this](auto handler, std::uint64_t owner) mutable {
          self.start_hold_count(owner, self.wrap<long long>(std::move(handler)));
        },
        token, owner_id);
  }
  /// Completes with (error_code, milliseconds pttl).
  template <class CompletionToken>
  auto async_remain_time_to_live(CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(std::error_code, milliseconds)>(
        [self = *this](auto handler) mutable {
          self.start_ttl(self.wrap<milliseconds>(std::move(handler)));
        },
        token);
  }

 private:
  // Acquires through start_acquire() and adapts handlers with wrap() (fenced_lock.hpp).
  friend class fenced_lock;
  friend class multi_lock;

  template <class T>
  using callback = std::function<void(std::error_code, T)>;
  using void_callback = std::function<void(std::error_code)>;

  template <class CompletionToken>
  auto async_lock_impl(std::uint64_t owner_id, acquire_options o, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(std::error_code)>(
        // Moved, not only read (see async_acquire: a clang-tidy 14 false positive).
        // NOLINTNEXTLINE(performance-unnecessary-value-param)
        [self = *this](auto handler, std::uint64_t owner, acquire_options opts) mutable {
          link_cancellation(opts, handler);
          self.start_acquire(
              owner, std::move(opts),
              [h = self.wrap_void(std::move(handler))](std::error_code ec, bool) { h(ec); });
        },
        token, owner_id, std::move(o));
  }

  // A connected cancellation slot of the handler becomes the acquire's stop token (the
  // caller's own token still counts).
  template <class Handler>
  static void link_cancellation(acquire_options& o, Handler& handler) {
    auto slot = asio::get_associated_cancellation_slot(handler);
    if constexpr (std::is_same_v<decltype(slot), asio::cancellation_slot>) {
      if (slot.is_connected()) o.stop = stop_on_cancel(slot, std::move(o.stop));
    }
  }
  static std::stop_token stop_on_cancel(asio::cancellation_slot slot, std::stop_token also);

  // The handler runs on its associated executor (default: the client's). A work guard keeps
  // that executor's context busy until the handler has been handed over (as Asio's own
  // operations do), so the caller's io_context cannot be destroyed while we post into it.
  template <class T, class Handler>
  callback<T> wrap(Handler handler) {
    return detail::wrap_completion<T>(executor(), std::move(handler));
  }
  template <class Handler>
  void_callback wrap_void(Handler handler) {
    return detail::wrap_void_completion(executor(), std::move(handler));
  }

  asio::io_context::executor_type executor() const;
  // `error_detail`, when given, receives the text of the reply that explains a failure (the
  // server's error reply, or the transport's reason) before `cb` runs; the blocking API puts
  // it in what(). (start_acquire takes it in acquire_options.)
  // `mode`: where the call's work runs and completes (detail::call_mode); the blocking API's
  // calls take the mode their detail::blocking_plan chose.
  // `again`: a try again after the replicas did not confirm the last (fenced_lock's token).
  void start_acquire(std::uint64_t owner, acquire_options o, callback<bool> cb,
                     detail::call_mode mode = detail::call_mode::async,
                     const detail::unconfirmed_try* again = nullptr);
  void start_unlock(std::uint64_t owner, void_callback cb, std::string* error_detail = nullptr,
                    detail::call_mode mode = detail::call_mode::async);
  void start_force_unlock(callback<bool> cb, std::string* error_detail = nullptr);
  void start_is_locked(callback<bool> cb);
  void start_hold_count(std::uint64_t owner, callback<long long> cb);
  void start_ttl(callback<milliseconds> cb);
  void check_blocking_allowed() const;
  /// The blocking release behind unlock(), unlock(ec) and unlock_or_throw().
  std::error_code release(std::string* why) noexcept;
  std::chrono::microseconds blocking_spin() const;

  std::shared_ptr<detail::lock_service> svc_;
  std::string name_;
  std::string key_;
  std::optional<spin_backoff> spin_;
  lock_kind kind_ = lock_kind::reentrant;
};

/// The reentrant lock. (A class cannot have a member function named like itself, so the class
/// is reentrant_lock and `lock` names it, keeping `lock.lock()` available.)
using lock = reentrant_lock;

}  // namespace rlock
