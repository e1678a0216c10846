#include "bench_uncontended.hpp"

#include <memory>
#include <sstream>
#include <thread>

#include "bench_keys.hpp"
#include "bench_latency.hpp"
#include "bench_options.hpp"
#include "connect.hpp"
#include "demo_events.hpp"
#include "duration.hpp"
#include "duration_option.hpp"

namespace rlock::cli {
namespace {

using clock = std::chrono::steady_clock;
constexpr std::size_t max_samples = 20'000;
constexpr auto warm_up = std::chrono::milliseconds(200);

struct thread_result {
  latency_histogram histogram{};
  latency_reservoir reservoir;
  std::uint64_t cycles = 0;
  long long finished_ns = 0;
  std::string error{};
  explicit thread_result(std::uint64_t seed) : reservoir(max_samples, seed) {}
};

void cycle(rlock::lock& l, const std::optional<std::chrono::milliseconds>& lease) {
  if (lease) {
    l.lock(*lease);
  } else {
    l.lock();
  }
  l.unlock();
}

void run_thread(rlock::lock l, const std::optional<std::chrono::milliseconds>& lease,
                clock::time_point warm_end, clock::time_point end, thread_result& r) {
  try {
    while (clock::now() < warm_end) cycle(l, lease);
    for (auto t0 = clock::now(); t0 < end;) {
      cycle(l, lease);
      const auto t1 = clock::now();
      const long long ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
      r.histogram.record(ns);
      r.reservoir.offer(ns);
      ++r.cycles;
      t0 = t1;
    }
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  r.finished_ns = steady_now_ns();
}

}  // namespace

void add_uncontended_options(CLI::App& sub, uncontended_options& opts) {
  add_count_option(sub, "--threads", opts.threads,
                   "Threads sharing one client, each on its own lock", "N", 1024);
  add_duration_option(sub, "--duration", opts.duration, "How long the threads cycle",
                      duration_bound::positive);
  add_duration_option(sub, "--lease", opts.lease,
                      "Take each lock with this lease (default: the watchdog lease)",
                      duration_bound::positive);
  add_queue_option(sub, opts.queue);
  sub.footer(
      "Thread i loops lock()+unlock() on its own name; all threads share one client, so their\n"
      "requests are pipelined on one connection. After an untimed 200ms warm-up: cycles,\n"
      "cycles/s and the latency of a cycle (p50, p99, p99.9, max; JSON: samples_us, up to\n"
      "20,000 uniformly sampled cycle latencies, for plots).\n");
}

bench_report run_uncontended(const uncontended_options& o, const connection_options& conn) {
  rlock::config cfg = make_config(conn);
  cfg.lock_queue = o.queue == "on";
  rlock::client client = connect_checked(cfg);
  const std::string prefix = bench_prefix();

  std::vector<std::unique_ptr<thread_result>> results;
  std::vector<std::thread> threads;
  const auto warm_end = clock::now() + warm_up;
  const auto end = warm_end + o.duration;
  const long long start_ns = steady_now_ns() + std::chrono::nanoseconds(warm_up).count();
  for (int i = 0; i < o.threads; ++i) {
    results.push_back(std::make_unique<thread_result>(0x5eed + static_cast<std::uint64_t>(i)));
    threads.emplace_back(run_thread, client.get_lock(prefix + "u:" + std::to_string(i)),
                         std::cref(o.lease), warm_end, end, std::ref(*results.back()));
  }
  for (auto& t : threads) t.join();

  latency_histogram all;
  std::vector<const latency_reservoir*> reservoirs;
  long long finished_ns = start_ns;
  bench_report report;
  for (const auto& r : results) {
    all.merge(r->histogram);
    reservoirs.push_back(&r->reservoir);
    finished_ns = std::max(finished_ns, r->finished_ns);
    report.check(r->error.empty(), "a thread failed: " + r->error);
  }
  const run_leftovers left = clean_up_run(client, prefix);
  report.check(left.keys == 0, std::to_string(left.keys) + " key(s) left on the server");

  const double seconds = static_cast<double>(finished_ns - start_ns) / 1e9;
  const double rate = seconds > 0 ? static_cast<double>(all.count()) / seconds : 0.0;
  json_object latency;
  latency.add_us("p50", all.percentile(50))
      .add_us("p99", all.percentile(99))
      .add_us("p999", all.percentile(99.9))
      .add_us("max", all.max());
  report.json.add("scenario", "uncontended")
      .add("library", "rlock")
      .add("mode", queue_mode_name(o.queue))
      .add("threads", o.threads)
      .add("duration_s", seconds)
      .add("cycles", all.count())
      .add("cycles_per_s", rate, 1)
      .add("latency_us", latency)
      .add("lease_ms", o.lease ? static_cast<long long>(o.lease->count()) : 0LL)
      .add("keys_left", left.keys)
      .add("unlock_latches_left", left.unlock_latches)
      .add_us("samples_us", merge_reservoirs(reservoirs, max_samples, 0x5a3b1e));

  std::ostringstream text;
  text << "uncontended: " << o.threads << " thread(s) on one client (" << queue_mode_name(o.queue)
       << "), lock+unlock on distinct names for " << format_duration(o.duration) << "\n"
       << "  cycles        " << all.count() << " (" << static_cast<long long>(rate) << "/s)\n"
       << "  cycle latency p50 " << format_latency_ns(all.percentile(50)) << "  p99 "
       << format_latency_ns(all.percentile(99)) << "  p99.9 "
       << format_latency_ns(all.percentile(99.9)) << "  max " << format_latency_ns(all.max())
       << "\n"
       << "  keys left     " << left.keys << "\n";
  report.text = text.str();
  return report;
}

}  // namespace rlock::cli
