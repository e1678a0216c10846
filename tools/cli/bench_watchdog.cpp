#include "bench_watchdog.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "bench_commandstats.hpp"
#include "bench_keys.hpp"
#include "bench_latency.hpp"
#include "bench_lock_set.hpp"
#include "bench_options.hpp"
#include "bench_process_stats.hpp"
#include "command_error.hpp"
#include "connect.hpp"
#include "duration.hpp"
#include "duration_option.hpp"
#include "rlock/client_stats.hpp"

namespace rlock::cli {
namespace {

using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct probe_result {
  latency_histogram histogram{};  ///< the cycles that count: all when idle, the round's else
  latency_histogram between{};    ///< renewing: the cycles before the round's first script
  long long cycles = 0;           ///< every cycle run
  long long scripts = 0;          ///< EVALSHA + EVAL on the server meanwhile (idle only)
  bool round_seen = false;        ///< every script of the renewal round was seen
  clock::duration round_span{};   ///< from the poll before its first script to the poll after
                                  ///< its last
};

/// Lock (fixed lease) + unlock cycles back to back until `end`, reading INFO commandstats
/// between cycles (untimed) every `poll` to follow the server's script count.
/// Idle (round_scripts == 0): every cycle counts. Renewing: the probe runs until the server has
/// run `round_scripts` scripts beyond the probe's own (`probe_scripts_per_cycle` each), one
/// renewal round; only the cycles that overlap that round count (from the last poll that saw
/// none of its scripts to the first that saw all), so that the figure is the latency while
/// renewals run, not diluted by the idle rest of a period. The cycles that ended before the
/// round (the locks held, no renewal running) go to `between`: a baseline measured next to the
/// round, under the same machine load. The cycles of the first `warm_up` (the thread and its
/// caches waking from a sleep) count in no histogram.
probe_result run_probe(rlock::client& client, rlock::lock& probe, milliseconds lease,
                       clock::time_point end, long long round_scripts,
                       double probe_scripts_per_cycle, clock::duration warm_up) {
  constexpr auto poll = milliseconds(2);
  probe_result r;
  const auto counted_from = clock::now() + warm_up;
  const command_counts before = read_commandstats(client);
  std::vector<std::pair<clock::time_point, clock::time_point>> cycles;
  auto last_poll = clock::now();
  auto quiet_until = last_poll;  // the last poll that saw no renewal script
  for (auto t0 = last_poll; t0 < end; t0 = clock::now()) {
    probe.lock(lease);
    probe.unlock_or_throw();
    const auto t1 = clock::now();
    cycles.emplace_back(t0, t1);
    if (t1 - last_poll < poll) continue;
    const long long scripts = scripts_run(command_delta(before, read_commandstats(client)));
    last_poll = clock::now();
    if (round_scripts == 0) continue;
    const long long probe_scripts =
        std::llround(static_cast<double>(cycles.size()) * probe_scripts_per_cycle);
    const long long renewals = scripts - probe_scripts;
    if (renewals <= 0) quiet_until = last_poll;
    if (renewals >= round_scripts) {
      r.round_seen = true;
      r.round_span = last_poll - quiet_until;
      break;
    }
  }
  // Per-cycle costs come from the idle probe only.
  if (round_scripts == 0) r.scripts = scripts_run(command_delta(before, read_commandstats(client)));
  r.cycles = static_cast<long long>(cycles.size());
  for (const auto& [t0, t1] : cycles) {
    if (t0 < counted_from) continue;
    const long long ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    if (round_scripts == 0 || (r.round_seen && t1 > quiet_until && t0 < last_poll)) {
      r.histogram.record(ns);
    } else if (r.round_seen && t1 <= quiet_until) {  // renewing (round_scripts > 0)
      r.between.record(ns);
    }
  }
  return r;
}

double per(double total, double n) {
  return n > 0 ? total / n : 0.0;
}

}  // namespace

void add_watchdog_options(CLI::App& sub, watchdog_options& opts) {
  add_count_option(sub, "--locks", opts.locks, "Locks held under the watchdog", "N", 1'000'000);
  add_count_option(sub, "--periods", opts.periods,
                   "Renewal periods to hold them (period: timeout/3)", "K", 1000);
  add_count_option(sub, "--rounds", opts.rounds,
                   "Renewal rounds to probe the lock latency during (and just before)", "R", 100);
  add_duration_option(sub, "--watchdog-timeout", opts.watchdog_timeout,
                      "The client's lock_watchdog_timeout", duration_bound::positive);
  sub.footer(
      "One client takes N locks without a lease and holds them for K renewal periods\n"
      "(timeout/3). Renewal scripts per period: EVALSHA delta of INFO commandstats over the K\n"
      "periods, with nothing else running, and the server's time in each (commandstats usec);\n"
      "CPU: user+sys of this process over them. Then a\n"
      "probe (lock with a lease + unlock on another name, back to back) runs through the next\n"
      "R rounds (each spreads its batches over half a period), each from a quarter period\n"
      "before it until the server has run all of its scripts (followed by the server's script\n"
      "count). Lock latency p99 during the rounds (the cycles that overlap them) against the\n"
      "cycles just before them (the locks held, no renewal running; the ratio), and against 3 s\n"
      "of probing before the locks were taken. All keys must be gone at the end.\n");
}

bench_report run_watchdog(const watchdog_options& o, const connection_options& conn) {
  rlock::config cfg = make_config(conn);
  cfg.lock_watchdog_timeout = o.watchdog_timeout;
  rlock::client client = connect_checked(cfg);
  const std::string prefix = bench_prefix();
  const milliseconds period = o.watchdog_timeout / 3;
  if (period.count() < 1) throw usage_error("--watchdog-timeout must be at least 3ms");
  rlock::lock probe = client.get_lock(prefix + "probe");
  const milliseconds probe_lease = std::max(o.watchdog_timeout, milliseconds(10'000));
  bench_report report;
  // Each probe run starts counting after this: a 40th of its quarter period before the round.
  const clock::duration warm_up = std::min<clock::duration>(milliseconds(100), period / 40);

  // 1. Idle.
  const process_status before = read_process_status();
  const probe_result idle =
      run_probe(client, probe, probe_lease, clock::now() + milliseconds(3000), 0, 0.0, warm_up);
  const double probe_scripts_per_cycle =
      per(static_cast<double>(idle.scripts), static_cast<double>(idle.cycles));

  // 2. Take the locks.
  bench_lock_set locks(client, prefix, "w", static_cast<std::size_t>(o.locks));
  const auto first_acquire = clock::now();
  const std::size_t held =
      locks.acquire_all(first_acquire + milliseconds(60'000) + milliseconds(o.locks));
  report.check(held == locks.size(),
               "only " + std::to_string(held) + " of " + std::to_string(o.locks) + " locks taken" +
                   (locks.first_error().empty() ? "" : ": " + locks.first_error()));

  // 3. Hold for K periods, then probe R rounds. Rounds come one a period, due `period` after
  // the previous, the first a period after the first acquire, and a round spreads its batches
  // over the first half of its period. The quiet window (K periods from 3/4 of a period after
  // the first round or a later one, in a quiet half) counts K rounds' scripts and the watchdog's
  // CPU time, with nothing else running. Then, for each of the next R rounds, the probe runs
  // from a quarter period before it (the previous round ended a quarter period earlier still)
  // until all of its scripts have run: the cycles before its first script are the baseline
  // next to it, those overlapping it the latency while it runs.
  auto window_start = first_acquire + period * 7 / 4;
  while (window_start < clock::now()) window_start += period;
  std::this_thread::sleep_until(window_start);
  const auto window_end = window_start + o.periods * period;
  const std::string quiet_before = read_commandstats_info(client);
  const rlock::client_stats counted_before = client.stats();
  const long long quiet_cpu0 = process_cpu_ns();
  std::this_thread::sleep_until(window_end);
  const auto renewal_cpu_ns = static_cast<double>(process_cpu_ns() - quiet_cpu0);
  const process_status holding = read_process_status();
  const rlock::client_stats counted_after = client.stats();
  const std::string quiet_after = read_commandstats_info(client);
  // The client's own count (client::stats()) beside the server's.
  const auto client_renewals =
      static_cast<double>(counted_after.renewals - counted_before.renewals);
  const long long renewal_scripts = scripts_run(commandstats_delta(quiet_before, quiet_after));
  // The server's time in them (commandstats usec): how long each batch holds up other clients.
  const long long renewal_usec =
      scripts_run(commandstats_delta(quiet_before, quiet_after, commandstats_field::usec));
  const double us_per_renewal =
      per(static_cast<double>(renewal_usec), static_cast<double>(renewal_scripts));
  const auto batch = static_cast<long long>(std::max(1, cfg.lock_watchdog_batch_size));
  const long long round_scripts = (static_cast<long long>(held) + batch - 1) / batch;
  probe_result renewing;
  int rounds_seen = 0;
  for (int r = 0; r < o.rounds; ++r) {
    const auto round_due = window_end + period / 4 + r * period;
    std::this_thread::sleep_until(round_due - period / 4);
    const probe_result one = run_probe(client, probe, probe_lease, round_due + period * 3 / 4,
                                       round_scripts, probe_scripts_per_cycle, warm_up);
    rounds_seen += one.round_seen ? 1 : 0;
    renewing.histogram.merge(one.histogram);
    renewing.between.merge(one.between);
    renewing.cycles += one.cycles;
    renewing.round_span += one.round_span;
  }
  report.check(held == 0 || rounds_seen == o.rounds,
               "the probe saw " + std::to_string(rounds_seen) + " of " + std::to_string(o.rounds) +
                   " whole renewal rounds (" + std::to_string(round_scripts) +
                   " scripts each) in their periods");

  // 4. Release and check.
  const std::size_t released =
      locks.release_all(clock::now() + milliseconds(60'000) + milliseconds(o.locks));
  report.check(released == held, "only " + std::to_string(released) + " of " +
                                     std::to_string(held) + " locks released");
  const rlock::client_stats counted_end = client.stats();
  report.check(counted_end.holds_lost == 0,
               std::to_string(counted_end.holds_lost) + " hold(s) lost while held");
  const run_leftovers left = clean_up_run(client, prefix);
  report.check(left.keys == 0, std::to_string(left.keys) + " key(s) left on the server");

  const double k = o.periods;
  const long long idle_p99 = idle.histogram.percentile(99);
  const long long renewing_p99 = renewing.histogram.percentile(99);
  const long long idle_p999 = idle.histogram.percentile(99.9);
  const long long renewing_p999 = renewing.histogram.percentile(99.9);
  const long long between_p99 = renewing.between.percentile(99);
  const long long between_p999 = renewing.between.percentile(99.9);
  // Against the cycles just before the round (same load, the locks held): only renewal differs.
  const double ratio = per(static_cast<double>(renewing_p99), static_cast<double>(between_p99));
  const double ratio_to_idle =
      per(static_cast<double>(renewing_p99), static_cast<double>(idle_p99));
  json_object rss;
  rss.add("before", before.rss_kib).add("holding", holding.rss_kib);
  json_object latency;
  latency.add_us("idle", idle_p99)
      .add_us("between", between_p99)
      .add_us("renewing", renewing_p99)
      .add("ratio", ratio, 3)
      .add("ratio_to_idle", ratio_to_idle, 3);
  json_object latency_p999;
  latency_p999.add_us("idle", idle_p999)
      .add_us("between", between_p999)
      .add_us("renewing", renewing_p999);
  json_object latency_max;
  latency_max.add_us("idle", idle.histogram.max())
      .add_us("between", renewing.between.max())
      .add_us("renewing", renewing.histogram.max());
  json_object probe_cycles;
  probe_cycles.add("idle", static_cast<long long>(idle.histogram.count()))
      .add("between", static_cast<long long>(renewing.between.count()))
      .add("renewing", static_cast<long long>(renewing.histogram.count()));
  report.json.add("scenario", "watchdog")
      .add("library", "rlock")
      .add("locks", o.locks)
      .add("periods", o.periods)
      .add("rounds_probed", o.rounds)
      .add("watchdog_timeout_ms", static_cast<long long>(o.watchdog_timeout.count()))
      .add("renewal_scripts_per_period", static_cast<double>(renewal_scripts) / k, 2)
      .add("client_renewals_per_period", client_renewals / k, 2)
      .add("renewals_failed", static_cast<long long>(counted_end.renewals_failed))
      .add("cpu_ms_per_period", renewal_cpu_ns / k / 1e6, 3)
      .add("server_us_per_renewal_script", us_per_renewal, 1)
      .add("rss_kib", rss)
      .add("lock_latency_p99_us", latency)
      .add("lock_latency_p999_us", latency_p999)
      .add("lock_latency_max_us", latency_max)
      .add("latency_cycles", probe_cycles)
      .add("round_scripts", round_scripts)
      .add_us("round_us_observed",
              std::chrono::duration_cast<std::chrono::nanoseconds>(renewing.round_span).count())
      .add("keys_left", left.keys)
      .add("unlock_latches_left", left.unlock_latches)
      .add("locks_taken", static_cast<long long>(held))
      .add("probe_cycles", renewing.cycles)
      .add("threads", holding.threads);

  std::ostringstream text;
  text << "watchdog: " << o.locks << " locks held for " << o.periods << " renewal period(s) of "
       << format_duration(period) << " (lock_watchdog_timeout "
       << format_duration(o.watchdog_timeout) << ")\n"
       << "  renewal scripts per period "
       << json_number(static_cast<double>(renewal_scripts) / k, 2) << "\n"
       << "  client CPU per period      " << json_number(renewal_cpu_ns / k / 1e6, 2) << " ms\n"
       << "  server per renewal script  " << json_number(us_per_renewal, 1) << " µs\n"
       << "  RSS                        " << before.rss_kib << " KiB before, " << holding.rss_kib
       << " KiB holding\n"
       << "  lock+unlock p99            " << format_latency_ns(renewing_p99)
       << " during renewal rounds (" << renewing.histogram.count() << " cycles in " << o.rounds
       << " round(s), "
       << format_latency_ns(
              std::chrono::duration_cast<std::chrono::nanoseconds>(renewing.round_span).count())
       << "), " << format_latency_ns(between_p99) << " just before them ("
       << renewing.between.count() << " cycles): ratio " << json_number(ratio, 2) << "\n"
       << "                             " << format_latency_ns(idle_p99)
       << " before the locks were taken (" << idle.histogram.count() << " cycles): ratio "
       << json_number(ratio_to_idle, 2) << "\n"
       << "  lock+unlock p99.9          " << format_latency_ns(renewing_p999) << " during, "
       << format_latency_ns(between_p999) << " just before, " << format_latency_ns(idle_p999)
       << " idle\n"
       << "  lock+unlock max            " << format_latency_ns(renewing.histogram.max())
       << " during, " << format_latency_ns(renewing.between.max()) << " just before, "
       << format_latency_ns(idle.histogram.max()) << " idle\n"
       << "  keys left                  " << left.keys << "\n";
  report.text = text.str();
  return report;
}

}  // namespace rlock::cli
