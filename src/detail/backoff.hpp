// Delays between attempts: Redisson's EqualJitterDelay, and the reconnect back-off.
#pragma once

#include <algorithm>
#include <chrono>
#include <random>

namespace rlock::detail {

/// Equal jitter: for attempt k (k >= 1) the cap is min(base * 2^k, max); the delay is half the cap
/// plus a uniformly random amount up to the other half. With Redisson's defaults (1000 ms, 2 s)
/// every retry waits 1 to 2 s.
class equal_jitter {
 public:
  equal_jitter(std::chrono::milliseconds base, std::chrono::milliseconds max)
      : base_(base), max_(max) {}

  template <class Rng>
  std::chrono::milliseconds delay(int attempt, Rng& rng) const {
    using std::chrono::milliseconds;
    long long cap = base_.count();
    for (int i = 0; i < attempt && cap < max_.count(); ++i) cap *= 2;
    cap = std::min<long long>(cap, max_.count());
    const long long half = cap / 2;
    std::uniform_int_distribution<long long> jitter(0, std::max<long long>(0, cap - half));
    return milliseconds(half + jitter(rng));
  }

 private:
  std::chrono::milliseconds base_;
  std::chrono::milliseconds max_;
};

}  // namespace rlock::detail
