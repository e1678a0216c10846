// demo_command.hpp: `rlock demo [URL]`: N worker processes contend for one lock; a live
// timeline of who holds it, then a checked summary (the README's main job).
//
// Guarantees:
//  - Without a URL (argument, --url or $RLOCK_URL) it runs against a throwaway redis-server on
//    a free loopback port, stopped afterwards; with one, it uses a fresh random lock name and
//    deletes its two keys at the end.
//  - Bounded: workers stop contending at --duration; workers still running `grace` later
//    (hold + 2 x --timeout + 2 s) are killed; SIGINT/SIGTERM stop the workers and end the demo
//    with 130/143 after a partial summary. No worker outlives the demo.
//  - Output is bounded: a header, the first 8 hand-offs, at most ~20 interval lines, and the
//    summary, which includes one machine-readable line
//        acquisitions=A counter=C overlaps=O incomplete=I
//    and ends with "result: ok" or "result: FAILED (...)".
//  - Exit 0 only if counter == acquisitions, no overlap, no incomplete section and every
//    worker succeeded; 1 otherwise; 64 usage; 69 server unavailable.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <string>

#include "connection_options.hpp"

namespace rlock::cli {

struct demo_options {
  int workers = 4;
  std::chrono::milliseconds duration{5000};
  std::chrono::milliseconds hold{2};
  std::string url_argument{};
  connection_options connection{};
};

CLI::App* add_demo_command(CLI::App& app, demo_options& opts);
int run_demo(const demo_options& opts);

}  // namespace rlock::cli
