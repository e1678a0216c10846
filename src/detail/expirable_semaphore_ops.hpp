// The permit-expirable semaphore's operations on the Redis core (permit_expirable_semaphore.hpp):
// its keys, permit ids, one-shot scripts, and the wait of an acquire.
//
// The wait (channel_wait.hpp): try the acquire script; when too few permits are available, wait
// on the semaphore's channel (releases, reclaims and count changes publish there) and try again
// at each message, and at the nearest lease's end (which nobody announces: an expired permit is
// reclaimed by whichever script runs next), until the deadline. A try that took permits the
// wait does not deliver, or whose outcome is unknown, is undone by releasing its ids.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "detail/channel_wait.hpp"
#include "detail/core.hpp"
#include "detail/permit_keeper_op.hpp"

namespace rlock::detail {

/// The lease set of `raw_name`: Redisson's suffixName(name, "timeout"), "{<name>}:timeout" (or
/// "<name>:timeout" when the name has a '{').
std::string expirable_semaphore_timeout_key(std::string_view raw_name);

/// A new permit id: 16 random bytes (a generator seeded with 256 bits from std::random_device
/// per thread), so that ids of different clients never meet.
std::string random_permit_id();
/// The id as Java prints it: 32 lowercase hex characters.
std::string permit_id_hex(std::string_view bytes);
/// The 16 bytes of a 32-character hex id (either case); nullopt for anything else.
std::optional<std::string> permit_id_bytes(std::string_view hex);

/// Why a permit's lease is refused ("" if it is fine): <= 0, or longer than a century (as the
/// lock's: PEXPIRE-style arithmetic past it is refused rather than overflowed). nullopt (never
/// expires) is fine.
std::string bad_expirable_lease(std::optional<std::chrono::milliseconds> lease);
/// A lease as the scripts take it: its ms, or "-1" for none (the permit never expires).
std::string expirable_lease_arg(std::optional<std::chrono::milliseconds> lease);

/// The scripts (src/lua/expirable_semaphore_*.lua).
const script& expirable_semaphore_acquire_script();
const script& expirable_semaphore_release_script();
const script& expirable_semaphore_inspect_script();
std::vector<const script*> expirable_semaphore_scripts();

/// What expirable_semaphore_inspect.lua reads or changes.
enum class expirable_inspect { available, acquired, permits, set, lease, update };

class expirable_semaphore_service
    : public std::enable_shared_from_this<expirable_semaphore_service> {
 public:
  explicit expirable_semaphore_service(std::shared_ptr<core> c)
      : core_(std::move(c)), waits_(std::make_shared<wait_registry>(core_)) {}
  const std::shared_ptr<core>& engine() const { return core_; }
  /// The kept permits (permit_keeper.hpp), which shutdown() ends.
  permit_keeper_registry& keepers() { return keepers_; }
  const permit_keeper_registry& keepers() const { return keepers_; }

  using ids_callback =
      std::function<void(std::error_code, std::vector<std::string> ids, const std::string&)>;
  using count_callback = std::function<void(std::error_code, std::int64_t, const std::string&)>;

  /// Takes `permits` permits of `raw_name` with `lease` (nullopt: never expire), waiting until
  /// `deadline` (passed: one try). `done(ec, ids, detail)` runs once: the new permits' ids (16
  /// bytes each), or none when not taken by the deadline. As semaphore_service::acquire for
  /// stop, shutdown and bounds.
  void acquire(std::string raw_name, std::int64_t permits,
               std::optional<std::chrono::milliseconds> lease, clock::time_point deadline,
               std::stop_token stop, ids_callback done);
  /// Releases the permits `ids` (16 bytes each), all or none, at most once: done(ec, 1 | 0 | -1)
  /// as expirable_semaphore_release.lua returns for "all".
  void release(const std::string& raw_name, std::vector<std::string> ids, count_callback done);
  /// Reclaims expired permits, then reads or updates (expirable_semaphore_inspect.lua).
  /// `number`: the new lease in ms ("-1": never expires) for `update`, the permits in all for
  /// `set`; ignored otherwise.
  void inspect(const std::string& raw_name, expirable_inspect what, const std::string& id,
               const std::string& number, count_callback done);
  /// Redisson's trySetPermits (`init`: 1 if set) and addPermits (the new count), at most once
  /// (semaphore_set.lua, the semaphore's: the same counter and channel).
  void set(const std::string& raw_name, bool init, std::int64_t permits, count_callback done);

  /// Ends every waiting acquire with errc::shutdown, and every kept permit (its loss token
  /// stops); later ones fail at once. Idempotent.
  void shutdown();

 private:
  std::shared_ptr<core> core_;
  std::shared_ptr<wait_registry> waits_;
  permit_keeper_registry keepers_;
};

}  // namespace rlock::detail
