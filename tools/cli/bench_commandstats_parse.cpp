// The pure part of bench_commandstats.hpp: no rlock library, so that the hiredis-only benches
// (bench/handoff_floor.cpp) read commandstats the same way.
#include <sstream>

#include "bench_commandstats.hpp"

namespace rlock::cli {
namespace {

long long count_of(const command_counts& c, const std::string& name) {
  const auto it = c.find(name);
  return it == c.end() ? 0 : it->second;
}

}  // namespace

command_counts parse_commandstats(std::string_view info, commandstats_field field) {
  command_counts out;
  std::istringstream in{std::string(info)};
  const std::string prefix = "cmdstat_";
  const std::string key = field == commandstats_field::calls ? "calls=" : "usec=";
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with(prefix)) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    // A whole field name: first in the value part or after a comma, never the tail of another
    // name (rejected_calls=, failed_calls=).
    std::size_t at = colon + 1;
    while (at != std::string::npos && line.compare(at, key.size(), key) != 0) {
      at = line.find(',', at);
      if (at != std::string::npos) ++at;
    }
    if (at == std::string::npos) continue;
    try {
      out[line.substr(prefix.size(), colon - prefix.size())] =
          std::stoll(line.substr(at + key.size()));
    } catch (const std::exception&) {
      // not a number: not a line we understand
    }
  }
  return out;
}

command_counts command_delta(const command_counts& before, const command_counts& after) {
  command_counts out;
  for (const auto& [name, calls] : after) {
    const long long d = calls - count_of(before, name);
    if (d > 0) out[name] = d;
  }
  return out;
}

command_counts commandstats_delta(std::string_view before, std::string_view after,
                                  commandstats_field field) {
  return command_delta(parse_commandstats(before, field), parse_commandstats(after, field));
}

long long client_requests(const command_counts& delta) {
  long long n = 0;
  for (const char* name :
       {"evalsha", "eval", "subscribe", "unsubscribe", "ssubscribe", "sunsubscribe", "ping",
        "hello", "auth", "select", "client|setname", "client|info", "client|kill", "script|load"}) {
    n += count_of(delta, name);
  }
  return n;
}

long long scripts_run(const command_counts& delta) {
  return count_of(delta, "evalsha") + count_of(delta, "eval");
}

}  // namespace rlock::cli
