// Sans-I/O retry policy for one request: Redisson's retryAttempts/retryDelay, bounded by a
// deadline on steady_clock, and never resending a command whose outcome is unknown unless the
// caller marked it idempotent.
#pragma once

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
  retry_fsm(int max_attempts, bool idempotent, clock::time_point deadline)
      : max_attempts_(max_attempts < 1 ? 1 : max_attempts),
        idempotent_(idempotent),
        deadline_(deadline) {}

  /// Called after each attempt with its error (empty on success) and whether it was written.
  /// `next_delay` is the delay the back-off policy proposes for the next attempt.
  action on_result(std::error_code ec, bool written, clock::time_point now,
                   std::chrono::milliseconds next_delay) {
    ++attempts_;
    if (!ec) return {};
    if (!is_transient(ec)) return {};
    // Once written, any transport failure leaves the outcome unknown. Only a reply from the
    // server itself (LOADING, BUSY: nothing ran) proves the command did not run.
    const bool outcome_unknown = written && ec != errc::server_busy;
    if (outcome_unknown && !idempotent_) return {};
    if (attempts_ >= max_attempts_) return {};
    if (now + next_delay >= deadline_) return {};
    return {action::kind::retry_after, next_delay};
  }

  int attempts() const { return attempts_; }
  clock::time_point deadline() const { return deadline_; }

 private:
  int max_attempts_;
  bool idempotent_;
  clock::time_point deadline_;
  int attempts_ = 0;
};

}  // namespace rlock::detail
