// bench_options.hpp: the options every `rlock bench` scenario shares: --json, the connection
// options (connection_options.hpp), --queue on|off where the lock mode matters, and counts.
//
// Guarantees: --queue accepts exactly "on" (config::lock_queue, queued hand-off: the default)
// or "off" (Redisson's plain waiting); anything else is a usage error (64); so is a count
// option (add_count_option) outside 1..max or not a whole number.
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
/// `--name N`: a whole number from 1 to `max`, shown with its default.
CLI::Option* add_count_option(CLI::App& sub, const std::string& name, int& target,
                              const std::string& description, const std::string& type_name,
                              int max);
/// "queued" or "plain", as the JSON "mode" field says.
const char* queue_mode_name(const std::string& queue);

}  // namespace rlock::cli
