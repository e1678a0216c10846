// worker_pool: the contending worker processes of one scenario, their histories, and the
// runner's own events about them.
//
// Guarantees:
//  - Every worker is a child_process (support/process.hpp): it dies with the test process and
//    is killed and reaped by the pool's destructor at the latest. Its stdout is its history
//    file <dir>/worker-<id>.jsonl; its stderr is captured for failure messages.
//  - pump() is the only place histories are read: it appends the new complete lines of every
//    history to events() and updates each worker's state; the state is as fresh as the last
//    pump(). Runner events (stop, resume, kill, faults) are appended by the calls that cause
//    them, stamped with steady_clock just before (stop: just after) the signal is sent.
//  - stop() returns only once the kernel reports the process stopped (state T in
//    /proc/<pid>/stat) and its history has been read up to that point, so is_holding() is then
//    exact: a stopped process writes nothing.
//  - kill() stops the worker first, so its history ends where the kill finds it, and reaps it.
//  - Worker ids are never reused: a respawned worker is a new history.
//  - Not thread-safe: one runner thread drives a pool.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "faults/history.hpp"
#include "support/process.hpp"

namespace rlock::faults {

/// Where one worker runs: a command its program runs under (its program and arguments come
/// after it), and the URLs it uses instead of the config's.
struct worker_placement {
  std::vector<std::string> prefix{};
  std::string lock_url{};
  std::string register_url{};
};

/// The command line of every worker of a scenario (see fault_worker.cpp).
struct worker_config {
  std::filesystem::path program{};
  std::filesystem::path dir{};  // where the history files go
  std::string lock_url{};
  std::string register_url{};
  std::string name = "faults";
  std::int64_t until_ns = 0;
  std::chrono::milliseconds watchdog{1500};
  std::chrono::milliseconds wait{2000};
  std::chrono::milliseconds hold{50};
  bool queue = true;
  std::chrono::milliseconds liveness{6000};
  std::chrono::milliseconds timeout{1000};
  std::chrono::milliseconds connect_timeout{1000};
  bool fenced = false;    // fenced lock and fenced register (fault_worker --fenced)
  bool careless = false;  // writes whatever the loss signal says (fault_worker --careless)
  /// When set, called with each new worker's id (worker_networks: its own namespace).
  std::function<worker_placement(int id)> place{};
};

class worker_pool {
 public:
  explicit worker_pool(worker_config config);
  ~worker_pool();
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;

  const worker_config& config() const { return config_; }

  /// Starts a new worker and returns its id.
  int spawn();
  /// Reads new history lines; notices workers that exited on their own.
  void pump();
  /// Pumps every few milliseconds for `d` (the runner's way of letting time pass).
  void pump_for(std::chrono::milliseconds d);

  /// Ids of running, not stopped workers whose last lock event puts them inside their
  /// critical section (between acquire-ok and release-invoke).
  std::vector<int> holders() const;
  bool is_holding(int id) const;
  /// steady_clock ns of the acquire-ok that started a holder's critical section (0 if none).
  std::int64_t holding_since(int id) const;
  /// The owner field of a worker (from its start event), empty if not known yet.
  std::string owner_of(int id) const;
  pid_t pid_of(int id) const;

  /// SIGSTOP, then waits (at most 2 s) until the process is stopped. Returns false if it could
  /// not be stopped (already gone).
  bool stop(int id);
  /// SIGCONT. Returns the time of the `resumed` event (taken just before the signal).
  std::int64_t resume(int id);
  /// Stops, then SIGKILLs and reaps the worker; records `killed`.
  void kill(int id, const std::string& why);

  /// Waits (at most `limit`, pumping) until every running worker has logged idle.
  bool wait_all_idle(std::chrono::milliseconds limit);
  /// SIGTERM to every worker, then waits (at most `limit`) for all to exit; stragglers are
  /// killed (and recorded as killed, "did not exit").
  void terminate_all(std::chrono::milliseconds limit);

  /// Appends a runner event (fault_start, fault_end, ...).
  void record(event e);
  const std::vector<event>& events() const { return events_; }

  /// Workers that exited with a non-zero status or by a signal the pool did not send, with
  /// their stderr.
  const std::vector<std::string>& crashes() const { return crashes_; }
  std::size_t spawned() const { return workers_.size(); }
  std::size_t malformed_lines() const;

 private:
  struct worker;
  worker* find(int id) const;

  worker_config config_;
  std::vector<std::unique_ptr<worker>> workers_;
  std::vector<event> events_;
  std::vector<std::string> crashes_;
};

}  // namespace rlock::faults
