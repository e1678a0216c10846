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
//
// --api async runs --threads lock/unlock chains on the asynchronous API instead of threads:
// each chain is async_lock then async_unlock on its own name and owner id, restarted from the
// unlock's completion on the client's I/O thread, so one process drives all of them (as a node
// program drives its async loops). Latency, cycles and checks are the same as with threads.
// --connections sets config::connection_pool_size for the run. --fenced takes each lock as a
// fenced lock (lock_and_get_token, or fenced_lock::async_acquire): the cycle then includes the
// token step, one request more.
//
// The server side: INFO cpu is read when the warm-up ends and after the last cycle; the JSON's
// "server" object gives the Redis main thread's busy share of that window and its CPU time per
// measured cycle (omitted when the server refuses INFO). It is empty of meaning for a server
// shared with other load.
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
  /// "blocking": --threads OS threads on the blocking API; "async": --threads chains on the
  /// asynchronous API, driven by the client's I/O thread.
  std::string api = "blocking";
  /// config::connection_pool_size: the command connections the threads or chains share.
  int connections = 1;
  /// Fenced locks: each acquire also issues a fencing token.
  bool fenced = false;
};

void add_uncontended_options(CLI::App& sub, uncontended_options& opts);
bench_report run_uncontended(const uncontended_options& opts, const connection_options& conn);

}  // namespace rlock::cli
