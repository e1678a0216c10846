// status_command.hpp: `rlock status NAME [--json]`: what a lock name stands for in Redis now
// (free or held, owners and hold counts, TTL, listeners on its channel, kind of object).
//
// Guarantees: read-only; exit 0 when the report was printed (free or held alike), 69 when the
// server is unavailable, other codes per exit_codes.hpp. --json prints exactly one JSON object
// on one line with the fields listed in status_json_help(), always all of them.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "connection_options.hpp"

namespace rlock::cli {

struct status_options {
  std::string name{};
  bool json = false;
  connection_options connection{};
};

CLI::App* add_status_command(CLI::App& app, status_options& opts);
int run_status(const status_options& opts);

}  // namespace rlock::cli
