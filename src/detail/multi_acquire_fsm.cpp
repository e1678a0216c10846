#include "detail/multi_acquire_fsm.hpp"

#include <algorithm>
#include <utility>

#include "rlock/error.hpp"

namespace rlock::detail {
namespace {

// Errors that end the acquire at once: the caller's stop request, the client's shutdown, a
// refused argument. Others (a server down or slow) count as a member not held.
bool fatal(std::error_code ec) {
  return ec == errc::stopped || ec == errc::shutdown || ec == errc::invalid_argument;
}

}  // namespace

multi_acquire_fsm::action multi_acquire_fsm::start(time_point now) {
  single_ = p_.deadline <= now;
  next_ = 0;
  held_.clear();
  failures_ = 0;
  saw_busy_ = false;
  first_error_.clear();
  return try_member(now);
}

multi_acquire_fsm::action multi_acquire_fsm::try_member(time_point now) {
  if (next_ == p_.members) return finish();
  action a;
  a.kind = action_kind::acquire;
  a.member = next_;
  if (single_ || now >= p_.deadline) {
    a.until = now;  // one try
    return a;
  }
  if (p_.deadline == time_point::max()) {
    a.until = now + p_.round_wait;
    return a;
  }
  const auto left = p_.deadline - now;
  auto share = left;
  if (p_.quorum < p_.members) {
    share = std::max<clock::duration>(left / static_cast<clock::rep>(p_.members),
                                      std::chrono::milliseconds(1));
  }
  // A round ends by its bound whatever the deadline: a member held by a client that waits for
  // another member held here must not keep both waiting until their deadlines.
  a.until = now + std::min(share, p_.round_wait);
  return a;
}

multi_acquire_fsm::action multi_acquire_fsm::on_member(member_result r, std::error_code ec,
                                                       time_point now) {
  const std::size_t member = next_++;
  if (r == member_result::held) {
    held_.push_back(member);
  } else {
    ++failures_;
    if (r == member_result::busy) {
      saw_busy_ = true;
    } else {
      if (!first_error_) first_error_ = ec;
      if (fatal(ec)) fatal_ = ec;
    }
  }
  if (fatal_ || p_.members - failures_ < p_.quorum) return end_round();
  return try_member(now);
}

multi_acquire_fsm::action multi_acquire_fsm::end_round() {
  next_ = p_.members;
  // Also when nothing is held: the caller draws the pause before the next round.
  action a;
  a.kind = action_kind::release;
  a.members = std::exchange(held_, {});
  return a;
}

multi_acquire_fsm::action multi_acquire_fsm::on_released(time_point now, clock::duration pause) {
  action a;
  if (fatal_) {
    a.ec = fatal_;
    return a;
  }
  // Only errors, no member held by another: the servers are down or refuse; waiting longer
  // would spin on them.
  if (!saw_busy_ && first_error_) {
    a.ec = first_error_;
    return a;
  }
  if (single_ || now >= p_.deadline) return a;  // not acquired
  a.kind = action_kind::pause;
  a.until = p_.deadline - now <= pause ? p_.deadline : now + pause;
  return a;
}

multi_acquire_fsm::action multi_acquire_fsm::on_paused(time_point now) {
  if (now >= p_.deadline) {
    action a;  // not acquired
    return a;
  }
  return start(now);
}

multi_acquire_fsm::action multi_acquire_fsm::finish() {
  if (held_.size() >= p_.quorum) {
    action a;
    a.acquired = true;
    a.members = held_;
    return a;
  }
  return end_round();
}

}  // namespace rlock::detail
