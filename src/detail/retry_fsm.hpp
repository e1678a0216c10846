// Sans-I/O retry policy for one request: Redisson's retryAttempts/retryDelay, bounded by a
// deadline on steady_clock, and never resending a command whose outcome is unknown unless the
// caller marked it idempotent. No attempt starts at or after the deadline; when the policy's
// delay would pass it, the next attempt starts halfway between now and the deadline instead.
#pragma once

#include <algorithm>
#include <chrono>

#include "detail/exec_result.hpp"

namespace rlock::detail {

class retry_fsm {
 public:
  using clock = std::chrono::steady_clock;

  struct action {
    enum class kind { done, retry_after };
    kind what = kind::done;
    std::chrono::milliseconds delay{0};
  };

  /// `max_attempts` counts the first attempt (>= 1). `deadline` bounds all attempts and delays.
  /// `start_by`, when before `deadline`, is when the caller stops waiting for a result it can
  /// still use: no attempt starts at or after it, and the halfway rule below aims at it; an
  /// attempt under way still has until `deadline` for its reply (so that its outcome is known).
  retry_fsm(int max_attempts, bool idempotent, clock::time_point deadline,
            clock::time_point start_by = clock::time_point::max())
      : max_attempts_(max_attempts < 1 ? 1 : max_attempts),
        idempotent_(idempotent),
        deadline_(deadline),
        start_by_(std::min(deadline, start_by)) {}

  /// Called after each attempt with its error (empty on success) and whether it was written.
  /// `next_delay` is the delay the back-off policy proposes for the next attempt.
  action on_result(std::error_code ec, bool written, clock::time_point now,
                   std::chrono::milliseconds next_delay) {
    ++attempts_;
    if (!ec) return {};
    if (!is_transient(ec)) return {};
    // Once written, any transport failure leaves the outcome unknown. Only a reply from the
    // server itself (LOADING, BUSY: nothing ran) proves the command did not run.
    if (failed_attempt_may_have_run(ec, written) && !idempotent_) return {};
    if (attempts_ >= max_attempts_) return {};
    if (now >= start_by_) return {};
    if (now + next_delay < start_by_) return {action::kind::retry_after, next_delay};
    // The policy's delay would pass the deadline. Rather than give up with time left (a server
    // LOADING or BUSY for a moment, a reconnect under way), the next attempt starts halfway to
    // the deadline, leaving the other half for the attempt itself; too little time left for
    // that, and the request fails now.
    const auto half = std::chrono::duration_cast<std::chrono::milliseconds>((start_by_ - now) / 2);
    if (half < min_delay_before_deadline) return {};
    return {action::kind::retry_after, half};
  }

  /// The shortest wait worth an attempt when the policy's delay would pass the deadline.
  static constexpr std::chrono::milliseconds min_delay_before_deadline{10};

  int attempts() const { return attempts_; }
  clock::time_point deadline() const { return deadline_; }
  /// No attempt starts at or after this (deadline(), or the earlier start_by).
  clock::time_point start_by() const { return start_by_; }

 private:
  int max_attempts_;
  bool idempotent_;
  clock::time_point deadline_;
  clock::time_point start_by_;
  int attempts_ = 0;
};

}  // namespace rlock::detail
