// bench_options.hpp: the options every `rlock bench` scenario shares: --json, the connection
// options (connection_options.hpp) and, where the lock mode matters, --queue on|off.
//
// Guarantees: --queue accepts exactly "on" (config::lock_queue, queued hand-off: the default)
// or "off" (Redisson's plain waiting); anything else is a usage error (64).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "connection_options.hpp"

namespace rlock::cli {

struct bench_common_options {
  bool json = false;
  connection_options connection{};
};

void add_bench_common_options(CLI::App& sub, bench_common_options& opts);
void add_queue_option(CLI::App& sub, std::string& queue);
/// "queued" or "plain", as the JSON "mode" field says.
const char* queue_mode_name(const std::string& queue);

}  // namespace rlock::cli
