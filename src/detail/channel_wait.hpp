// channel_wait: waiting for a condition on the server that a channel announces (a semaphore's
// releases, a countdown latch reaching zero), without polling.
//
// The wait runs an attempt (a script or a read that says whether the condition holds, and may
// act on it, as a semaphore's acquire takes permits); when it does not hold, it subscribes to
// the channel, attempts once more (what was published before the subscription was not heard),
// and again after each message and after each resubscription (a reconnect, when messages may
// have been missed), until an attempt succeeds, the deadline passes, a stop request or
// shutdown ends it, or an attempt fails. A subscription the server has not confirmed within
// config::subscription_timeout (when that comes before the deadline) ends the wait with
// errc::subscription_timeout, as a lock's wait does: without it, a wait without a deadline
// whose pub/sub connection cannot be set up (the server at maxclients) never ended. An attempt in
// flight when a message arrives is followed by one more once it is answered, so no announcement is
// lost. At most one attempt is in flight.
//
// An attempt that fails may name a time to try again without a message (retry_in: a lock's
// TTL, after which it is free even if nobody announces it, as when its holder crashed). Without
// one, and never later than that, the wait attempts again after a random time from half of
// config::wait_recheck_interval to all of it (when not 0): a change that nobody announced (a
// count set by hand, a deleted or expired key) is seen within that interval.
//
// An attempt may hand back an undo: it is run when the wait ends without delivering that
// attempt's success (stopped or shut down while it was in flight), or when the attempt failed
// with an unknown outcome (it may have acted). The caller's `done` runs once, on an I/O thread
// (or the fallback context after the client shut down).
//
// An attempt that failed with errc::replication_not_confirmed (a take the replicas did not
// confirm, config::replica_sync) is undone and tried again after a back-off, as Redisson does:
// config::replica_sync_tries in all, within the deadline (replica_sync.hpp's
// unconfirmed_retry_in). Messages start no attempt during the back-off; a stop request or
// shutdown ends the wait at once. After the last try the wait ends with that error.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <system_error>

#include "detail/core.hpp"

namespace rlock::detail {

struct attempt_outcome {
  std::error_code ec;    ///< the attempt failed: the wait ends with it
  bool success = false;  ///< the condition held (and the attempt acted on it)
  std::string detail;    ///< the reply's text explaining `ec`
  /// Undoes what the attempt may have done; empty when there is nothing to undo.
  std::function<void()> undo;
  /// Runs once the wait needs nothing the attempt left on the server any more (its request
  /// key, spent_keys.hpp): after the wait has used the outcome, unless `undo` runs instead
  /// (which then sees to it). Empty: nothing to do.
  std::function<void()> spent;
  /// Not met: attempt again after this long even without a message (nullopt: only at a
  /// message, a resubscription or never).
  std::optional<clock::duration> retry_in;
};

struct wait_spec {
  std::string channel;
  std::string route_key;
  /// Passed: one attempt. Each attempt bounds itself (by at least one request timeout).
  clock::time_point deadline = clock::time_point::max();
  /// Runs one attempt and calls back exactly once with its outcome.
  std::function<void(std::function<void(const attempt_outcome&)>)> attempt;
  /// done(ec, success, detail): the deadline passing is (no error, false).
  std::function<void(std::error_code, bool, const std::string&)> done;
};

class wait_op;

/// The waits of one kind of object of one client, so that shutdown() can end them.
class wait_registry : public std::enable_shared_from_this<wait_registry> {
 public:
  explicit wait_registry(std::shared_ptr<core> c) : core_(std::move(c)) {}
  const std::shared_ptr<core>& engine() const { return core_; }

  /// Starts a wait (see the header). After shutdown() it completes at once with errc::shutdown.
  void start(wait_spec spec, std::stop_token stop);
  /// Ends every wait with errc::shutdown (an attempt in flight is undone when it is answered);
  /// later ones fail at once. Idempotent.
  void shutdown();

 private:
  friend class wait_op;
  void forget(std::uint64_t id);

  std::shared_ptr<core> core_;
  std::mutex mu_;
  bool closed_ = false;
  std::uint64_t next_id_ = 0;
  std::map<std::uint64_t, std::weak_ptr<wait_op>> waits_;
};

}  // namespace rlock::detail
