#include "bench_options.hpp"

namespace rlock::cli {

void add_bench_common_options(CLI::App& sub, bench_common_options& opts) {
  sub.add_flag("--json", opts.json, "Print one JSON object on one line instead of text");
  add_connection_options(sub, opts.connection);
}

void add_queue_option(CLI::App& sub, std::string& queue) {
  sub.add_option("--queue", queue,
                 "Queued hand-off (config::lock_queue): on, or off for Redisson's plain waiting")
      ->type_name("on|off")
      ->check(CLI::IsMember({"on", "off"}).description(""))
      ->capture_default_str();
}

CLI::Option* add_count_option(CLI::App& sub, const std::string& name, int& target,
                              const std::string& description, const std::string& type_name,
                              int max) {
  return sub.add_option(name, target, description)
      ->type_name(type_name)
      ->check(CLI::Range(1, max).description(""))
      ->capture_default_str();
}

const char* queue_mode_name(const std::string& queue) {
  return queue == "off" ? "plain" : "queued";
}

}  // namespace rlock::cli
