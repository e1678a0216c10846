#include "detail/acquire_fsm.hpp"

#include <algorithm>

#include "rlock/error.hpp"

namespace rlock::detail {

acquire_fsm::action acquire_fsm::finish(std::error_code ec, bool acquired, bool release) {
  state_ = state::done;
  action a;
  a.kind = action_kind::done;
  a.ec = ec;
  a.acquired = acquired;
  a.release = release;
  return a;
}

acquire_fsm::action acquire_fsm::attempt(time_point now) {
  if (attempts_ > 0 && now >= p_.deadline) return finish({}, false);
  return send_attempt();
}

acquire_fsm::action acquire_fsm::back_off_or_retry(time_point now) {
  if (now < p_.not_before && now < p_.deadline) {
    state_ = state::waiting;
    backing_off_ = true;
    action a;
    a.kind = action_kind::wait;
    a.until = std::min(p_.not_before, p_.deadline);
    return a;
  }
  backing_off_ = false;
  if (p_.retry_of && now >= p_.deadline) return finish(p_.retry_of, false);
  return attempt(now);
}

acquire_fsm::action acquire_fsm::confirm() {
  confirming_ = true;
  return send_attempt();
}

acquire_fsm::action acquire_fsm::send_attempt() {
  state_ = state::attempting;
  ++attempts_;
  subscribed_at_send_ = subscribed_;
  woken_during_attempt_ = false;
  action a;
  a.kind = action_kind::send_acquire;
  a.until = p_.deadline;
  return a;
}

acquire_fsm::action acquire_fsm::wait_for_ttl(time_point now) {
  state_ = state::waiting;
  action a;
  a.kind = action_kind::wait;
  a.until = p_.deadline;
  if (last_ttl_ >= 0) {
    // +1 ms: Redis expires keys with millisecond precision; waking a hair later avoids a
    // re-try that would still find the key alive.
    const auto ttl_end = now + std::chrono::milliseconds(last_ttl_ + 1);
    a.until = std::min(a.until, ttl_end);
  }
  if (p_.max_wait.count() > 0) a.until = std::min(a.until, now + p_.max_wait);
  return a;
}

acquire_fsm::action acquire_fsm::spin_wait(time_point now) {
  action a = wait_for_ttl(now);
  a.until = std::min(a.until, now + delays_->next());
  return a;
}

acquire_fsm::action acquire_fsm::start(time_point now, bool head, channels subscribed) {
  subscribed_ = subscribed;
  if (head || p_.single_attempt || turn_pending_) return back_off_or_retry(now);
  state_ = state::queued;
  action a;
  a.kind = action_kind::wait;
  a.until = p_.deadline;
  return a;
}

acquire_fsm::action acquire_fsm::on_turn(time_point now, std::optional<time_point> held_until,
                                         channels subscribed) {
  if (state_ == state::idle) {
    // The waiter is in its process's queue but its start() has not run yet (another thread
    // enqueues it, then starts it): the turn must not be lost, or the waiter stays queued.
    turn_pending_ = true;
    return {};
  }
  if (state_ != state::queued) return {};
  subscribed_ = subscribed;
  if (stop_pending_) return finish(make_error_code(errc::stopped), false);
  if (now >= p_.deadline) return finish({}, false);
  if (!held_until || subscribed_ < needed_) return attempt(now);
  state_ = state::waiting;
  action a;
  a.kind = action_kind::wait;
  a.until = std::min(*held_until, p_.deadline);
  return a;
}

acquire_fsm::action acquire_fsm::on_reply(time_point now, const reply& r) {
  if (state_ != state::attempting) return {};
  if (handed_pending_) {
    // Held through the hand-off, once: the attempt either ran first (queued) or found the lock
    // already handed to this owner (the count-checked script does not count it twice). An
    // error here is that attempt's own, after every resend: it changes nothing that is held.
    if (stop_pending_) return finish(make_error_code(errc::stopped), true, true);
    handed_pending_ = false;
    // Which of the two it was is unknown, so the hand-off is confirmed by an attempt of its
    // own.
    if (p_.confirm_handoff) return confirm();
    return finish({}, true);
  }
  if (confirming_) {
    confirming_ = false;
    if (r.acquired) {
      if (stop_pending_) return finish(make_error_code(errc::stopped), true, true);
      return finish({}, true);
    }
    // Not confirmed (the replicas did not acknowledge it; or the attempt failed): the handed
    // hold is released. Not held at all (its TTL, cut at the queue deadline, ran out first):
    // the wait goes on below.
    if (r.ec) return finish(r.ec, false, true);
  }
  if (r.ec) {
    // The outcome may be unknown (timeout): the driver releases defensively when asked to.
    // A re-try cut off by the caller's deadline after the server has already answered that
    // the lock is held is an ordinary "not acquired within the wait", not a failure.
    if (r.ec == make_error_code(errc::timeout) && answered_ && now >= p_.deadline) {
      return finish({}, false, true);
    }
    // Likewise a try again cut off by the deadline ends with the error of the try before it.
    if (r.ec == make_error_code(errc::timeout) && p_.retry_of && now >= p_.deadline) {
      return finish(p_.retry_of, false, true);
    }
    // A cluster redirection: another node serves the lock's slot, so this attempt did not run,
    // and whatever an earlier attempt (timed out) may have left went with the slot to that
    // node, where an undo sent here cannot reach it. There is nothing to release.
    return finish(r.ec, false, r.ec != make_error_code(errc::cluster_redirect));
  }
  if (r.acquired) {
    if (stop_pending_) return finish(make_error_code(errc::stopped), true, true);
    return finish({}, true);
  }
  if (r.hold_gone && !retried_fresh_) {
    retried_fresh_ = true;
    if (stop_pending_) return finish(make_error_code(errc::stopped), false);
    return attempt(now);
  }
  last_ttl_ = r.ttl_ms;
  answered_ = true;
  if (stop_pending_) return finish(make_error_code(errc::stopped), false);
  if (p_.single_attempt || now >= p_.deadline) return finish({}, false);
  if (delays_) {
    // A release of this process arrived meanwhile: it may postdate the attempt's view.
    if (woken_during_attempt_) return attempt(now);
    return spin_wait(now);
  }
  needed_ = r.holder_hands_off ? channels::handoff : channels::all;
  if (subscribed_ < needed_) return subscribe(now);
  // The channels became subscribed while this attempt was in flight, or an unlock message
  // arrived meanwhile: the message may predate our attempt's view, so look once more.
  if (subscribed_at_send_ < needed_ || woken_during_attempt_) return attempt(now);
  return wait_for_ttl(now);
}

acquire_fsm::action acquire_fsm::subscribe(time_point now) {
  state_ = state::subscribing;
  action a;
  a.kind = action_kind::subscribe;
  a.until = std::min(p_.deadline, now + p_.subscription_timeout);
  a.level = needed_;
  return a;
}

acquire_fsm::action acquire_fsm::on_subscribed(time_point now, std::error_code ec,
                                               channels subscribed) {
  subscribed_ = subscribed;
  if (state_ != state::subscribing) return {};
  // A subscribe bounded by the deadline (a wait shorter than subscription_timeout) that timed
  // out is the wait running out, as when on_timer sees the deadline first: not acquired, no
  // error. Only a subscription_timeout shorter than the wait is an error.
  if (ec == errc::subscription_timeout && now >= p_.deadline) return finish({}, false);
  if (ec) return finish(ec, false);
  if (stop_pending_) return finish(make_error_code(errc::stopped), false);
  // Another waiter's narrower subscribe completed: this one still needs more.
  if (subscribed_ < needed_) return subscribe(now);
  // Subscribed before re-trying: an unlock after this attempt is certainly delivered.
  return attempt(now);
}

acquire_fsm::action acquire_fsm::on_wake(time_point now) {
  switch (state_) {
    case state::waiting:
      if (backing_off_) return {};
      return attempt(now);
    case state::attempting:
      woken_during_attempt_ = true;
      return {};
    default:
      return {};
  }
}

acquire_fsm::action acquire_fsm::on_timer(time_point now) {
  switch (state_) {
    case state::waiting:
      // The back-off's end (never after the deadline): the attempt it held back goes now.
      if (backing_off_) return back_off_or_retry(now);
      if (now >= p_.deadline) return finish({}, false);
      return attempt(now);
    case state::queued:
    case state::subscribing:
      if (now >= p_.deadline) return finish({}, false);
      return {};
    default:
      return {};
  }
}

acquire_fsm::action acquire_fsm::on_handed(time_point /*now*/) {
  if (state_ == state::done || state_ == state::idle) return {};
  if (state_ == state::attempting) {
    handed_pending_ = true;
    return {};
  }
  if (stop_pending_) return finish(make_error_code(errc::stopped), true, true);
  if (p_.confirm_handoff) return confirm();
  return finish({}, true);
}

acquire_fsm::action acquire_fsm::on_stop(time_point /*now*/) {
  switch (state_) {
    case state::attempting:
      stop_pending_ = true;
      return {};
    case state::done:
      return {};
    default:
      return finish(make_error_code(errc::stopped), false);
  }
}

}  // namespace rlock::detail
