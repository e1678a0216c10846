// The semaphore's operations on the Redis core (semaphore.hpp): one-shot scripts, and the wait
// of an acquire for permits that are not available yet.
//
// The wait (channel_wait.hpp): try the acquire script; when too few permits are available,
// wait on the semaphore's channel (every release and every change of the count publishes the
// new count there) and try again at each message. Every process waiting on the semaphore wakes
// at each release and tries (Redisson's semaphore is no fairer); the release's count limits
// how many can win. A try that took permits the wait does not deliver (stopped, shut down), or
// whose outcome is unknown, is undone.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <system_error>

#include "detail/channel_wait.hpp"
#include "detail/core.hpp"

namespace rlock::detail {

/// The keys of semaphore `raw_name` (the mapped name).
std::string semaphore_channel(std::string_view raw_name);
/// A new request latch "rlock_semaphore_latch:{<name>}:<32 hex request id>".
std::string semaphore_latch(std::string_view raw_name);

/// The scripts (src/lua/semaphore_*.lua).
const script& semaphore_acquire_script();
const script& semaphore_release_script();
const script& semaphore_set_script();
/// Every script the semaphore runs (loaded on each connection with the lock's).
std::vector<const script*> semaphore_scripts();

/// The kinds of semaphore_set.lua, and release.
enum class semaphore_change { init, add, drain, release };

/// Runs one change of the counter `raw_name` at most once (its latch), as
/// semaphore_service::change says; also the permit-expirable semaphore's set and add, on the
/// same counter and channel.
void change_semaphore(const std::shared_ptr<core>& c, const std::string& raw_name,
                      semaphore_change what, std::int64_t permits,
                      std::function<void(std::error_code, std::int64_t, const std::string&)> done);

/// The semaphores of one client: their requests, and the acquires that wait.
class semaphore_service : public std::enable_shared_from_this<semaphore_service> {
 public:
  explicit semaphore_service(std::shared_ptr<core> c)
      : core_(std::move(c)), waits_(std::make_shared<wait_registry>(core_)) {}
  const std::shared_ptr<core>& engine() const { return core_; }

  /// Takes `permits` of semaphore `raw_name`, waiting until `deadline` (a deadline already
  /// passed: one try). `done(ec, taken, detail)` runs once, on an I/O thread (or the system
  /// executor after the client shut down). A stop request ends the wait with errc::stopped, and
  /// shutdown() with errc::shutdown, taking nothing (a try in flight that took the permits
  /// gives them back). Every try is bounded by at least one request timeout, so the call may
  /// end up to that long after `deadline` when the server is slow.
  void acquire(std::string raw_name, std::int64_t permits, clock::time_point deadline,
               std::stop_token stop,
               std::function<void(std::error_code, bool, const std::string&)> done);

  /// Runs one change of semaphore `raw_name` at most once (its latch), bounded by the
  /// configured timeouts and retries. `done(ec, result, detail)`: init 1/0; add and release the new
  /// count; drain the count before. `detail`: the reply's text that explains a failure.
  void change(const std::string& raw_name, semaphore_change what, std::int64_t permits,
              std::function<void(std::error_code, std::int64_t, const std::string&)> done);

  /// Ends every waiting acquire with errc::shutdown; later ones fail at once. Idempotent.
  void shutdown();

 private:
  std::shared_ptr<core> core_;
  std::shared_ptr<wait_registry> waits_;
};

}  // namespace rlock::detail
