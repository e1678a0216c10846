#include "detail/permit_renewal.hpp"

#include <algorithm>

namespace rlock::detail {

permit_renewal::permit_renewal(milliseconds lease, bool renew, clock::time_point valid_until)
    : lease_(lease),
      retry_(std::min(std::max(lease / 10, milliseconds(1)), milliseconds(1000))),
      renew_(renew),
      valid_(valid_until),
      due_(valid_until - lease + lease / 3) {}

permit_renewal::action permit_renewal::next(clock::time_point now) {
  if (lost_ || in_flight_ || now >= valid_) {
    // A renewal in flight at valid_until could only confirm a lease that may have ended.
    lost_ = true;
    return {step::lost, now};
  }
  if (!renew_) return {step::wait, valid_};
  if (now < due_) return {step::wait, std::min(due_, valid_)};
  in_flight_ = true;
  sent_ = now;
  return {step::renew, valid_};
}

permit_renewal::action permit_renewal::on_reply(clock::time_point now, bool failed, bool held) {
  if (lost_) return {step::lost, now};
  in_flight_ = false;
  if (failed) {
    due_ = now + retry_;
    return next(now);
  }
  if (!held) {
    lost_ = true;
    return {step::lost, now};
  }
  valid_ = std::max(valid_, sent_ + lease_);
  due_ = sent_ + lease_ / 3;
  return next(now);
}

}  // namespace rlock::detail
