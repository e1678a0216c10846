#include "demo_timeline.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "demo_stats.hpp"
#include "duration.hpp"

namespace rlock::cli {

demo_timeline::demo_timeline(std::ostream& out, int workers, long long start_ns,
                             std::chrono::milliseconds interval, std::size_t first_handoffs)
    : out_(out),
      start_ns_(start_ns),
      interval_ns_(std::chrono::nanoseconds(interval).count()),
      interval_end_ns_(start_ns + std::chrono::nanoseconds(interval).count()),
      first_handoffs_(first_handoffs),
      counts_(static_cast<std::size_t>(std::max(workers, 0)), 0) {}

void demo_timeline::on_event(const demo_event& e) {
  if (e.kind == demo_event_kind::released) {
    last_release_ = e;
    return;
  }
  if (e.kind != demo_event_kind::acquired) return;
  if (e.worker >= 0 && static_cast<std::size_t>(e.worker) < counts_.size()) {
    ++counts_[static_cast<std::size_t>(e.worker)];
  }
  if (!last_release_ || last_release_->worker == e.worker) return;
  const long long gap = e.ns - last_release_->ns;
  ++interval_handoffs_;
  if (gap >= 0) gaps_.push_back(gap);
  if (handoffs_printed_ < first_handoffs_) {
    ++handoffs_printed_;
    char at[32];
    std::snprintf(at, sizeof at, "+%.3fs", static_cast<double>(e.ns - start_ns_) / 1e9);
    out_ << "  " << at << "  w" << last_release_->worker << " -> w" << e.worker << "  after "
         << format_latency_ns(gap)
         << (handoffs_printed_ == first_handoffs_ ? "  (further hand-offs summarized)" : "") << "\n"
         << std::flush;
  }
}

void demo_timeline::tick(long long now_ns) {
  while (now_ns >= interval_end_ns_) {
    print_interval(interval_end_ns_);
    interval_end_ns_ += interval_ns_;
  }
}

void demo_timeline::finish(long long now_ns) {
  std::size_t total = 0;
  for (std::size_t c : counts_) total += c;
  if (total > 0 || interval_handoffs_ > 0) print_interval(now_ns);
}

void demo_timeline::print_interval(long long end_ns) {
  std::size_t total = 0;
  for (std::size_t c : counts_) total += c;
  char at[32];
  std::snprintf(at, sizeof at, "[%6.1fs]", static_cast<double>(end_ns - start_ns_) / 1e9);
  out_ << "  " << at << "  " << total << " acquisitions ";
  for (std::size_t w = 0; w < counts_.size(); ++w) out_ << " w" << w << " " << counts_[w];
  std::sort(gaps_.begin(), gaps_.end());
  out_ << "  | " << interval_handoffs_ << " hand-offs";
  if (!gaps_.empty()) out_ << ", p50 " << format_latency_ns(percentile(gaps_, 50));
  out_ << "\n" << std::flush;
  std::fill(counts_.begin(), counts_.end(), 0);
  gaps_.clear();
  interval_handoffs_ = 0;
}

}  // namespace rlock::cli
