// Waiting for an asynchronous result on the calling thread.
//
// The waiter first polls for a bounded time (config::blocking_spin), then sleeps on a futex. A
// reply on a local network often arrives within tens of microseconds; polling for that long keeps
// the waiting thread running instead of paying the wake-up of a sleeping one, which on virtual
// machines costs more than the round trip itself. The cost is CPU time of the calling thread, at
// most `spin` per blocking call, and only while polling pays (spin_policy).
//
// The poll yields the CPU (sched_yield) between looks instead of spinning on it. The thread that
// completes the result (the client's I/O thread, woken by the reply) is often placed on the
// poller's CPU; a spinning poller then holds it off until the polling time is over. Measured on
// a 2-core VM, interleaved runs against spinning with `pause`:
//  - one thread's GET issued 200 µs after its previous one: p90 58-77 µs, against 138-142 µs;
//    1 ms after: mean 74-84 µs, against 92-104 µs;
//  - 32 threads' lock+unlock cycles: 38,000-45,400/s, against 33,200-37,000/s;
//  - 8 processes contending for one lock: 683-724 acquisitions/s, against 656-698/s;
//  - back-to-back calls of one thread: unchanged within the runs' noise (GET mean 34-40 µs,
//    against 34-49 µs).
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <thread>
#include <utility>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace rlock::detail {

// Sleeping and waking on a 32-bit word. Linux: the futex system call itself. (libstdc++'s
// std::atomic::wait calls sched_yield in a loop before it sleeps: with 32 blocked threads that
// was three quarters of all context switches of a lock+unlock cycle.)
#if defined(__linux__)
inline void sleep_while(std::atomic<std::uint32_t>& word, std::uint32_t value) {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, value, nullptr,
            nullptr, 0);
}
inline void wake(std::atomic<std::uint32_t>& word) {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, 1, nullptr,
            nullptr, 0);
}
#else
inline void sleep_while(std::atomic<std::uint32_t>& word, std::uint32_t value) {
  word.wait(value, std::memory_order_acquire);
}
inline void wake(std::atomic<std::uint32_t>& word) {
  word.notify_one();
}
#endif

/// Decides whether a blocking call polls before it sleeps. Polling pays only while the spinners
/// leave cores free for the I/O thread and the server, and while results do arrive within the
/// polling time:
///  - at most half the machine's cores' worth of threads of the process poll at once, the others
///    sleep at once (32 threads polling on 2 cores slowed them down by a third);
///  - when half of the process's latest 16 polls ended without the result (a loaded machine, a
///    distant server), the next 64 blocking calls sleep at once; then polling is tried again. A
///    pause that polling does not outlast (half of the first 16 polls miss again) doubles, up to
///    4,096 calls; once polling pays, pauses start over at 64. A tail of slow replies does not
///    pause polling: on a 2-core VM about 5% of polls miss even when polling pays (with
///    "3 misses in a row" as the rule, a third of one thread's calls slept and its lock+unlock
///    cycles ran at 0.45-0.87x of the rate with this rule, in interleaved runs).
class spin_policy {
 public:
  /// The policy of the process's blocking calls.
  static spin_policy& process() {
    static spin_policy p(std::max(1U, std::thread::hardware_concurrency() / 2));
    return p;
  }
  /// A policy that lets at most `max_polling` threads poll at once.
  explicit spin_policy(unsigned max_polling) : max_polling_(max_polling) {}

  /// Whether this blocking call may poll. If true, call leave() when polling ends.
  bool try_enter() {
    if (skip_.load(std::memory_order_relaxed) > 0) {
      skip_.fetch_sub(1, std::memory_order_relaxed);
      return false;
    }
    unsigned n = polling_.load(std::memory_order_relaxed);
    while (n < max_polling_) {
      if (polling_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) return true;
    }
    return false;
  }
  /// After try_enter() returned true: whether the result came while polling.
  void leave(bool got_result) {
    polling_.fetch_sub(1, std::memory_order_relaxed);
    // Polls since the last pause, counted up to just past the window (it only matters whether
    // the window has passed).
    int polls = polls_since_pause_.load(std::memory_order_relaxed);
    if (polls <= window) polls = polls_since_pause_.fetch_add(1, std::memory_order_relaxed) + 1;
    // The outcomes of the latest polls, newest in bit 0 (1: missed).
    std::uint32_t h = history_.load(std::memory_order_relaxed);
    std::uint32_t next = 0;
    do {
      next = (h << 1) | (got_result ? 0U : 1U);
    } while (!history_.compare_exchange_weak(h, next, std::memory_order_relaxed));
    if (got_result || std::popcount(next & window_mask) < misses_to_pause) return;
    // Polling does not pay. If it did not pay again right after the last pause either, the
    // pause doubles; otherwise it starts over.
    int pause = pause_.load(std::memory_order_relaxed);
    pause = polls <= window ? std::min(pause * 2, max_pause) : min_pause;
    pause_.store(pause, std::memory_order_relaxed);
    history_.store(0, std::memory_order_relaxed);
    polls_since_pause_.store(0, std::memory_order_relaxed);
    skip_.store(pause, std::memory_order_relaxed);
  }

  static constexpr int window = 16;  // the latest polls whose outcome counts
  static constexpr int misses_to_pause = window / 2;
  static constexpr int min_pause = 64;
  static constexpr int max_pause = 4096;

 private:
  static constexpr std::uint32_t window_mask = (1U << window) - 1;

  const unsigned max_polling_;
  std::atomic<unsigned> polling_{0};
  std::atomic<std::uint32_t> history_{0};
  std::atomic<int> polls_since_pause_{window + 1};
  std::atomic<int> pause_{min_pause};
  std::atomic<int> skip_{0};
};

template <class T>
class blocking_result {
 public:
  /// Stores the result and wakes the waiter. Call exactly once.
  void set(T v) {
    value_ = std::move(v);
    if (state_.exchange(ready, std::memory_order_acq_rel) == sleeping) wake(state_);
  }
  /// Blocks until set() has run, then returns the result. Polls for up to `spin` first; with
  /// `poll`, each look also calls it (it may complete the result on this thread: a caller
  /// reading its own reply) and yields only when it found nothing.
  T take(std::chrono::microseconds spin, bool (*poll)() = nullptr) {
    spin_policy& policy = spin_policy::process();
    if (spin.count() > 0 && policy.try_enter()) {
      const auto until = std::chrono::steady_clock::now() + spin;
      bool got = false;
      while (!(got = state_.load(std::memory_order_acquire) == ready) &&
             std::chrono::steady_clock::now() < until) {
        if (poll == nullptr || !poll()) std::this_thread::yield();
      }
      policy.leave(got);
    }
    std::uint32_t s = empty;
    if (state_.compare_exchange_strong(s, sleeping, std::memory_order_acq_rel)) s = sleeping;
    while (s != ready) {
      sleep_while(state_, sleeping);
      s = state_.load(std::memory_order_acquire);
    }
    return std::move(value_);
  }

 private:
  static constexpr std::uint32_t empty = 0;
  static constexpr std::uint32_t ready = 1;
  static constexpr std::uint32_t sleeping = 2;  // the waiter sleeps: set() must wake it

  T value_{};
  std::atomic<std::uint32_t> state_{empty};
};

}  // namespace rlock::detail
