// Waiting for an asynchronous result on the calling thread.
//
// The waiter first polls for a bounded time (config::blocking_spin), then sleeps on a futex. A
// reply on a local network often arrives within tens of microseconds; polling for that long keeps
// the waiting thread running instead of paying the wake-up of a sleeping one, which on virtual
// machines costs more than the round trip itself. The cost is CPU time of the calling thread, at
// most `spin` per blocking call, and only while polling pays (spin_policy).
//
// Where a blocking call does its work (blocking_plan): the only blocking call of the process in
// flight starts its work on the calling thread (an idle connection is then written by the
// caller itself) and may poll (a polling caller reads its own reply). While other blocking calls
// are in flight, a call posts its work to the client's I/O thread and sleeps at once: there the
// work runs on one thread with warm caches and uncontended mutexes, and the I/O thread reads
// every reply, where a polling caller would read and complete the others' (their lock state
// then handled on a cold core, under contention). Measured on a 2-core VM, lock+unlock cycles on
// distinct names, three interleaved 3 s runs against the build before (all work on the callers,
// one thread polling):
//  - 32 threads: 17,396-28,132/s with p99 3.1-3.4 ms and 34-68 µs of client CPU per cycle,
//    against 15,264-16,391/s, 4.6-5.8 ms and 77-82 µs;
//  - 8 threads: 14,796-20,117/s, p99 1.1-1.6 ms, against 13,256-14,358/s, 2.8 ms;
//  - 2 threads: 9,165-11,240/s, p99 0.5-0.6 ms, against 6,057-6,427/s, 1.1-1.5 ms;
//  - 1 thread (always alone, so unchanged): 9,789-10,331/s against 9,900-10,535/s.
// The I/O thread then spends about a third of its time in the futex wake-ups of the callers it
// completes. Measured and dropped: a relay in which the I/O thread wakes one sleeper and queues
// the others, each woken caller waking up to 2 (or 4, or 8) queued ones before it returns. The
// I/O thread's CPU fell from 75% to 40% of a core, but 32 threads ran 26,592-30,363 cycles/s
// (median 27,331 over 9 runs) against 27,347-29,651/s (median 28,963 over 6), with p99 3.3-4.5
// ms against 2.2-3.0 ms: each queued caller waits for another to be scheduled first, and on 2
// cores that costs more than the wake-up it saves.
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

#include "rlock/detail/call_mode.hpp"

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

  /// Counts a blocking call in flight until end_call(); true if no other one is.
  bool begin_call() { return in_flight_.fetch_add(1, std::memory_order_relaxed) == 0; }
  void end_call() { in_flight_.fetch_sub(1, std::memory_order_relaxed); }

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
  /// After try_enter() returned true, without polling: gives the polling slot back.
  void abandon() { polling_.fetch_sub(1, std::memory_order_relaxed); }

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
  std::atomic<unsigned> in_flight_{0};
  std::atomic<std::uint32_t> history_{0};
  std::atomic<int> polls_since_pause_{window + 1};
  std::atomic<int> pause_{min_pause};
  std::atomic<int> skip_{0};
};

/// How one blocking call runs, decided as it starts. The only blocking call of the process in
/// flight starts its work on the calling thread and may poll for its result
/// (spin_policy::try_enter); any other posts its work to the I/O thread and sleeps at once.
/// Counts the call in flight while it lives. One per call, on the calling thread.
class blocking_plan {
 public:
  explicit blocking_plan(std::chrono::microseconds spin,
                         spin_policy& policy = spin_policy::process())
      : policy_(policy), spin_(spin) {
    const bool alone = policy_.begin_call();
    polls_ = alone && spin_.count() > 0 && policy_.try_enter();
    mode_ = alone ? call_mode::blocking_on_caller : call_mode::blocking_posted;
  }
  ~blocking_plan() {
    if (polls_) policy_.abandon();  // polling never started (blocking_result::take clears it)
    policy_.end_call();
  }
  blocking_plan(const blocking_plan&) = delete;
  blocking_plan& operator=(const blocking_plan&) = delete;

  /// The call's mode: blocking_on_caller (it starts its work on the calling thread) or
  /// blocking_posted (it posts its work to the I/O thread and sleeps).
  call_mode mode() const { return mode_; }

 private:
  template <class T>
  friend class blocking_result;

  spin_policy& policy_;
  std::chrono::microseconds spin_;
  bool polls_ = false;
  call_mode mode_ = call_mode::blocking_on_caller;
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
    blocking_plan plan(spin);
    return take(plan, poll);
  }
  /// As take(spin, poll), for a call whose `plan` was made before it started its work.
  T take(blocking_plan& plan, bool (*poll)() = nullptr) {
    if (plan.polls_) {
      plan.polls_ = false;
      const auto until = std::chrono::steady_clock::now() + plan.spin_;
      bool got = false;
      while (!(got = state_.load(std::memory_order_acquire) == ready) &&
             std::chrono::steady_clock::now() < until) {
        if (poll == nullptr || !poll()) std::this_thread::yield();
      }
      plan.policy_.leave(got);
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
