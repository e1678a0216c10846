// Waiting for an asynchronous result on the calling thread, with one futex wake and no
// allocation beyond the result itself.
#pragma once

#include <atomic>
#include <utility>

namespace rlock::detail {

template <class T>
class blocking_result {
 public:
  /// Stores the result and wakes the waiter. Call exactly once.
  void set(T v) {
    value_ = std::move(v);
    ready_.store(true, std::memory_order_release);
    ready_.notify_one();
  }
  /// Blocks until set() has run, then returns the result.
  T take() {
    ready_.wait(false, std::memory_order_acquire);
    return std::move(value_);
  }

 private:
  T value_{};
  std::atomic<bool> ready_{false};
};

}  // namespace rlock::detail
