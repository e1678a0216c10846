// The sleeps of a spin lock's waiter (rlock::spin_backoff; Redisson's ExponentialBackOff and
// ConstantBackOff policies), without I/O: acquire_fsm asks for the next one after each failed
// attempt.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

#include "rlock/spin_lock.hpp"

namespace rlock::detail {

class spin_delays {
 public:
  /// `seed` makes the jitter reproducible (tests); the driver seeds each acquire differently.
  spin_delays(spin_backoff b, std::uint64_t seed) : b_(b), next_(b.initial_delay), rng_(seed) {}

  /// The sleep after the next failed attempt: initial_delay first, then the previous sleep x
  /// multiplier plus a random 0 to (failures so far - 1) ms, capped at max_delay.
  std::chrono::milliseconds next() {
    const std::chrono::milliseconds out = next_;
    if (next_ >= b_.max_delay) return b_.max_delay;
    ++failures_;
    std::uniform_int_distribution<long long> jitter(0, failures_ - 1);
    // Compared before multiplying: a long max_delay with a large multiplier must not overflow.
    if (next_.count() >= b_.max_delay.count() / b_.multiplier) {
      next_ = b_.max_delay;
    } else {
      next_ = std::min(b_.max_delay,
                       std::chrono::milliseconds(next_.count() * b_.multiplier + jitter(rng_)));
    }
    return out;
  }

 private:
  spin_backoff b_;
  std::chrono::milliseconds next_;
  long long failures_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace rlock::detail
