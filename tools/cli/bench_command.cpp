#include "bench_command.hpp"

#include <cstdlib>
#include <iostream>
#include <optional>

#include "command_error.hpp"
#include "throwaway_server.hpp"  // tools/

namespace rlock::cli {
namespace {

CLI::App* add_scenario(CLI::App& bench, const std::string& name, const std::string& description,
                       bench_common_options& common) {
  CLI::App* sub = bench.add_subcommand(name, description);
  add_bench_common_options(*sub, common);
  return sub;
}

}  // namespace

CLI::App* add_bench_command(CLI::App& app, bench_options& opts) {
  CLI::App* bench = app.add_subcommand(
      "bench", "Benchmarks: uncontended, contended, watchdog, footprint (--json for machines)");
  bench->require_subcommand(1, 1);
  add_uncontended_options(
      *add_scenario(*bench, "uncontended",
                    "lock+unlock cycles on distinct names, threads sharing one client",
                    opts.common),
      opts.uncontended);
  add_contended_options(
      *add_scenario(*bench, "contended",
                    "Worker processes x threads on one lock, GET+SET of a counter inside",
                    opts.common),
      opts.contended);
  add_watchdog_options(
      *add_scenario(*bench, "watchdog",
                    "N locks held under the watchdog: renewal scripts, CPU, RSS, latency",
                    opts.common),
      opts.watchdog);
  add_footprint_options(
      *add_scenario(*bench, "footprint",
                    "RSS and threads: idle, holding N locks, with W waiting threads", opts.common),
      opts.footprint);
  bench->footer(
      "Each scenario: rlock bench SCENARIO --help. Without a URL ($RLOCK_URL or --url) a\n"
      "throwaway redis-server is started (and stopped). Figures on a shared or small machine\n"
      "are noisy; compare ratios measured in the same run (bench/compare does).\n"
      "\n"
      "Exit status: 0 every check passed; 1 a check failed (lost update, overlap, failed\n"
      "worker, key left behind); 64 usage; 69 server unavailable.\n");
  return bench;
}

int run_bench(const CLI::App& bench, const bench_options& opts) {
  connection_options conn = opts.common.connection;
  std::optional<rlock::examples::throwaway_server> server;
  const char* env_url = std::getenv("RLOCK_URL");  // NOLINT(concurrency-mt-unsafe): no setenv
  if (conn.url.empty() && (env_url == nullptr || *env_url == '\0')) {
    try {
      server.emplace();  // before any thread: redis-server inherits none
    } catch (const std::exception& e) {
      throw command_error(exit_codes::unavailable, e.what());
    }
    conn.url = server->url();
    std::cerr << "rlock bench: started a throwaway redis-server on " << conn.url << "\n";
  }

  const CLI::App* scenario = bench.get_subcommands().front();
  const std::string& name = scenario->get_name();
  bench_report report;
  if (name == "uncontended") {
    report = run_uncontended(opts.uncontended, conn);
  } else if (name == "contended") {
    report = run_contended(opts.contended, conn);
  } else if (name == "watchdog") {
    report = run_watchdog(opts.watchdog, conn);
  } else {
    report = run_footprint(opts.footprint, conn);
  }
  if (opts.common.json) {
    std::cout << report.json.text() << std::endl;
  } else {
    std::cout << report.text << (report.failures.empty() ? "result: ok" : "result: FAILED")
              << std::endl;
  }
  for (const auto& f : report.failures) std::cerr << "rlock bench " << name << ": " << f << "\n";
  return report.failures.empty() ? exit_codes::ok : exit_codes::check_failed;
}

}  // namespace rlock::cli
