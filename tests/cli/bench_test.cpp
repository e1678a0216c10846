// `rlock bench`: each scenario run small against a private redis-server, its JSON checked by
// Python's parser, and the invariants asserted (never timings: the figures are the bench's
// business, not the test's).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "cli_harness.hpp"
#include "support/redis_server.hpp"
#include "support/sanitizer_slowdown.hpp"
#include "support/temp_dir.hpp"

namespace rlock::test {
namespace {

// Flattens a JSON object into "path value" lines: numbers and strings as they are, arrays as
// path.len and path.sum (numbers only), nested objects with dotted paths.
constexpr const char* flatten_json = R"(
import json, sys
d = json.load(open(sys.argv[1], encoding='utf-8'))
def walk(prefix, v):
    if isinstance(v, dict):
        for k, x in v.items():
            walk(prefix + k if not prefix else prefix + '.' + k, x)
    elif isinstance(v, list):
        assert all(isinstance(x, (int, float)) for x in v), prefix
        print(prefix + '.len', len(v))
        print(prefix + '.sum', sum(v))
        print(prefix + '.min', min(v) if v else 0)
    elif isinstance(v, bool):
        print(prefix, int(v))
    else:
        print(prefix, v)
walk('', d)
)";

class cli_bench : public ::testing::Test {
 protected:
  /// Runs `rlock bench ARGS --json --url URL`; the flattened JSON, keyed by path.
  std::map<std::string, std::string> bench_json(std::vector<std::string> args, int expect = 0) {
    args.insert(args.begin(), "bench");
    args.insert(args.end(), {"--json", "--url", server_.url()});
    const auto r = run_rlock(args, {}, 60s);
    EXPECT_EQ(r.status, expect) << r.out << r.err;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << "one line: " << r.out;
    const auto file = dir_.path() / "bench.json";
    std::ofstream(file, std::ios::binary) << r.out;
    child_process py(find_program("python3"), {"-c", flatten_json, file.string()},
                     child_options{.capture_stderr = true});
    EXPECT_EQ(py.wait_for(30s), std::optional<int>(0)) << "not valid JSON: " << r.out << "\n"
                                                       << py.error_output();
    std::map<std::string, std::string> fields;
    std::istringstream in(py.output());
    for (std::string line; std::getline(in, line);) {
      const auto space = line.find(' ');
      if (space != std::string::npos) fields[line.substr(0, space)] = line.substr(space + 1);
    }
    return fields;
  }

  static double number(const std::map<std::string, std::string>& f, const std::string& path) {
    const auto it = f.find(path);
    if (it == f.end()) {
      ADD_FAILURE() << "no field " << path;
      return std::nan("");
    }
    return std::stod(it->second);
  }

  static std::string text(const std::map<std::string, std::string>& f, const std::string& path) {
    const auto it = f.find(path);
    return it == f.end() ? "<missing " + path + ">" : it->second;
  }

  /// The server holds no key at all (every run uses a fresh server and deletes its keys).
  void expect_no_keys_left() { EXPECT_EQ(server_.cli({"DBSIZE"}), "0"); }

  void check_contended(const std::string& queue, const std::string& mode) {
    const auto f = bench_json({"contended", "--processes", "3", "--threads", "2", "--hold", "1ms",
                               "--duration", "1s", "--queue", queue});
    EXPECT_EQ(text(f, "scenario"), "contended");
    EXPECT_EQ(text(f, "library"), "rlock");
    EXPECT_EQ(text(f, "mode"), mode);
    EXPECT_EQ(number(f, "processes"), 3);
    EXPECT_EQ(number(f, "threads"), 2);
    EXPECT_EQ(number(f, "hold_us"), 1000);
    const double acquisitions = number(f, "acquisitions");
    EXPECT_GT(acquisitions, 0);
    EXPECT_EQ(number(f, "lost_updates"), 0);
    EXPECT_EQ(number(f, "overlaps"), 0);
    EXPECT_EQ(number(f, "failed_workers"), 0);
    EXPECT_EQ(number(f, "per_worker.len"), 6);
    EXPECT_EQ(number(f, "per_worker.sum"), acquisitions);
    EXPECT_LE(number(f, "handoff_samples_us.len"), acquisitions - 1);
    // Every gap is either a hand-off to another worker or a re-acquisition.
    EXPECT_LE(number(f, "handoff_samples_us.len") + number(f, "reacquisitions"), acquisitions - 1);
    EXPECT_GE(number(f, "gap_mean_us"), 0);
    EXPECT_GE(number(f, "handoff_samples_us.min"), 0);
    EXPECT_LE(number(f, "handoff_us.p50"), number(f, "handoff_us.p99"));
    EXPECT_LE(number(f, "handoff_us.p99"), number(f, "handoff_us.max"));
    EXPECT_GE(number(f, "fairness"), 0);
    EXPECT_LE(number(f, "fairness"), 1);
    EXPECT_GT(number(f, "utilisation"), 0);
    EXPECT_LE(number(f, "utilisation"), 1);
    // Every acquisition is at least one script, and every unlock is one.
    EXPECT_GE(number(f, "commands.evalsha"), acquisitions);
    EXPECT_GE(number(f, "client_requests_per_acquisition"), 1);
    // The server's time in those scripts (commandstats usec): per acquisition = per script x
    // scripts per acquisition (both rounded to 0.1 µs).
    const double per_script = number(f, "server_us_per_script");
    EXPECT_GT(per_script, 0);
    EXPECT_NEAR(number(f, "server_script_us_per_acquisition"),
                per_script * number(f, "commands.evalsha") / acquisitions,
                0.05 * number(f, "server_script_us_per_acquisition") + 0.2);
    EXPECT_GE(number(f, "commands.get"), acquisitions);  // scripts run GET and SET too
    EXPECT_GE(number(f, "commands.set"), acquisitions);
    EXPECT_TRUE(f.contains("acquisitions_per_s") && f.contains("duration_s"));
    expect_no_keys_left();
  }

  redis_server server_;
  temp_dir dir_{"rlock-bench"};
};

TEST_F(cli_bench, uncontended_threads_share_one_client) {
  const auto f = bench_json({"uncontended", "--threads", "4", "--duration", "300ms"});
  EXPECT_EQ(text(f, "scenario"), "uncontended");
  EXPECT_EQ(text(f, "library"), "rlock");
  EXPECT_EQ(text(f, "mode"), "queued");
  EXPECT_EQ(number(f, "threads"), 4);
  const double cycles = number(f, "cycles");
  EXPECT_GT(cycles, 0);
  EXPECT_GT(number(f, "cycles_per_s"), 0);
  EXPECT_GT(number(f, "samples_us.len"), 0);
  EXPECT_LE(number(f, "samples_us.len"), std::min(cycles, 20000.0));
  EXPECT_GT(number(f, "samples_us.min"), 0);
  EXPECT_LE(number(f, "latency_us.p50"), number(f, "latency_us.p99"));
  EXPECT_LE(number(f, "latency_us.p99"), number(f, "latency_us.p999"));
  EXPECT_LE(number(f, "latency_us.p999"), number(f, "latency_us.max"));
  EXPECT_EQ(number(f, "keys_left"), 0);
  EXPECT_EQ(text(f, "api"), "blocking");
  EXPECT_EQ(number(f, "connections"), 1);
  // The server's main thread ran the run's scripts: some of its CPU time is in the window.
  EXPECT_GT(number(f, "server.main_thread_busy"), 0);
  EXPECT_GT(number(f, "server.cpu_us_per_cycle"), 0);
  expect_no_keys_left();
}

TEST_F(cli_bench, uncontended_async_chains_share_two_connections) {
  const auto f = bench_json({"uncontended", "--threads", "8", "--duration", "300ms", "--api",
                             "async", "--connections", "2"});
  EXPECT_EQ(text(f, "api"), "async");
  EXPECT_EQ(number(f, "threads"), 8);
  EXPECT_EQ(number(f, "connections"), 2);
  EXPECT_GT(number(f, "cycles"), 0);
  EXPECT_LE(number(f, "latency_us.p50"), number(f, "latency_us.max"));
  EXPECT_GT(number(f, "server.cpu_us_per_cycle"), 0);
  EXPECT_EQ(number(f, "keys_left"), 0);
  expect_no_keys_left();
}

TEST_F(cli_bench, uncontended_plain_mode_with_a_lease) {
  const auto f = bench_json(
      {"uncontended", "--threads", "2", "--duration", "200ms", "--queue", "off", "--lease", "5s"});
  EXPECT_EQ(text(f, "mode"), "plain");
  EXPECT_EQ(number(f, "lease_ms"), 5000);
  EXPECT_GT(number(f, "cycles"), 0);
  expect_no_keys_left();
}

// --fenced: each cycle's acquire also issues a token, on both APIs; one counter per name is
// left (Redisson's layout: never deleted), then removed with the run's keys.
TEST_F(cli_bench, uncontended_fenced_issues_a_token_per_acquire) {
  for (const char* api : {"blocking", "async"}) {
    const auto f = bench_json(
        {"uncontended", "--threads", "2", "--duration", "200ms", "--api", api, "--fenced"});
    EXPECT_EQ(text(f, "api"), api);
    EXPECT_EQ(number(f, "fenced"), 1);
    EXPECT_GT(number(f, "cycles"), 0);
    EXPECT_EQ(number(f, "token_counters_left"), 2);
    EXPECT_EQ(number(f, "keys_left"), 0);
    expect_no_keys_left();
  }
  const auto plain = bench_json({"uncontended", "--threads", "2", "--duration", "200ms"});
  EXPECT_EQ(number(plain, "token_counters_left"), 0);
}

TEST_F(cli_bench, contended_queued_has_no_lost_update_or_overlap) {
  check_contended("on", "queued");
}

TEST_F(cli_bench, contended_plain_has_no_lost_update_or_overlap) {
  check_contended("off", "plain");
}

TEST_F(cli_bench, watchdog_renews_in_batches_of_100_and_leaves_no_key) {
  // The bench finds each round a quarter period before it is due, and counts it seen once all
  // of its scripts have run within the next three quarters. Those margins are fractions of the
  // period, and what they absorb (timer wake-ups, the CPU work of taking the locks and of each
  // batch) a sanitizer build slows: RLOCK_SANITIZER_SLOWDOWN, 5 under ThreadSanitizer, where at
  // a 900 ms timeout the probe once saw 1 of 2 rounds with 4 tests at once. So the period
  // grows by that factor.
  const long long timeout_ms = 900LL * RLOCK_SANITIZER_SLOWDOWN;
  const auto f = bench_json({"watchdog", "--locks", "300", "--periods", "2", "--rounds", "2",
                             "--watchdog-timeout", std::to_string(timeout_ms) + "ms"});
  EXPECT_EQ(text(f, "scenario"), "watchdog");
  EXPECT_EQ(number(f, "locks"), 300);
  EXPECT_EQ(number(f, "locks_taken"), 300);
  EXPECT_EQ(number(f, "periods"), 2);
  EXPECT_EQ(number(f, "watchdog_timeout_ms"), timeout_ms);
  // ceil(300 / 100) = 3 scripts per round, one round per period; the slack covers a round
  // drifting across the window's edge on a loaded machine.
  const double per_period = number(f, "renewal_scripts_per_period");
  EXPECT_GE(per_period, 1);
  EXPECT_LE(per_period, 3 + 2);
  // The client's own count (client::stats()) agrees with the server's, but for a script sent
  // and run on either side of the window's edge.
  EXPECT_NEAR(number(f, "client_renewals_per_period"), per_period, 1.0);
  EXPECT_EQ(number(f, "renewals_failed"), 0);
  EXPECT_GT(number(f, "rss_kib.before"), 0);
  EXPECT_GT(number(f, "rss_kib.holding"), 0);
  EXPECT_GT(number(f, "lock_latency_p99_us.idle"), 0);
  EXPECT_GT(number(f, "lock_latency_p99_us.renewing"), 0);
  EXPECT_GT(number(f, "lock_latency_p99_us.between"), 0);
  EXPECT_GT(number(f, "lock_latency_p99_us.ratio"), 0);
  EXPECT_GT(number(f, "lock_latency_p99_us.ratio_to_idle"), 0);
  // The renewing figure comes from the cycles that overlap two whole rounds of 3 scripts, the
  // baseline from those just before each.
  EXPECT_EQ(number(f, "rounds_probed"), 2);
  EXPECT_EQ(number(f, "round_scripts"), 3);
  EXPECT_GT(number(f, "latency_cycles.renewing"), 0);
  EXPECT_GT(number(f, "latency_cycles.between"), 0);
  EXPECT_GT(number(f, "latency_cycles.idle"), number(f, "latency_cycles.renewing"));
  EXPECT_GT(number(f, "round_us_observed"), 0);
  EXPECT_LE(number(f, "lock_latency_p99_us.renewing"), number(f, "lock_latency_p999_us.renewing"));
  EXPECT_LE(number(f, "lock_latency_p999_us.renewing"), number(f, "lock_latency_max_us.renewing"));
  EXPECT_GE(number(f, "cpu_ms_per_period"), 0);
  EXPECT_GT(number(f, "server_us_per_renewal_script"), 0);  // every script takes some time
  EXPECT_EQ(number(f, "keys_left"), 0);
  expect_no_keys_left();
}

TEST_F(cli_bench, footprint_counts_waiting_threads_and_leaves_no_key) {
  const auto f = bench_json({"footprint", "--locks", "500", "--waiters", "50"});
  EXPECT_EQ(text(f, "scenario"), "footprint");
  EXPECT_GT(number(f, "idle.rss_kib"), 0);
  EXPECT_GE(number(f, "idle.threads"), 2);  // main + at least one I/O thread
  EXPECT_EQ(number(f, "held_locks.count"), 500);
  EXPECT_GT(number(f, "held_locks.rss_kib"), 0);
  EXPECT_EQ(number(f, "waiters.count"), 50);
  EXPECT_GE(number(f, "waiters.threads"), 51);
  EXPECT_EQ(number(f, "waiters.library_threads"),
            number(f, "waiters.threads") - number(f, "waiters.count") - 1);
  EXPECT_GE(number(f, "waiters.library_threads"), 1);
  EXPECT_EQ(number(f, "waiters.acquired"), 50);
  EXPECT_EQ(number(f, "keys_left"), 0);
  expect_no_keys_left();
}

TEST(cli_bench_text, without_a_url_starts_a_throwaway_server_and_prints_a_summary) {
  const auto r = run_rlock({"bench", "uncontended", "--duration", "200ms"}, {}, 60s);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("started a throwaway redis-server"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("cycle latency p50"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("result: ok"), std::string::npos) << r.out;
}

TEST(cli_bench_usage, bad_options_and_unknown_scenarios_are_usage_errors) {
  const auto expect_usage = [](const std::vector<std::string>& args, const std::string& reason) {
    SCOPED_TRACE(args.back());
    const auto r = run_rlock(args);
    EXPECT_EQ(r.status, 64) << r.err;
    EXPECT_NE(r.err.find(reason), std::string::npos) << r.err;
  };
  expect_usage({"bench", "contended", "--duration", "2"}, "--duration: duration '2' has no unit");
  expect_usage({"bench", "uncontended", "--lease", "0s"}, "duration must be greater than zero");
  expect_usage({"bench", "nosuch"}, "unknown scenario 'nosuch'");
  expect_usage({"bench"}, "no scenario given");
  expect_usage({"bench", "contended", "--queue", "maybe"}, "--queue");
  expect_usage({"bench", "uncontended", "--threads", "0"}, "--threads");
  expect_usage({"bench", "uncontended", "--api", "sync"}, "--api");
  expect_usage({"bench", "uncontended", "--connections", "65"}, "--connections");
  expect_usage({"bench", "watchdog", "--locks", "many"}, "--locks");
  expect_usage({"bench", "watchdog", "--rounds", "0"}, "--rounds");
  const auto r = run_rlock({"bench", "contended", "--nonsense"});
  EXPECT_EQ(r.status, 64);
  EXPECT_NE(r.err.find("see 'rlock bench contended --help'"), std::string::npos) << r.err;
}

TEST(cli_bench_usage, every_scenario_has_help) {
  for (const char* scenario : {"uncontended", "contended", "watchdog", "footprint"}) {
    const auto r = run_rlock({"bench", scenario, "--help"});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(std::string("rlock bench ") + scenario), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--json"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace rlock::test
