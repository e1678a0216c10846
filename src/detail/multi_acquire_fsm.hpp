// Sans-I/O state machine of one acquire of a multi_lock (multi_lock.hpp): its member locks are
// tried one after another, in the order given, each within a share of the time left; a round
// ends held once every member has answered and at least `quorum` of them are held (all of them
// for a MultiLock, a majority for a RedLock). A round that can no longer reach the quorum
// releases what it holds and, while time is left, starts again after a short random pause.
// The I/O layer feeds it events and carries out the action each event returns.
//
// Properties (each covered by tests/unit/multi_acquire_fsm_test.cpp with simulated time):
//   - all or nothing: an acquire that does not end held releases every member it took first;
//   - bounded: no member is tried at or after the deadline, and each member's wait ends by it
//     and within `round_wait`, so that two clients that take the same locks in different
//     orders release and try again instead of waiting for each other until their deadlines
//     (or for ever); the pause between rounds is the caller's random value, so that two such
//     clients fall out of step;
//   - a quorum member's wait is its share of what is left (left / members, at least 1 ms), as
//     with Redisson's RedLock, so one silent server does not use up the whole wait;
//   - never spins on dead servers: a round in which no member answered "held by another" (only
//     errors) ends the acquire with the first error; a stop request or shutdown ends it at once
//     (after releasing).
#pragma once

#include <chrono>
#include <cstddef>
#include <system_error>
#include <vector>

namespace rlock::detail {

class multi_acquire_fsm {
 public:
  using clock = std::chrono::steady_clock;
  using time_point = clock::time_point;

  struct params {
    std::size_t members = 0;
    /// Held members that make the lock held: members (MultiLock) or members / 2 + 1 (RedLock).
    std::size_t quorum = 0;
    /// max: no deadline (lock()); at or before start: one round, each member tried once.
    time_point deadline = time_point::max();
    /// The longest a member is waited for in one round.
    clock::duration round_wait = std::chrono::milliseconds(1500);
  };

  enum class action_kind {
    acquire,  ///< try member `member`, waiting until `until` (a single try when until <= now)
    release,  ///< release `members` (held in this round; may be none); then on_released()
    pause,    ///< wait until `until`; then on_paused()
    done,     ///< finished: `acquired` (then `members` are the held ones), or `ec`
  };

  struct action {
    action_kind kind = action_kind::done;
    std::size_t member = 0;
    time_point until{};
    std::vector<std::size_t> members;
    bool acquired = false;
    std::error_code ec;
  };

  /// How a member's try ended: held; not held in its wait (another holds it); or an error.
  enum class member_result { held, busy, failed };

  explicit multi_acquire_fsm(params p) : p_(p) {}

  action start(time_point now);
  /// The member asked for by the last acquire action answered. `ec` with `failed`.
  action on_member(member_result r, std::error_code ec, time_point now);
  /// The release asked for has been sent and answered (whatever its outcome). `pause`: the
  /// pause before the next round, a random value the caller draws (0 to tens of ms).
  action on_released(time_point now, clock::duration pause);
  action on_paused(time_point now);

 private:
  action try_member(time_point now);
  action end_round();
  action finish();

  params p_;
  bool single_ = false;
  std::size_t next_ = 0;
  std::vector<std::size_t> held_;
  std::size_t failures_ = 0;
  bool saw_busy_ = false;
  std::error_code first_error_;
  std::error_code fatal_;
};

}  // namespace rlock::detail
