// scenario: one fault-test run. Starts a lock server and a separate register server (never
// faulted, so the register check measures the lock alone), several worker processes that
// contend for one lock, and a nemesis that injects a fault in on/off cycles; then checks the
// histories and the end state, prints a one-line summary and returns every figure.
//
// Timeline: warmup, then `cycles` times [inject, fault_on (ticks for repeated faults), heal,
// fault_off], then `quiet` without faults; workers stop starting new acquires at the end of it.
// Then: every worker idle -> renewals measured over two renewal periods -> SIGTERM -> keys and
// channels left on the lock server -> final register -> checker.
//
// Guarantees:
//  - Everything is bounded: a worker that does not reach idle within wait + margin + 10 s after
//    the end is killed (its open acquire is then reported stuck); every wait on a process or a
//    server is bounded; servers, proxy and workers are torn down by their owners (support/).
//  - The summary line goes to stdout and, when $RLOCK_FAULTS_REPORT names a file, its JSON form
//    is appended there as one line.
//  - $RLOCK_FAULTS_LONG=<minutes> (or 1 for 3 minutes) repeats the on/off cycle for about that
//    long per scenario (not for CI). $RLOCK_FAULTS_HISTORY_DIR=<dir> keeps the histories in
//    <dir>/<scenario>/ instead of a temporary directory.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "faults/checker.hpp"
#include "faults/end_state.hpp"

namespace rlock::faults {

enum class nemesis_kind {
  none,
  kill_holder,             // SIGKILL a worker inside its critical section, respawn a new one
  kill_holder_and_pubsub,  // even cycles kill_holder, odd cycles client_kill_pubsub
  stop_holder,             // SIGSTOP a worker inside its critical section for fault_on
  server_restart,          // SIGKILL redis-server, restart it after fault_on
  server_pause,            // SIGSTOP redis-server for fault_on
  client_kill_normal,      // CLIENT KILL TYPE normal every tick while on
  client_kill_pubsub,      // CLIENT KILL TYPE pubsub every tick while on
  client_pause_write,      // CLIENT PAUSE <fault_on> WRITE
  script_flush,            // SCRIPT FLUSH every tick while on
  early_expiry,            // PEXPIRE <lock> 1 while a worker holds it (a clock jump, data loss)
  proxy,                   // fault_proxy: cycles delay, drop_replies, hang, reset
  starve_holder,           // pin a holder to one CPU, SCHED_FIFO bursts there for fault_on
  partition_holder,        // each worker in its own netns; a holder's lock link down for fault_on
  deafen_holder,           // as partition_holder, but only the server's packets to it are dropped
  mute_holder,             // as partition_holder, but only its packets to the server are dropped
};

std::string_view to_string(nemesis_kind k);

struct scenario_options {
  std::string name = "scenario";
  nemesis_kind nemesis = nemesis_kind::none;
  // ---- the lock ----
  bool lock_queue = true;
  std::chrono::milliseconds watchdog{1500};  // lease; renewed every third of it
  std::chrono::milliseconds liveness{6000};  // lock_queue_liveness
  bool persistence = false;                  // lock server: appendonly + appendfsync always
  // ---- the workers ----
  int workers = 3;
  std::chrono::milliseconds wait{2000};  // try_lock wait budget
  std::chrono::milliseconds hold{50};    // time inside the critical section (+-50 %)
  bool fenced = false;    // fenced lock; the register refuses stale tokens (fault_worker.cpp)
  bool careless = false;  // holders write even after their loss signal
  // ---- the faults ----
  int cycles = 4;
  std::chrono::milliseconds warmup{1500};
  std::chrono::milliseconds fault_on{2000};
  std::chrono::milliseconds fault_off{2500};
  std::chrono::milliseconds tick{400};  // repeated faults: one injection per tick while on
  std::chrono::milliseconds quiet{2500};
  std::chrono::milliseconds proxy_delay{100};   // per chunk, each direction
  std::chrono::milliseconds starve_burst{400};  // starve_holder: no CPU for this long ...
  std::chrono::milliseconds starve_gap{100};    // ... then the CPU for this long, and again
  // ---- the checks ----
  std::chrono::milliseconds deadline_margin{250};  // scheduling slack past an acquire deadline
};

/// One injected fault.
struct fault_record {
  std::string what{};
  int target = 0;                     // the affected worker, 0 if none
  std::int64_t start_ns = 0;          // injected
  std::int64_t end_ns = 0;            // healed (== start_ns for instantaneous faults)
  std::int64_t recovery_from_ns = 0;  // recovery = next acquire-ok after this
  bool exclude_target = false;        // ... by a worker other than the target
  bool expect_loss = false;           // the target's hold must be reported lost ...
  bool unless_released_ok = false;    // ... unless its next unlock returned ok (it ran in time)
  std::int64_t loss_from_ns = 0;      // loss latency is measured from here
  // Filled in after the run:
  std::int64_t recovery_ns = -1;       // -1: nobody acquired before the run ended
  std::int64_t loss_latency_ns = -1;   // -1: no loss event
  bool loss_detected = false;          // a loss event, or the unlock reported not_owner
  std::int64_t release_after_ns = -1;  // the target's first release-invoke, after start_ns
  bool released_ok = false;            // ... and it returned ok
  std::int64_t cpu_wait_ns = -1;       // starve_holder: the target's threads' wait for a CPU
};

struct scenario_result {
  scenario_options options{};
  std::vector<fault_record> faults{};
  check_report check{};
  end_state end{};
  std::vector<std::string> crashes{};
  std::size_t malformed_lines = 0;
  double seconds = 0;

  std::vector<double> recovery_ms() const;
  long long unrecovered() const;
  /// Faults that expected a loss and whose target never learned of it.
  long long undetected_losses() const;
  double max_loss_latency_ms() const;
  std::string summary() const;  // one line
  std::string json() const;     // one JSON object
};

scenario_result run_scenario(scenario_options options);

}  // namespace rlock::faults
