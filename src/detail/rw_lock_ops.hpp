// The read-write locks of one client (read_write_lock.hpp): the acquire's wait, the holds this
// client keeps (count, watchdog registration, loss signal) and their release.
//
// An acquire runs rwlock_acquire.lua; when the lock is held it waits on the lock's channel
// (channel_wait.hpp) and tries again at each message, after a resubscription, and when the TTL
// the failed try returned has run out (a holder that crashed announces nothing). Every process
// waiting on the lock tries at each release: a write release may let every reader in at once.
// A try whose outcome is unknown, or that took the lock when the wait no longer wants it
// (stopped, shut down), is undone by an unlock that releases only if that try's request latch
// exists, after closing the connections the lost try may still run on.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <vector>

#include "detail/channel_wait.hpp"
#include "detail/core.hpp"
#include "detail/watchdog.hpp"
#include "rlock/read_write_lock.hpp"

namespace rlock::detail {

/// The channel of read-write lock `raw_name`: redisson_rwlock:{<name>}.
std::string rw_lock_channel(std::string_view raw_name);
/// The prefix of its read holds' timeout keys: "{<name>}", or the name when it has a hash tag
/// (read hold n of an owner field has "<prefix>:<field>:rwlock_timeout:<n>", built by the
/// scripts: rwlock_prelude.lua).
std::string rw_key_prefix(std::string_view raw_name);

/// The scripts (src/lua/rwlock_*.lua).
const script& rwlock_acquire_script();
const script& rwlock_unlock_script();
const script& rwlock_renew_script();
const script& rwlock_force_unlock_script();
/// Every script the read-write lock runs (loaded on each connection with the lock's).
std::vector<const script*> rw_lock_scripts();

struct rw_acquire_request {
  std::string raw_name;
  rw_mode mode = rw_mode::write;
  std::uint64_t owner_id = 0;
  /// nullopt: the watchdog lease, renewed while held.
  std::optional<std::chrono::milliseconds> lease;
  /// Passed (or now): one try.
  clock::time_point deadline = clock::time_point::max();
  std::stop_token stop;
};

class rw_lock_service : public std::enable_shared_from_this<rw_lock_service> {
 public:
  using done_flag = std::function<void(std::error_code, bool, const std::string&)>;
  using done_void = std::function<void(std::error_code, const std::string&)>;

  explicit rw_lock_service(std::shared_ptr<core> c);
  ~rw_lock_service();
  const std::shared_ptr<core>& engine() const { return core_; }

  /// Takes a hold. `done(ec, acquired, detail)` runs once, on an I/O thread (or the system
  /// executor after shutdown). A stop request ends the wait with errc::stopped, shutdown() with
  /// errc::shutdown, holding nothing. Each try is bounded by at least one request timeout.
  void acquire(rw_acquire_request req, done_flag done);
  /// Releases one hold of the owner: errc::not_owner when this client records none (or the
  /// server has none any more: the hold was lost, its loss token is stopped).
  void unlock(const std::string& raw_name, rw_mode mode, std::uint64_t owner_id, done_void done);
  /// Deletes the lock whoever holds it; `done(ec, existed, detail)`. This client's holds of it
  /// are lost at once (their loss tokens stopped).
  void force_unlock(const std::string& raw_name, done_flag done);

  /// Local view of a hold: its count (0: none), loss token (stopped when none) and deadline.
  long long hold_count(const std::string& raw_name, rw_mode mode, std::uint64_t owner_id);
  std::stop_token loss_token(const std::string& raw_name, rw_mode mode, std::uint64_t owner_id);
  clock::time_point valid_until(const std::string& raw_name, rw_mode mode, std::uint64_t owner_id);
  /// The owner field of `owner_id` in the lock's hash ("<uuid>:<id>", ":write" appended for the
  /// write half).
  std::string field(rw_mode mode, std::uint64_t owner_id) const;
  /// Renewal scripts sent so far.
  std::uint64_t renewals_sent() const { return watchdog_->scripts_sent(); }
  /// Holds the watchdog keeps now (client_stats::holds_watched).
  std::size_t holds_watched() const { return watchdog_->active(); }

  /// Ends waits with errc::shutdown, stops renewal, and stops every hold's loss token.
  void shutdown();

 private:
  struct hold {
    long long count = 0;
    std::uint64_t watchdog_id = 0;
    std::chrono::milliseconds lease{};
    std::stop_source lost;
  };
  using hold_key = std::tuple<std::string, rw_mode, std::uint64_t>;

  /// Records a successful acquire sent at `sent_at`.
  void add_hold(const hold_key& k, std::chrono::milliseconds lease, bool renew,
                clock::time_point sent_at);

  std::shared_ptr<core> core_;
  std::shared_ptr<wait_registry> waits_;
  std::shared_ptr<watchdog> watchdog_;
  std::mutex mu_;
  std::map<hold_key, hold> holds_;
  bool closed_ = false;
};

}  // namespace rlock::detail
