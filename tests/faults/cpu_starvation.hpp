// cpu_starvation: fault N4, a CPU taken from a process by a real-time busy loop.
//
// The target process is pinned to one CPU (every thread it has, and so every thread it
// starts later), and a SCHED_FIFO thread of the runner spins on that CPU in bursts. A
// SCHED_OTHER thread gets no time on a CPU while a real-time thread is runnable there, so
// during each burst the target's threads do not run at all, and between bursts they run
// normally: a process that makes progress only in slices, with its timers firing up to a
// burst late. The other processes (server, other workers, the runner) move to the other CPUs.
//
// Guarantees:
//  - Bounded: the hog stops by itself `total` after it started, and at once when destroyed
//    (it checks a flag while it spins). Bursts plus gaps keep its share of the CPU below the
//    kernel's real-time limit (950 ms of each second by default), so the kernel's throttling
//    never shortens a burst: a burst over 900 ms, or over 90% of burst + gap, is refused.
//  - unpin() gives the target every CPU the runner may use; a process that is gone is ignored.
//  - starvation_unavailable() says why this machine cannot run the fault (fewer than two CPUs
//    for the runner, or no permission for SCHED_FIFO), empty if it can.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

namespace rlock::faults {

/// Why the fault cannot run here; empty if it can.
std::string starvation_unavailable();

/// The CPU the hog takes: the highest one the runner may use.
int starvation_cpu();

/// Moves every thread of `pid` onto `cpu`. Returns false if the process is gone.
bool pin(pid_t pid, int cpu);
/// Gives every thread of `pid` the runner's own CPUs back.
void unpin(pid_t pid);

/// Sum over the threads of `pid` of the time they were runnable but waited for a CPU
/// (/proc/<pid>/task/<tid>/schedstat), in ns; threads that ended are not counted.
std::int64_t cpu_wait_ns(pid_t pid);

class cpu_hog {
 public:
  /// Starts spinning on `cpu`: `burst` on, `gap` off, until `total` has passed. Throws
  /// std::runtime_error if the thread cannot be made SCHED_FIFO or pinned.
  cpu_hog(int cpu, std::chrono::milliseconds burst, std::chrono::milliseconds gap,
          std::chrono::milliseconds total);
  ~cpu_hog();
  cpu_hog(const cpu_hog&) = delete;
  cpu_hog& operator=(const cpu_hog&) = delete;

  /// Bursts started so far.
  int bursts() const { return bursts_.load(std::memory_order_relaxed); }

 private:
  void run(std::chrono::steady_clock::time_point end);

  std::chrono::milliseconds burst_;
  std::chrono::milliseconds gap_;
  std::atomic<bool> stop_{false};
  std::atomic<int> bursts_{0};
  std::atomic<int> ready_{0};  // 1: running as SCHED_FIFO on the CPU, -1: setup failed
  std::thread thread_;
};

}  // namespace rlock::faults
