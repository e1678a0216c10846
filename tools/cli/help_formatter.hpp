// help_formatter.hpp: CLI11's help layout with a hand-written usage line per command
// ("rlock exec NAME [OPTIONS] -- CMD [ARGS...]" says more than CLI11's generated one).
//
// Guarantees: commands without a registered usage line get CLI11's default. Option
// descriptions are wrapped at word boundaries so that help lines fit in `width` columns
// (CLI11 2.1 does not wrap). Install it on the top-level app before adding subcommands (they
// copy the parent's formatter when created).
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>

namespace rlock::cli {

class help_formatter : public CLI::Formatter {
 public:
  void set_usage(const CLI::App* app, std::string usage) { usage_[app] = std::move(usage); }
  std::string make_usage(const CLI::App* app, std::string name) const override;
  std::string make_option_desc(const CLI::Option* opt) const override;

  static constexpr std::size_t width = 80;

 private:
  std::map<const CLI::App*, std::string> usage_;
};

}  // namespace rlock::cli
