#include "bench_commandstats.hpp"

#include <rlock/client.hpp>
#include <sstream>

namespace rlock::cli {
namespace {

long long count_of(const command_counts& c, const std::string& name) {
  const auto it = c.find(name);
  return it == c.end() ? 0 : it->second;
}

}  // namespace

command_counts parse_commandstats(std::string_view info) {
  command_counts out;
  std::istringstream in{std::string(info)};
  const std::string prefix = "cmdstat_";
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with(prefix)) continue;
    const auto colon = line.find(':');
    const auto calls = line.find("calls=");
    if (colon == std::string::npos || calls == std::string::npos) continue;
    try {
      out[line.substr(prefix.size(), colon - prefix.size())] = std::stoll(line.substr(calls + 6));
    } catch (const std::exception&) {
      // not a number: not a line we understand
    }
  }
  return out;
}

command_counts read_commandstats(rlock::client& c) {
  return parse_commandstats(c.execute({"INFO", "commandstats"}).str());
}

command_counts command_delta(const command_counts& before, const command_counts& after) {
  command_counts out;
  for (const auto& [name, calls] : after) {
    const long long d = calls - count_of(before, name);
    if (d > 0) out[name] = d;
  }
  return out;
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
