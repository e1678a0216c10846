// demo_timeline.hpp: the live view of `rlock demo`: who holds the lock, as events arrive.
//
// Output (stdout, bounded whatever the rate of events):
//  - the first `first_handoffs` hand-offs between workers, one line each:
//        +0.004s  w1 -> w3  after 0.42ms
//  - then one summary line per interval (at most about 20 over the whole run):
//        [  1.0s]  412 acquisitions  w0 103  w1 98  w2 110  w3 101  | 300 hand-offs, p50 0.35ms
// Events are taken in arrival order (close to, but not exactly, time order across workers):
// this view is for reading; the checks use demo_stats on the full record.
// Not thread-safe: one owner thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <ostream>
#include <vector>

#include "demo_events.hpp"

namespace rlock::cli {

class demo_timeline {
 public:
  demo_timeline(std::ostream& out, int workers, long long start_ns,
                std::chrono::milliseconds interval, std::size_t first_handoffs = 8);

  void on_event(const demo_event& e);
  /// Prints the summaries of the intervals that ended by `now_ns`.
  void tick(long long now_ns);
  /// Prints the last, partial interval if it saw any event.
  void finish(long long now_ns);
  /// When the next interval ends (for poll timeouts).
  long long next_tick_ns() const { return interval_end_ns_; }

 private:
  void print_interval(long long end_ns);

  std::ostream& out_;
  long long start_ns_;
  long long interval_ns_;
  long long interval_end_ns_;
  std::size_t first_handoffs_;
  std::size_t handoffs_printed_ = 0;
  std::optional<demo_event> last_release_{};
  std::vector<std::size_t> counts_{};
  std::vector<long long> gaps_{};
  std::size_t interval_handoffs_ = 0;
};

}  // namespace rlock::cli
