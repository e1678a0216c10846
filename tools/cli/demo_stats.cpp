#include "demo_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rlock::cli {

demo_stats compute_demo_stats(std::vector<critical_section> sections, int workers) {
  demo_stats s;
  s.acquisitions = sections.size();
  s.per_worker.assign(static_cast<std::size_t>(std::max(workers, 0)), 0);
  std::sort(sections.begin(), sections.end(),
            [](const critical_section& a, const critical_section& b) {
              return a.acquired_ns < b.acquired_ns;
            });
  long long latest_release = std::numeric_limits<long long>::min();
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const critical_section& cs = sections[i];
    if (cs.worker >= 0 && static_cast<std::size_t>(cs.worker) < s.per_worker.size()) {
      ++s.per_worker[static_cast<std::size_t>(cs.worker)];
    }
    if (cs.acquired_ns < latest_release) ++s.overlaps;
    if (i > 0) {
      const critical_section& prev = sections[i - 1];
      const long long gap = cs.acquired_ns - prev.released_ns;
      if (gap >= 0) (cs.worker == prev.worker ? s.reacquire_ns : s.handoff_ns).push_back(gap);
    }
    latest_release = std::max(latest_release, cs.released_ns);
  }
  std::sort(s.handoff_ns.begin(), s.handoff_ns.end());
  std::sort(s.reacquire_ns.begin(), s.reacquire_ns.end());
  return s;
}

long long percentile(const std::vector<long long>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()));
  const auto index = static_cast<std::size_t>(std::max(1.0, rank)) - 1;
  return sorted[std::min(index, sorted.size() - 1)];
}

}  // namespace rlock::cli
