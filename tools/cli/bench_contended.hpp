// bench_contended.hpp: `rlock bench contended`: worker processes x threads on one lock, with a
// non-atomic GET then SET+1 of a counter and a --hold inside each critical section.
//
// The workers are this executable re-run as `rlock bench-worker` (bench_worker.hpp); they start
// at one common instant and stop taking the lock at one common end instant, both on
// steady_clock (CLOCK_MONOTONIC, shared by the processes of one machine), and send their
// (acquired, released) records through a pipe afterwards.
//
// Figures (from the records, sorted by acquire time):
//   utilisation  sum of hold intervals / (last release - first acquire)
//   hand-off     next acquire - previous release, across all workers (a worker taking the
//                lock again is counted too); p50/p99/max and <= 20,000 samples
//   fairness     min / max acquisitions per worker (worker = process x thread)
//   lost updates acquisitions - final counter; overlaps: sections that intersect
//   client requests per acquisition: INFO commandstats deltas over the run of the commands
//                rlock clients send themselves (bench_commandstats.hpp) / acquisitions
// Guarantees: a fresh key prefix per run, its keys deleted at the end; workers still running
// hold + 2 x --timeout + 2 s after the end are killed; no worker outlives the command. The run
// fails (exit 1) on a lost update, an overlap, an unfinished section or a failed worker.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <string>

#include "bench_report.hpp"
#include "connection_options.hpp"

namespace rlock::cli {

struct contended_options {
  int processes = 8;
  int threads = 1;
  std::chrono::milliseconds hold{1};
  std::chrono::milliseconds duration{4000};
  std::string queue = "on";
};

void add_contended_options(CLI::App& sub, contended_options& opts);
bench_report run_contended(const contended_options& opts, const connection_options& conn);

}  // namespace rlock::cli
