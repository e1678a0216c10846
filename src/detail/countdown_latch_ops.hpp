// The countdown latch's operations on the Redis core (countdown_latch.hpp): one-shot scripts,
// and the wait for the count to reach zero.
//
// The wait (channel_wait.hpp): read the count; while it is above zero, wait on the latch's
// channel, where the count down that reaches zero publishes "0" (and setting or deleting a
// latch publishes "1"), and read it again at each message.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "detail/channel_wait.hpp"
#include "detail/core.hpp"

namespace rlock::detail {

/// Redisson's channel of latch `raw_name`: "redisson_countdownlatch__channel__{<name>}" (braces
/// always added, protocol reference §10.1).
std::string countdown_latch_channel(std::string_view raw_name);

/// The scripts (src/lua/countdown_latch_*.lua), loaded on each connection with the lock's.
std::vector<const script*> countdown_latch_scripts();

enum class countdown_change { init, remove, count_down };

class countdown_latch_service {
 public:
  explicit countdown_latch_service(std::shared_ptr<core> c)
      : core_(std::move(c)), waits_(std::make_shared<wait_registry>(core_)) {}
  const std::shared_ptr<core>& engine() const { return core_; }

  /// Waits until the count of latch `raw_name` is zero (or the latch does not exist), until
  /// `deadline` (passed: one read). done(ec, reached, detail), once, on an I/O thread.
  void await(std::string raw_name, clock::time_point deadline, std::stop_token stop,
             std::function<void(std::error_code, bool, const std::string&)> done);

  /// Runs one change at most once (its request key), bounded by the configured timeouts and
  /// retries. done(ec, result, detail): init and remove 1/0; count_down the count after.
  void change(const std::string& raw_name, countdown_change what, std::int64_t count,
              std::function<void(std::error_code, std::int64_t, const std::string&)> done);

  /// The count now (0 when there is no latch); errc::wrong_type for a key of another kind.
  void count(const std::string& raw_name,
             std::function<void(std::error_code, std::int64_t, const std::string&)> done);

  /// Ends every wait with errc::shutdown; later ones fail at once.
  void shutdown() { waits_->shutdown(); }

 private:
  std::shared_ptr<core> core_;
  std::shared_ptr<wait_registry> waits_;
};

}  // namespace rlock::detail
