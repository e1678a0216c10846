// Waiting for an asynchronous result on the calling thread.
//
// The waiter first polls for a bounded time (config::blocking_spin), then sleeps on a futex
// (std::atomic::wait). A reply on a local network often arrives within tens of microseconds;
// polling for that long keeps the waiting thread running instead of paying the wake-up of a
// sleeping one, which on virtual machines costs more than the round trip itself. The cost is
// CPU time of the calling thread, at most `spin` per blocking call.
#pragma once

#include <atomic>
#include <chrono>
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
  /// Blocks until set() has run, then returns the result. Polls for up to `spin` first.
  T take(std::chrono::microseconds spin) {
    if (spin.count() > 0) {
      const auto until = std::chrono::steady_clock::now() + spin;
      while (!ready_.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < until) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
    }
    ready_.wait(false, std::memory_order_acquire);
    return std::move(value_);
  }

 private:
  T value_{};
  std::atomic<bool> ready_{false};
};

}  // namespace rlock::detail
