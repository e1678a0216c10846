// demo_stats.hpp: the checks and figures of the `rlock demo` summary, computed from the
// critical sections the workers reported.
//
// Definitions:
//   overlap   a critical section that starts before an earlier-starting one has ended (sorted by
//             acquire time). Each section spans acquire-returned .. just-before-unlock, a subset
//             of the time the lock was really held, so mutual exclusion implies zero overlaps.
//   hand-off  the gap from one section's release to the next section's acquire (by start time),
//             split into hand-offs between workers (processes) and re-acquisitions by the same
//             worker. Negative gaps (overlaps) are not latencies and are left out.
// Percentiles are nearest-rank. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <vector>

namespace rlock::cli {

struct critical_section {
  int worker = 0;
  long long acquired_ns = 0;
  long long released_ns = 0;
};

struct demo_stats {
  std::size_t acquisitions = 0;
  std::size_t overlaps = 0;
  std::vector<long long> handoff_ns{};    ///< between different workers, sorted
  std::vector<long long> reacquire_ns{};  ///< same worker again, sorted
  std::vector<std::size_t> per_worker{};  ///< acquisitions of each worker id
};

demo_stats compute_demo_stats(std::vector<critical_section> sections, int workers);

/// Nearest-rank percentile (0 < p <= 100) of a sorted vector; 0 when empty.
long long percentile(const std::vector<long long>& sorted, double p);

}  // namespace rlock::cli
