// bench_uncontended.hpp: `rlock bench uncontended`: lock()+unlock() cycles on distinct names.
//
// Threads (--threads) share ONE rlock::client, so their requests are pipelined on its
// multiplexed connection; thread i cycles on its own name "<prefix>u:<i>". After an untimed
// 200 ms warm-up every thread cycles until --duration has passed.
//
// Guarantees: bounded by warm-up + --duration + one cycle (each bounded by the request
// timeout); latencies are kept in fixed memory (bench_latency.hpp) with a uniform sample of at
// most 20,000 for plots; the run's keys are checked to be gone at the end (and deleted if not).
// A thread that fails (an rlock::error) fails the run.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "bench_report.hpp"
#include "connection_options.hpp"

namespace rlock::cli {

struct uncontended_options {
  int threads = 1;
  std::chrono::milliseconds duration{5000};
  std::optional<std::chrono::milliseconds> lease{};
  std::string queue = "on";
};

void add_uncontended_options(CLI::App& sub, uncontended_options& opts);
bench_report run_uncontended(const uncontended_options& opts, const connection_options& conn);

}  // namespace rlock::cli
