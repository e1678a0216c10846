// bench_worker.hpp: the hidden `rlock bench-worker` command: one contending process of
// `rlock bench contended`, started by it (never by hand).
//
// Protocol: demo_events.hpp, on file descriptor 3. The worker connects, reports "ready I"
// (I = --id, the process index), reads "go END_NS" from stdin and computes the common start
// instant START_NS = END_NS - --duration. Each of its --threads threads (worker id
// W = I x threads + thread) waits until START_NS, then until END_NS: acquires the lock
// (waiting at most until END_NS), records acquired_ns, does a non-atomic GET then SET+1 of
// "<name>:counter", holds until --hold after the SET (sleep_until on steady_clock), records
// released_ns and unlocks. A try_lock that ends with errc::timeout once END_NS has passed (its
// budget ran out with a request in flight) counts as not acquired; any other error fails. Records
// stay in memory during the run; afterwards every thread's sections are reported as
// "acquired"/"released" pairs, then "done W COUNT".
//
// Guarantees: every line is written in writes of whole lines of at most PIPE_BUF bytes, so the
// lines of different worker processes sharing the pipe never interleave. Bounded by END_NS plus
// one critical section and its requests. The worker dies with its parent (PR_SET_PDEATHSIG).
// Exit 0 when every thread finished; otherwise an "error" event and a non-zero status.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <string>

#include "connection_options.hpp"

namespace rlock::cli {

struct bench_worker_options {
  int id = 0;
  std::string name{};
  long long parent = 0;
  int threads = 1;
  std::chrono::milliseconds hold{1};
  std::chrono::milliseconds duration{4000};
  std::string queue = "on";
  connection_options connection{};
};

CLI::App* add_bench_worker_command(CLI::App& app, bench_worker_options& opts);
int run_bench_worker(const bench_worker_options& opts);

}  // namespace rlock::cli
