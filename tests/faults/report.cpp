// The figures of a scenario_result: recovery times, loss latencies, the summary line and its
// JSON form (declared in scenario.hpp).
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "faults/scenario.hpp"

namespace rlock::faults {
namespace {

// Nearest-rank percentile of an unsorted sample; -1 when empty.
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(p * static_cast<double>(v.size()) + 0.999999);
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

// Critical sections that were overlapped by a later one (the holders that lost the lock).
std::size_t overlapped_sections(const check_report& c) {
  std::vector<std::size_t> firsts;
  for (const auto& o : c.overlaps) firsts.push_back(o.first);
  std::sort(firsts.begin(), firsts.end());
  return static_cast<std::size_t>(std::unique(firsts.begin(), firsts.end()) - firsts.begin());
}

// How far past its deadline the latest acquire returned (0 if none did).
double past_deadline_ms(const check_report& c) {
  return static_cast<double>(std::max<std::int64_t>(c.max_overshoot_ns, 0)) / 1e6;
}

std::string ms(double v) {
  if (v < 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

}  // namespace

std::vector<double> scenario_result::recovery_ms() const {
  std::vector<double> out;
  for (const auto& f : faults) {
    if (f.recovery_ns >= 0) out.push_back(static_cast<double>(f.recovery_ns) / 1e6);
  }
  return out;
}

long long scenario_result::unrecovered() const {
  return std::count_if(faults.begin(), faults.end(),
                       [](const fault_record& f) { return f.recovery_ns < 0; });
}

long long scenario_result::undetected_losses() const {
  return std::count_if(faults.begin(), faults.end(),
                       [](const fault_record& f) { return f.expect_loss && !f.loss_detected; });
}

double scenario_result::max_loss_latency_ms() const {
  double m = -1;
  for (const auto& f : faults) {
    if (f.expect_loss && f.loss_latency_ns >= 0) {
      m = std::max(m, static_cast<double>(f.loss_latency_ns) / 1e6);
    }
  }
  return m;
}

std::string scenario_result::summary() const {
  const auto rec = recovery_ms();
  std::ostringstream out;
  out << "[faults] " << options.name << ": nemesis=" << to_string(options.nemesis)
      << " queue=" << (options.lock_queue ? "on" : "off") << " lease=" << options.watchdog.count()
      << "ms faults=" << faults.size() << " histories=" << check.histories
      << " ops=" << check.acquires << " (acquired " << check.acquired << ", not acquired "
      << check.not_acquired << ", errors " << check.acquire_errors << ")"
      << " | invalid_leases=" << check.invalid_leases << " lost_updates=" << check.lost_updates
      << " stale_reads=" << check.stale_reads << " overlaps=" << check.overlaps.size()
      << " (undetected " << check.undetected_overlaps() << ", holders overlapped "
      << overlapped_sections(check) << ") late=" << check.late_acquires << " (max past deadline "
      << ms(past_deadline_ms(check)) << "ms)"
      << " stuck=" << check.stuck_acquires << " | loss: token=" << check.loss_signals
      << " deadline=" << check.deadline_losses << " tokens_missed=" << check.tokens_missed
      << " undetected=" << undetected_losses() << " loss_latency_max=" << ms(max_loss_latency_ms())
      << "ms";
  if (options.fenced) {
    out << " | fenced" << (options.careless ? ", careless" : "")
        << ": refusals=" << check.fenced_refusals
        << " order_violations=" << check.fencing_order_violations;
  }
  out << " | leaks=" << end.leaks().size() << " idle_renewals=" << end.idle_renewals
      << " lingering_keys=" << end.keys_lingering.size() << " latches=" << end.latches
      << " crashes=" << crashes.size() << " | recovery p50=" << ms(percentile(rec, 0.5))
      << "ms max=" << ms(percentile(rec, 1.0)) << "ms unrecovered=" << unrecovered();
  char secs[32];
  std::snprintf(secs, sizeof secs, " | %.1f s", seconds);
  out << secs;
  for (const auto& k : end.keys_lingering) out << "\n[faults]   lingering: " << k;
  return out.str();
}

std::string scenario_result::json() const {
  const auto rec = recovery_ms();
  std::ostringstream out;
  out << "{\"scenario\":\"" << options.name << "\",\"nemesis\":\"" << to_string(options.nemesis)
      << "\",\"lock_queue\":" << (options.lock_queue ? "true" : "false")
      << ",\"lease_ms\":" << options.watchdog.count()
      << ",\"fault_on_ms\":" << options.fault_on.count() << ",\"faults\":" << faults.size()
      << ",\"histories\":" << check.histories << ",\"ops\":" << check.acquires
      << ",\"acquired\":" << check.acquired << ",\"not_acquired\":" << check.not_acquired
      << ",\"acquire_errors\":" << check.acquire_errors << ",\"writes_ok\":" << check.writes_ok
      << ",\"writes_indeterminate\":" << check.writes_indeterminate
      << ",\"writes_skipped\":" << check.writes_skipped
      << ",\"invalid_leases\":" << check.invalid_leases
      << ",\"lost_updates\":" << check.lost_updates << ",\"stale_reads\":" << check.stale_reads
      << ",\"register_explained\":" << (check.register_explained ? "true" : "false")
      << ",\"overlaps\":" << check.overlaps.size()
      << ",\"undetected_overlaps\":" << check.undetected_overlaps()
      << ",\"late_acquires\":" << check.late_acquires
      << ",\"max_past_deadline_ms\":" << ms(past_deadline_ms(check))
      << ",\"stuck_acquires\":" << check.stuck_acquires
      << ",\"excused_acquires\":" << check.excused_acquires
      << ",\"overlapped_holders\":" << overlapped_sections(check)
      << ",\"loss_token\":" << check.loss_signals << ",\"loss_deadline\":" << check.deadline_losses
      << ",\"tokens_missed\":" << check.tokens_missed
      << ",\"fenced\":" << (options.fenced ? "true" : "false")
      << ",\"careless\":" << (options.careless ? "true" : "false")
      << ",\"fenced_refusals\":" << check.fenced_refusals
      << ",\"fencing_order_violations\":" << check.fencing_order_violations
      << ",\"undetected_losses\":" << undetected_losses() << ",\"loss_latency_max_ms\":"
      << (max_loss_latency_ms() < 0 ? std::string("null") : ms(max_loss_latency_ms()))
      << ",\"leaks\":" << end.leaks().size() << ",\"idle_renewals\":" << end.idle_renewals
      << ",\"lingering_keys\":" << end.keys_lingering.size()
      << ",\"subscribers\":" << end.subscribers << ",\"crashes\":" << crashes.size()
      << ",\"recovery_p50_ms\":" << (rec.empty() ? "null" : ms(percentile(rec, 0.5)))
      << ",\"recovery_max_ms\":" << (rec.empty() ? "null" : ms(percentile(rec, 1.0)))
      << ",\"unrecovered\":" << unrecovered() << ",\"seconds\":" << seconds << "}";
  return out.str();
}

}  // namespace rlock::faults
