#include "faults/cpu_starvation.hpp"

#include <pthread.h>
#include <sched.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace rlock::faults {
namespace {

cpu_set_t runner_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    throw std::system_error(errno, std::generic_category(), "sched_getaffinity");
  }
  return set;
}

// Calls f(path) for each thread's /proc/<pid>/task/<tid> directory; false if the process is
// gone.
template <typename F>
bool for_each_thread(pid_t pid, F f) {
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/task", ec);
  if (ec) return false;
  for (const auto& entry : it) f(entry.path());
  return true;
}

// Applies `set` to every thread of `pid`; false if the process is gone.
bool set_all_threads(pid_t pid, const cpu_set_t& set) {
  bool any = false;
  for_each_thread(pid, [&](const std::filesystem::path& task) {
    const pid_t tid = static_cast<pid_t>(std::stol(task.filename().string()));
    if (sched_setaffinity(tid, sizeof set, &set) == 0) any = true;
  });
  return any;
}

// Makes the calling thread SCHED_FIFO at the lowest real-time priority; errno on failure.
int make_realtime() {
  sched_param p{};
  p.sched_priority = sched_get_priority_min(SCHED_FIFO);
  return pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
}

}  // namespace

std::string starvation_unavailable() {
  const cpu_set_t set = runner_cpus();
  if (CPU_COUNT(&set) < 2) return "the runner may use fewer than two CPUs";
  int error = 0;
  std::thread probe([&error] {
    error = make_realtime();
    if (error == 0) {
      sched_param p{};
      pthread_setschedparam(pthread_self(), SCHED_OTHER, &p);
    }
  });
  probe.join();
  if (error != 0) return "SCHED_FIFO refused: " + std::generic_category().message(error);
  return {};
}

int starvation_cpu() {
  const cpu_set_t set = runner_cpus();
  for (int cpu = CPU_SETSIZE - 1; cpu >= 0; --cpu) {
    if (CPU_ISSET(cpu, &set)) return cpu;
  }
  throw std::runtime_error("no CPU in the runner's affinity");
}

bool pin(pid_t pid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return set_all_threads(pid, set);
}

void unpin(pid_t pid) {
  set_all_threads(pid, runner_cpus());
}

std::int64_t cpu_wait_ns(pid_t pid) {
  std::int64_t sum = 0;
  for_each_thread(pid, [&sum](const std::filesystem::path& task) {
    std::ifstream in(task / "schedstat");
    std::int64_t on_cpu = 0;
    std::int64_t waited = 0;
    if (in >> on_cpu >> waited) sum += waited;
  });
  return sum;
}

cpu_hog::cpu_hog(int cpu, std::chrono::milliseconds burst, std::chrono::milliseconds gap,
                 std::chrono::milliseconds total)
    : burst_(burst), gap_(gap) {
  // The kernel lets real-time threads use 950 ms of each second, and throttles them after
  // that: stay clearly below, in each burst and on average.
  if (burst > std::chrono::milliseconds(900) || burst * 100 > (burst + gap) * 90) {
    throw std::invalid_argument("cpu_hog: bursts longer than the kernel lets real time run");
  }
  const auto end = std::chrono::steady_clock::now() + total;
  thread_ = std::thread([this, cpu, end] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    const bool ok =
        pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0 && make_realtime() == 0;
    ready_.store(ok ? 1 : -1);
    ready_.notify_all();
    if (ok) run(end);
  });
  ready_.wait(0);
  if (ready_.load() != 1) {
    thread_.join();
    throw std::runtime_error("cpu_hog: cannot run as SCHED_FIFO on CPU " + std::to_string(cpu));
  }
}

cpu_hog::~cpu_hog() {
  stop_.store(true, std::memory_order_relaxed);
  thread_.join();
}

void cpu_hog::run(std::chrono::steady_clock::time_point end) {
  using clock = std::chrono::steady_clock;
  while (!stop_.load(std::memory_order_relaxed)) {
    const auto now = clock::now();
    if (now >= end) return;
    bursts_.fetch_add(1, std::memory_order_relaxed);
    const auto burst_end = std::min(now + burst_, end);
    while (clock::now() < burst_end) {
      if (stop_.load(std::memory_order_relaxed)) return;
    }
    // The gap, in short sleeps so that a stop is seen soon.
    const auto gap_end = std::min(clock::now() + gap_, end);
    while (clock::now() < gap_end && !stop_.load(std::memory_order_relaxed)) {
      std::this_thread::sleep_for(
          std::min<clock::duration>(gap_end - clock::now(), std::chrono::milliseconds(5)));
    }
  }
}

}  // namespace rlock::faults
