// permit_renewal.hpp: when to renew the lease of a kept permit (rlock/permit_keeper.hpp), and
// when the permit counts as lost: the protocol that permit_keeper_op.hpp carries out, without
// I/O or clocks of its own (the caller passes the time), so it is unit-tested with simulated
// time.
//
// Guarantees:
//  - valid_until() is a lower bound of the lease's end on the server: the send time of the last
//    renewal the server confirmed (or the bound given at construction) plus the lease.
//  - Renewals are due every third of the lease, measured from the last confirmed one's send
//    time; a failed one (an error reply or a transport failure) is tried again every tenth of
//    the lease, at most 1 s, never later than valid_until().
//  - step::lost comes once valid_until() has passed with no renewal confirmed (also while one
//    is in flight: its answer would come too late to matter), or when a renewal finds the permit
//    gone; after it, every call returns step::lost.
//  - With `renew` false nothing is sent: step::lost at valid_until().
// Not thread-safe: one driver calls it.
#pragma once

#include <chrono>

namespace rlock::detail {

class permit_renewal {
 public:
  using clock = std::chrono::steady_clock;
  using milliseconds = std::chrono::milliseconds;

  enum class step {
    wait,   ///< nothing to do until `until` (or the stop)
    renew,  ///< send a renewal now; its answer goes to on_reply(), by `until` at the latest
    lost,   ///< the permit is lost (or may be): tell the holder
  };
  struct action {
    step what = step::wait;
    clock::time_point until{};
  };

  permit_renewal(milliseconds lease, bool renew, clock::time_point valid_until);

  /// At the start, and whenever the last action's `until` has come.
  action next(clock::time_point now);
  /// The answer to the renewal sent at the last step::renew: an error (`failed`), or whether the
  /// permit was still held (and now leased for another lease from then).
  action on_reply(clock::time_point now, bool failed, bool held);

  clock::time_point valid_until() const { return valid_; }

 private:
  milliseconds lease_;
  milliseconds retry_;
  bool renew_;
  clock::time_point valid_;
  clock::time_point due_;
  clock::time_point sent_{};
  bool in_flight_ = false;
  bool lost_ = false;
};

}  // namespace rlock::detail
