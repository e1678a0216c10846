// demo_worker.hpp: the hidden `rlock demo-worker` command: one contending process of
// `rlock demo`, started by it (never by hand).
//
// Protocol: see demo_events.hpp. The worker connects, reports "ready" on file descriptor 3,
// reads "go END_NS" from stdin, then until END_NS: acquires the lock (waiting at most until
// END_NS), reports "acquired", does a non-atomic GET then SET+1 of "<name>:counter" with
// --hold of simulated work between them, reports "released" and unlocks. Finally "done COUNT".
//
// Guarantees: every loop is bounded by END_NS (plus one critical section and its requests);
// the worker dies with its parent (PR_SET_PDEATHSIG) and exits at once if stdin closes before
// "go". Exit 0 after "done"; otherwise an "error" event and a non-zero status.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "connection_options.hpp"

namespace rlock::cli {

inline constexpr int demo_events_fd = 3;

struct demo_worker_options {
  int id = 0;
  std::string name{};
  std::chrono::milliseconds hold{2};
  long long parent = 0;
  connection_options connection{};
};

/// Reads "go END_NS\n" from stdin (at most 64 bytes); std::nullopt on EOF or anything else.
/// Also used by `rlock bench-worker`.
std::optional<long long> read_go();

CLI::App* add_demo_worker_command(CLI::App& app, demo_worker_options& opts);
int run_demo_worker(const demo_worker_options& opts);

}  // namespace rlock::cli
