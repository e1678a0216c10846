// rlock/permit_expirable_semaphore.hpp: a semaphore whose permits have ids and leases,
// wire-compatible with Redisson's RPermitExpirableSemaphore.
//
// Defines:
//   rlock::permit_expirable_semaphore   permits that expire
//   (client::get_permit_expirable_semaphore)
//
// On the wire (Redisson's layout, protocol reference §9): the available count is the string key
// <name> (as RSemaphore's), the permits taken are the sorted set "{<name>}:timeout" of permit
// id -> lease end (epoch ms; 922337203685477 for a permit that never expires), and every release
// or reclaim publishes the new count on "redisson_sc:{<name>}". A permit id is 16 random bytes
// in Redis; the API shows it as Java does, 32 lowercase hex characters, so an id taken by a Java
// peer can be released here and vice versa.
//
// Guarantees:
//   - A permit taken with a lease is given back when the lease ends, whoever runs the next
//     script on the semaphore (an acquire, a release, available_permits(), ...): a holder that
//     crashes loses it for at most its lease. A permit taken without a lease never expires (as
//     Redisson's acquire()): only its release gives it back.
//   - Lease ends are counted on the Redis server's clock (TIME inside the scripts), so a jump of
//     a client's clock changes nothing and every rlock client compares against one clock.
//     Redisson's scripts use each Java client's clock: a Java peer whose clock is ahead of the
//     server's reclaims permits early by that much (and one behind, late).
//   - An acquire that fails or ends with an error, a stop request or shutdown takes nothing: a
//     try whose outcome is unknown is undone (its ids released, after closing on the server the
//     connections its lost attempt may still run on). A try sent again after a lost reply
//     carries the same ids and takes the permits once. A release counts once when sent again
//     (a request latch, as the semaphore's).
//   - Waiting does not poll: a waiter subscribes to the channel and tries again at each release,
//     and when the nearest lease ends (nobody announces an expiry), and at least once per
//     config::wait_recheck_interval (10 s, jittered; a count changed unannounced).
//     Its subscription is bounded by config::subscription_timeout (errc::subscription_timeout,
//     also without a deadline of the wait's own).
//   - The holder learns a lease ran out: try_release() returns false (the permit was given back
//     at its lease's end, or is being now) and release() throws errc::not_owner.
//   - Not fair (as Redisson's): every waiting process tries at each release.
//   - After a failover to a replica that had not received the last changes (asynchronous
//     replication), the count and the leases are the replica's: permits can be lost or appear
//     twice. With config::replica_sync, an acquire and a release that returned were on the
//     replicas asked for then, unless the client reported the release with
//     client_event_kind::write_not_confirmed (a release is never failed for that); a failover
//     to one of them keeps them. Lease updates and set_permits are not waited for.
//
// Bounds: every call is bounded as the semaphore's (semaphore.hpp): one request timeout and its
// retries per script; a waiting acquire returns by its deadline, or up to one request timeout
// later when its last try is slow to answer. No try starts after the deadline.
//
// Invalid (errc::invalid_argument, thrown when the object is made or the call starts): an empty
// name; permits < 1 or > max_permits_per_call; a lease <= 0 or longer than a century; a permit
// id that is not 32 hex characters. Blocking members throw rlock::error and must not be called
// from the client's completion handlers; errc::wrong_type when a key holds something else.
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
#include <vector>

#include "rlock/detail/handler_dispatch.hpp"

namespace rlock {

namespace detail {
class expirable_semaphore_service;
}  // namespace detail

class permit_expirable_semaphore {
 public:
  using milliseconds = std::chrono::milliseconds;
  using clock = std::chrono::steady_clock;
  /// A permit's id: 32 lowercase hex characters (Redisson's, as Java prints it).
  using permit_id = std::string;
  /// The longest key (the name through config::name_mapper): 1 MiB.
  static constexpr std::size_t max_name_size = std::size_t{1} << 20;
  /// The most permits one acquire or release may name (each is one script argument).
  static constexpr std::int64_t max_permits_per_call = 1000;

  /// Made by client::get_permit_expirable_semaphore(). Cheap to copy; copies refer to the same
  /// semaphore.
  permit_expirable_semaphore(std::shared_ptr<detail::expirable_semaphore_service> svc,
                             std::string name);

  const std::string& name() const { return name_; }
  const std::string& key() const { return key_; }

  // ---- blocking API ----

  /// Sets the available count to `permits` if it has none (Redisson's trySetPermits); true if
  /// set. `permits` may be 0 or more. Waiters are told.
  bool try_set_permits(std::int64_t permits);
  /// Adds `permits` (negative: removes) to the available count, a missing one counting 0, and
  /// returns the new count (Redisson's addPermits). Waiters are told.
  std::int64_t add_permits(std::int64_t permits);
  /// The permits available now, after reclaiming expired ones (0 for a semaphore never set).
  std::int64_t available_permits();
  /// The permits taken and not expired, after reclaiming expired ones.
  std::int64_t acquired_permits();
  /// The permits in all: available plus taken and not expired, after reclaiming expired ones
  /// (Redisson's getPermits).
  std::int64_t total_permits();
  /// Makes the permits in all `permits` (Redisson's setPermits): the available count becomes
  /// `permits` minus those taken and not expired, and is returned. It is negative while more
  /// are taken than `permits`: their releases then go to paying that back. Waiters are told
  /// (the message is `permits`, as Redisson's) when anything changed. Throws
  /// errc::invalid_argument for a negative `permits`. A resend after a lost reply sets the same
  /// total (acquires and releases in between move permits, not the total).
  std::int64_t set_permits(std::int64_t permits);

  /// One try: a permit with `lease` (nullopt: it never expires) if one is available now.
  std::optional<permit_id> try_acquire(std::optional<milliseconds> lease = std::nullopt);
  /// Waits up to `wait` for a permit; nullopt if none was taken.
  std::optional<permit_id> try_acquire_for(milliseconds wait,
                                           std::optional<milliseconds> lease = std::nullopt);
  /// Waits up to `wait` for `permits` permits at once; their ids, or none if not taken.
  std::vector<permit_id> try_acquire_for(milliseconds wait, std::optional<milliseconds> lease,
                                         std::int64_t permits);
  /// Waits until a permit is taken, with no deadline (Redisson's acquire). A stop request
  /// throws errc::stopped, taking nothing.
  permit_id acquire(std::optional<milliseconds> lease = std::nullopt, std::stop_token stop = {});

  /// Gives back permit `id`: true if released while its lease ran; false if it was no longer
  /// held (released before, or its lease had ended: it was, or is now, given back to the
  /// count). Waiters are told.
  bool try_release(const permit_id& id);
  /// Gives back every permit of `ids` or none: true if all were held, with their leases
  /// running, and are released; false if one was not held (then nothing is released) or one's
  /// lease had ended (then all are given back).
  bool try_release(const std::vector<permit_id>& ids);
  /// As try_release(id), but throws errc::not_owner when the permit was not held (Redisson's
  /// release: IllegalArgumentException).
  void release(const permit_id& id);
  /// Sets permit `id`'s lease to `lease` from now (nullopt: never expires); false if it is not
  /// held (released, or its lease ended).
  bool update_lease_time(const permit_id& id, std::optional<milliseconds> lease);
  /// The time left of permit `id`'s lease: nullopt if it is not held; milliseconds::max() if it
  /// never expires.
  std::optional<milliseconds> lease_time(const permit_id& id);

  // ---- asynchronous API (completion tokens; handlers on the client's executor by default) ----

  /// Completes with (error_code, std::vector<permit_id> ids): `permits` ids, or none when not
  /// taken by `deadline`. A stop request, or a connected cancellation slot's cancellation,
  /// completes with errc::stopped.
  template <class CompletionToken>
  auto async_try_acquire_until(clock::time_point deadline, std::optional<milliseconds> lease,
                               std::int64_t permits, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(std::error_code, std::vector<permit_id>)>(
        [self = *this](auto handler, clock::time_point d, std::optional<milliseconds> l,
                       std::int64_t p) mutable {
          std::stop_token stop = detail::stop_token_of(handler);
          self.start_acquire(d, l, p, std::move(stop),
                             self.wrap<std::vector<permit_id>>(std::move(handler)));
        },
        token, deadline, lease, permits);
  }
  /// Completes with (error_code, bool released while held), as try_release(ids).
  template <class CompletionToken>
  auto async_try_release(std::vector<permit_id> ids, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(std::error_code, bool)>(
        [self = *this](auto handler, const std::vector<permit_id>& i) mutable {
          self.start_release(i, self.wrap<bool>(std::move(handler)));
        },
        token, std::move(ids));
  }
  /// Completes with (error_code, bool held), as update_lease_time(id, lease): true if permit
  /// `id` was held and its lease now ends `lease` after the script ran (nullopt: never).
  /// errc::invalid_argument for an id that is not 32 hex characters or a lease
  /// update_lease_time refuses. A resend after a lost reply sets the lease again from then.
  template <class CompletionToken>
  auto async_update_lease_time(permit_id id, std::optional<milliseconds> lease,
                               CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(std::error_code, bool)>(
        [self = *this](auto handler, const permit_id& i, std::optional<milliseconds> l) mutable {
          self.start_update(i, l, self.wrap<bool>(std::move(handler)));
        },
        token, std::move(id), lease);
  }

 private:
  friend class permit_keeper;
  template <class T>
  using callback = std::function<void(std::error_code, T)>;

  template <class T, class Handler>
  callback<T> wrap(Handler handler) {
    return detail::wrap_completion<T>(executor(), std::move(handler));
  }

  asio::io_context::executor_type executor() const;
  void start_acquire(clock::time_point deadline, std::optional<milliseconds> lease,
                     std::int64_t permits, std::stop_token stop,
                     callback<std::vector<permit_id>> cb);
  void start_release(const std::vector<permit_id>& ids, callback<bool> cb);
  void start_update(const permit_id& id, std::optional<milliseconds> lease, callback<bool> cb);
  std::vector<permit_id> acquire_until(clock::time_point deadline,
                                       std::optional<milliseconds> lease, std::int64_t permits,
                                       std::stop_token stop, const char* op);
  std::int64_t inspect(int what, const permit_id& id, std::optional<milliseconds> lease,
                       const char* op, std::int64_t total = 0);
  std::int64_t set(bool init, std::int64_t permits, const char* op);
  void check_blocking_allowed() const;

  std::shared_ptr<detail::expirable_semaphore_service> svc_;
  std::string name_;
  std::string key_;
};

}  // namespace rlock
