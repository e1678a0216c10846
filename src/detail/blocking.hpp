// Waiting for an asynchronous result on the calling thread.
//
// The waiter first polls for a bounded time (config::blocking_spin), then sleeps on a futex
// (std::atomic::wait). A reply on a local network often arrives within tens of microseconds;
// polling for that long keeps the waiting thread running instead of paying the wake-up of a
// sleeping one, which on virtual machines costs more than the round trip itself. The cost is
// CPU time of the calling thread, at most `spin` per blocking call. Spinning pays only while
// the spinners leave cores free for the I/O thread and the server: at most half the machine's
// cores' worth of threads of the process spin at once, the others sleep at once (32 threads
// spinning on 2 cores slowed them down by a third).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <utility>

namespace rlock::detail {

/// Bounds the threads of this process that poll at the same time.
class spin_slots {
 public:
  static bool try_enter() {
    static const unsigned limit = std::max(1U, std::thread::hardware_concurrency() / 2);
    unsigned n = count().load(std::memory_order_relaxed);
    while (n < limit) {
      if (count().compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) return true;
    }
    return false;
  }
  static void leave() { count().fetch_sub(1, std::memory_order_relaxed); }

 private:
  static std::atomic<unsigned>& count() {
    static std::atomic<unsigned> n{0};
    return n;
  }
};

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
    if (spin.count() > 0 && spin_slots::try_enter()) {
      const auto until = std::chrono::steady_clock::now() + spin;
      while (!ready_.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < until) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
      spin_slots::leave();
    }
    ready_.wait(false, std::memory_order_acquire);
    return std::move(value_);
  }

 private:
  T value_{};
  std::atomic<bool> ready_{false};
};

}  // namespace rlock::detail
