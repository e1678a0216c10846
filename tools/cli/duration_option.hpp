// duration_option.hpp: CLI11 options that take a duration (see duration.hpp for the syntax).
//
// Guarantees: a malformed value makes CLI11's parse fail with "--NAME: <reason>" (a usage error,
// exit 64); a valid one is stored into `target` during parsing. `positive` also rejects zero.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <optional>
#include <string>

namespace rlock::cli {

enum class duration_bound { zero_allowed, positive };

/// Adds `--name DUR`; the value is stored into `target`.
CLI::Option* add_duration_option(CLI::App& app, const std::string& name,
                                 std::optional<std::chrono::milliseconds>& target,
                                 const std::string& description,
                                 duration_bound bound = duration_bound::zero_allowed);

/// Same for a duration with a default: `target` keeps its value unless the option is given.
CLI::Option* add_duration_option(CLI::App& app, const std::string& name,
                                 std::chrono::milliseconds& target, const std::string& description,
                                 duration_bound bound = duration_bound::zero_allowed);

}  // namespace rlock::cli
