// checker: verifies the merged histories of one fault-test run.
//
// Input: every event of every worker history plus the runner's events (see history.hpp), in
// any order; they are grouped by worker and ordered by time here. Output: a check_report.
//
// What it checks, and how:
//  - Critical sections: from a worker's acquire-ok to its release-invoke. A worker killed while
//    holding (a `killed` event) ends its section at the kill; a history that stops inside a
//    section without a kill ends it at +infinity ("unterminated"), which overlaps everything
//    after it.
//  - Overlaps: two sections of different owners whose intervals intersect (touching ends do
//    not). An overlap is "detected" when either holder learned that it had lost the lock: a
//    loss event during its section or its unlock, release-invoke with lost=true, or an unlock
//    that failed with not_owner. Undetected overlaps are safety violations; detected ones are
//    the documented outcome of a fault that outlasts the lease. tokens_missed counts holds that
//    were lost (the holder saw valid_until() pass, or its unlock said not_owner) without their
//    loss_token() ever firing.
//  - The register: every write stores read + 1, so the sections, ordered by acquire-ok time,
//    form a chain. A read must see the value of the last write applied before it; a write whose
//    outcome is unknown (write-fail with indeterminate, or a write-invoke cut short by a kill)
//    may or may not have been applied, and the next read (or the final value) decides which.
//    stale_reads counts reads that see neither. lost_updates = initial + applied writes - final
//    value (each applied write adds exactly one unless two sections raced).
//  - Fencing (fenced workers): tokens of acquire-ok events. Of two sections that held to the
//    end without a loss (neither aware_of_loss()) and did not overlap, the later must have the
//    greater token; fencing_order_violations counts the pairs that do not. fenced_refusals counts
//    reads and writes the register refused as stale (read-fail / write-fail "fenced"): a refused
//    write was not applied.
//  - Leases: an acquire-ok must carry a lock.valid_until() after its own time (a hold just
//    taken has a lease deadline ahead of it); others are counted in invalid_leases.
//  - Waiting: every acquire-invoke must complete (ok or fail) no later than its deadline plus
//    `deadline_margin`. Later completions are late_acquires, missing ones stuck_acquires, except
//    when the worker was SIGSTOPped in between (excused: the process could not run) or killed
//    before its deadline plus the margin.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "faults/history.hpp"

namespace rlock::faults {

struct checker_options {
  /// Scheduling slack allowed past an acquire's deadline (a loaded 2-core machine).
  std::chrono::nanoseconds deadline_margin = std::chrono::milliseconds(250);
  /// The register's value before the run (a missing key reads as 0).
  long long initial_register = 0;
  /// The register's value after the run; without it lost_updates is not computed.
  std::optional<long long> final_register{};
};

enum class write_outcome { none, skipped, failed, indeterminate, ok };

struct critical_section {
  int worker = 0;
  std::string owner{};
  std::int64_t start_ns = 0;  // acquire-ok
  std::int64_t end_ns = 0;    // release-invoke, the kill, or INT64_MAX when unterminated
  std::int64_t token = 0;     // fencing token of the acquire (0: not fenced)
  bool killed = false;
  bool unterminated = false;
  std::optional<long long> read{};
  write_outcome write = write_outcome::none;
  long long written = 0;
  // Loss events between acquire-ok and the unlock's result:
  bool token_fired = false;       // ... from the loss_token()'s stop callback
  bool deadline_passed = false;   // ... the holder saw valid_until() pass, the token not stopped
  std::int64_t loss_ns = 0;       // the first of them
  bool lost_at_release = false;   // release-invoke said lost=true
  bool unlock_not_owner = false;  // release-fail with not_owner
  bool aware_of_loss() const {
    return token_fired || deadline_passed || lost_at_release || unlock_not_owner;
  }
  /// The hold was lost (deadline passed, or unlock found it gone) and its token never fired.
  bool token_missed() const { return (deadline_passed || unlock_not_owner) && !token_fired; }
};

struct overlap {
  std::size_t first = 0;  // index into check_report::sections (the earlier acquire-ok)
  std::size_t second = 0;
  std::int64_t from_ns = 0;
  std::int64_t to_ns = 0;
  bool detected = false;
};

struct check_report {
  std::size_t histories = 0;  // distinct workers with at least one event of their own
  std::size_t events = 0;
  long long acquires = 0;        // acquire-invoke
  long long acquired = 0;        // acquire-ok
  long long not_acquired = 0;    // acquire-fail "not-acquired" (the wait budget ran out)
  long long acquire_errors = 0;  // acquire-fail with an error
  long long invalid_leases = 0;  // acquire-ok whose valid_until() was not ahead of it
  long long writes_ok = 0;
  long long writes_indeterminate = 0;
  long long writes_confirmed = 0;  // indeterminate writes shown applied by a later read
  long long writes_skipped = 0;
  long long writes_failed = 0;
  long long lost_updates = 0;
  long long stale_reads = 0;
  bool register_explained = true;  // final value reachable from the recorded writes
  std::vector<critical_section> sections{};
  std::vector<overlap> overlaps{};
  long long late_acquires = 0;
  long long stuck_acquires = 0;
  long long excused_acquires = 0;     // late or unfinished, but the worker was stopped or killed
  std::int64_t max_overshoot_ns = 0;  // latest return past a deadline (not excused); <= 0: none
  long long loss_signals = 0;         // loss events from the loss token
  long long deadline_losses = 0;      // loss events from the holder's own valid_until() check
  long long tokens_missed = 0;        // sections with critical_section::token_missed()
  long long fenced_refusals = 0;      // register accesses refused for a stale fencing token
  long long fencing_order_violations = 0;  // see "Fencing" above
  std::vector<std::string> samples{};      // descriptions of the first violations found

  long long undetected_overlaps() const;
  long long detected_overlaps() const;
};

check_report check_history(std::vector<event> events, const checker_options& options = {});

/// The first acquire-ok strictly after `t_ns` by a worker other than `exclude_worker`
/// (0: anyone), or nullopt.
std::optional<std::int64_t> first_acquire_after(const std::vector<event>& events, std::int64_t t_ns,
                                                int exclude_worker = 0);

}  // namespace rlock::faults
