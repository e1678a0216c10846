#include "bench_uncontended.hpp"

#include <atomic>
#include <future>
#include <iomanip>
#include <memory>
#include <sstream>
#include <thread>

#include "bench_keys.hpp"
#include "bench_latency.hpp"
#include "bench_options.hpp"
#include "bench_process_stats.hpp"
#include "bench_server_cpu.hpp"
#include "connect.hpp"
#include "demo_events.hpp"
#include "duration.hpp"
#include "duration_option.hpp"

namespace rlock::cli {
namespace {

using clock = std::chrono::steady_clock;
constexpr auto uncontended_warm_up = std::chrono::milliseconds(200);

struct thread_result {
  latency_histogram histogram{};
  latency_reservoir reservoir;
  std::uint64_t cycles = 0;
  long long finished_ns = 0;
  std::string error{};
  explicit thread_result(std::uint64_t seed) : reservoir(report_max_samples, seed) {}
};

void cycle(rlock::fenced_lock& f, bool fenced,
           const std::optional<std::chrono::milliseconds>& lease) {
  const auto lease_ms = lease.value_or(std::chrono::milliseconds(-1));  // -1: the watchdog
  if (fenced) {
    (void)f.lock_and_get_token(lease_ms);
  } else {
    f.as_lock().lock(lease_ms);
  }
  f.unlock_or_throw();
}

void run_thread(rlock::fenced_lock f, bool fenced,
                const std::optional<std::chrono::milliseconds>& lease, clock::time_point warm_end,
                clock::time_point end, thread_result& r) {
  try {
    while (clock::now() < warm_end) cycle(f, fenced, lease);
    for (auto t0 = clock::now(); t0 < end;) {
      cycle(f, fenced, lease);
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

// One chain of the async API: async_lock, then async_unlock from its completion, then the next
// cycle from the unlock's completion, until `end`; `finished` is called once when it stops.
class async_chain : public std::enable_shared_from_this<async_chain> {
 public:
  async_chain(rlock::fenced_lock l, bool fenced, std::uint64_t owner,
              const std::optional<std::chrono::milliseconds>& lease, clock::time_point warm_end,
              clock::time_point end, thread_result& r, std::function<void()> finished)
      : lock_(std::move(l)),
        fenced_(fenced),
        owner_(owner),
        lease_(lease),
        warm_end_(warm_end),
        end_(end),
        r_(r),
        finished_(std::move(finished)) {}

  void start() {
    t0_ = clock::now();
    auto self = shared_from_this();
    rlock::acquire_options o;  // waits until acquired
    o.lease = lease_;
    if (fenced_) {
      lock_.async_acquire(
          owner_, std::move(o),
          [self](std::error_code ec, std::optional<rlock::fencing_token>) { self->on_locked(ec); });
    } else {
      lock_.as_lock().async_acquire(owner_, std::move(o),
                                    [self](std::error_code ec, bool) { self->on_locked(ec); });
    }
  }

 private:
  void on_locked(std::error_code ec) {
    if (ec) return stop(ec);
    lock_.async_unlock(owner_,
                       [self = shared_from_this()](std::error_code e) { self->on_unlocked(e); });
  }
  void on_unlocked(std::error_code ec) {
    if (ec) return stop(ec);
    const auto t1 = clock::now();
    if (t0_ >= warm_end_) {
      const long long ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0_).count();
      r_.histogram.record(ns);
      r_.reservoir.offer(ns);
      ++r_.cycles;
    }
    if (t1 >= end_) return stop({});
    start();
  }
  void stop(std::error_code ec) {
    if (ec) r_.error = ec.message();
    r_.finished_ns = steady_now_ns();
    finished_();
  }

  rlock::fenced_lock lock_;
  bool fenced_;
  std::uint64_t owner_;
  std::optional<std::chrono::milliseconds> lease_;
  clock::time_point warm_end_;
  clock::time_point end_;
  thread_result& r_;
  std::function<void()> finished_;
  clock::time_point t0_{};
};

// Starts `results.size()` chains; the future is ready when every one has stopped.
std::future<void> start_async_chains(rlock::client& client, const std::string& prefix, bool fenced,
                                     const std::optional<std::chrono::milliseconds>& lease,
                                     clock::time_point warm_end, clock::time_point end,
                                     std::vector<std::unique_ptr<thread_result>>& results) {
  auto all_done = std::make_shared<std::promise<void>>();
  std::future<void> done = all_done->get_future();
  auto remaining = std::make_shared<std::atomic<std::size_t>>(results.size());
  auto finished = [remaining, all_done] {
    if (remaining->fetch_sub(1) == 1) all_done->set_value();
  };
  for (std::size_t i = 0; i < results.size(); ++i) {
    std::make_shared<async_chain>(client.get_fenced_lock(prefix + "u:" + std::to_string(i)), fenced,
                                  i + 1, lease, warm_end, end, *results[i], finished)
        ->start();
  }
  return done;
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
  sub.add_option("--api", opts.api,
                 "blocking: --threads threads on the blocking API; async: --threads chains on "
                 "the async API, all driven by the client's I/O thread")
      ->check(CLI::IsMember({"blocking", "async"}))
      ->capture_default_str();
  add_count_option(sub, "--connections", opts.connections,
                   "Command connections of the client (config::connection_pool_size)", "N", 64);
  sub.add_flag("--fenced", opts.fenced,
               "Fenced locks: each acquire also issues a fencing token (one request more)");
  sub.footer(
      "Thread i loops lock()+unlock() on its own name; all threads share one client, so their\n"
      "requests are pipelined on one connection. After an untimed 200ms warm-up: cycles,\n"
      "cycles/s and the latency of a cycle (p50, p99, p99.9, max; JSON: samples_us, up to\n"
      "20,000 uniformly sampled cycle latencies, for plots). With --api async the N chains\n"
      "run on the async API, driven by the client's I/O thread instead of N threads. The\n"
      "server's main-thread CPU time over the window (INFO cpu) gives how busy the run kept\n"
      "the server and its CPU time per cycle; near 100% busy, 1/that is the server's limit\n"
      "for these scripts (less busy, the cost per cycle includes more per-read overhead).\n");
}

bench_report run_uncontended(const uncontended_options& o, const connection_options& conn) {
  rlock::config cfg = make_config(conn);
  cfg.lock_queue = o.queue == "on";
  cfg.connection_pool_size = o.connections;
  rlock::client client = connect_checked(cfg);
  const std::string prefix = bench_prefix();

  std::vector<std::unique_ptr<thread_result>> results;
  std::vector<std::thread> threads;
  const auto warm_end = clock::now() + uncontended_warm_up;
  const auto end = warm_end + o.duration;
  const long long start_ns =
      steady_now_ns() + std::chrono::nanoseconds(uncontended_warm_up).count();
  const bool async = o.api == "async";
  for (int i = 0; i < o.threads; ++i) {
    results.push_back(std::make_unique<thread_result>(0x5eed + static_cast<std::uint64_t>(i)));
    if (async) continue;
    threads.emplace_back(run_thread, client.get_fenced_lock(prefix + "u:" + std::to_string(i)),
                         o.fenced, std::cref(o.lease), warm_end, end, std::ref(*results.back()));
  }
  std::future<void> chains;
  if (async) chains = start_async_chains(client, prefix, o.fenced, o.lease, warm_end, end, results);
  // The server's main-thread CPU time over the measured window (after the warm-up); negative
  // when the server refuses INFO (an ACL user without it): the run is measured without it.
  const auto server_cpu_now = [&client] {
    try {
      return read_server_cpu_seconds(client);
    } catch (const rlock::error&) {
      return -1.0;
    }
  };
  std::this_thread::sleep_until(warm_end);
  const double cpu_before = server_cpu_now();
  const long long client_cpu0 = process_cpu_ns();
  if (chains.valid()) chains.wait();
  for (auto& t : threads) t.join();
  const long long client_cpu_ns = client_cpu0 >= 0 ? process_cpu_ns() - client_cpu0 : -1;
  const double cpu_after = cpu_before >= 0 ? server_cpu_now() : -1.0;
  const double server_cpu_s = cpu_after >= 0 ? cpu_after - cpu_before : -1.0;

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
  // Server main thread: its busy share of the window, and its CPU time per measured cycle.
  const double cycles_n = static_cast<double>(all.count());
  const bool server_measured = server_cpu_s >= 0 && seconds > 0 && cycles_n > 0;
  const double server_busy = server_measured ? server_cpu_s / seconds : 0.0;
  const double server_us_per_cycle = server_measured ? server_cpu_s * 1e6 / cycles_n : 0.0;
  json_object server;
  if (server_measured) {
    server.add("main_thread_busy", server_busy, 3).add("cpu_us_per_cycle", server_us_per_cycle, 2);
  }
  // This process's CPU (user + sys, every thread) per measured cycle: what the latency costs
  // the client (its blocking calls spin briefly for their reply, config::blocking_spin).
  const double client_us_per_cycle = client_cpu_ns >= 0 && cycles_n > 0
                                         ? static_cast<double>(client_cpu_ns) / 1e3 / cycles_n
                                         : -1.0;
  json_object latency;
  latency.add_us("p50", all.percentile(50))
      .add_us("p99", all.percentile(99))
      .add_us("p999", all.percentile(99.9))
      .add_us("max", all.max());
  report.json.add("scenario", "uncontended")
      .add("library", "rlock")
      .add("mode", queue_mode_name(o.queue))
      .add("api", o.api)
      .add("fenced", o.fenced)
      .add("threads", o.threads)
      .add("duration_s", seconds)
      .add("cycles", all.count())
      .add("cycles_per_s", rate, 1)
      .add("latency_us", latency)
      .add("lease_ms", o.lease ? static_cast<long long>(o.lease->count()) : 0LL)
      .add("connections", o.connections)
      .add("keys_left", left.keys)
      .add("unlock_latches_left", left.unlock_latches)
      .add("token_counters_left", left.token_counters)
      .add("server", server)
      .add("client_cpu_us_per_cycle", client_us_per_cycle, 2)
      .add_us("samples_us", merge_reservoirs(reservoirs, report_max_samples, 0x5a3b1e));

  std::ostringstream text;
  text << "uncontended: " << o.threads << (async ? " async chain(s)" : " thread(s)")
       << " on one client (" << queue_mode_name(o.queue) << (o.fenced ? ", fenced" : "")
       << "), lock+unlock on distinct names for " << format_duration(o.duration) << "\n"
       << "  cycles        " << all.count() << " (" << static_cast<long long>(rate) << "/s)\n"
       << "  cycle latency p50 " << format_latency_ns(all.percentile(50)) << "  p99 "
       << format_latency_ns(all.percentile(99)) << "  p99.9 "
       << format_latency_ns(all.percentile(99.9)) << "  max " << format_latency_ns(all.max())
       << "\n"
       << "  keys left     " << left.keys << "\n";
  if (client_us_per_cycle >= 0) {
    text << "  client        " << std::fixed << std::setprecision(1) << client_us_per_cycle
         << " us CPU per cycle\n";
  }
  if (server_measured) {
    text << "  server        main thread busy " << std::fixed << std::setprecision(0)
         << 100 * server_busy << "%, " << std::setprecision(1) << server_us_per_cycle
         << " us CPU per cycle\n";
  }
  report.text = text.str();
  return report;
}

}  // namespace rlock::cli
