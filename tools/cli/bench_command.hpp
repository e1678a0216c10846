// bench_command.hpp: `rlock bench SCENARIO`: benchmarks of the lock against a Redis server, each
// with a human-readable summary or (--json) one JSON object on one line on stdout.
//
//   uncontended  lock+unlock cycles on distinct names, threads sharing one client
//   contended    worker processes x threads on one lock (hand-off, utilisation, fairness,
//                client requests per acquisition, lost updates, overlaps)
//   watchdog     N locks renewed by the watchdog: scripts and CPU per period, RSS, latency
//   footprint    RSS and threads idle, with N held locks and with W waiting threads
//
// Guarantees: without a URL (--url or $RLOCK_URL) it starts a throwaway redis-server on a free
// loopback port, says so on stderr and stops it afterwards. Every scenario is bounded (see its
// header) and uses a fresh key prefix. Exit 0 when every invariant held; 1 when one failed
// (the failures go to stderr, after the figures); 64 usage; 69 server unavailable.
#pragma once

#include <CLI/CLI.hpp>

#include "bench_contended.hpp"
#include "bench_footprint.hpp"
#include "bench_options.hpp"
#include "bench_uncontended.hpp"
#include "bench_watchdog.hpp"

namespace rlock::cli {

struct bench_options {
  bench_common_options common{};
  uncontended_options uncontended{};
  contended_options contended{};
  watchdog_options watchdog{};
  footprint_options footprint{};
};

/// Adds `bench` and its four scenario subcommands.
CLI::App* add_bench_command(CLI::App& app, bench_options& opts);
int run_bench(const CLI::App& bench, const bench_options& opts);

}  // namespace rlock::cli
