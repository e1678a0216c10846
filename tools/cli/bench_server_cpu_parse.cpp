// The pure half of bench_server_cpu.hpp: the INFO cpu parser, without the client, so that tools
// built on hiredis alone (bench/bare_blocking.cpp) read the server's CPU the same way.
#include <map>
#include <sstream>
#include <string>

#include "bench_server_cpu.hpp"

namespace rlock::cli {

double parse_server_cpu_seconds(std::string_view info) {
  std::map<std::string, double, std::less<>> fields;
  std::istringstream in{std::string(info)};
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto colon = line.find(':');
    if (colon == std::string::npos || !line.starts_with("used_cpu_")) continue;
    try {
      fields[line.substr(0, colon)] = std::stod(line.substr(colon + 1));
    } catch (const std::exception&) {
      // not a number: not a field we understand
    }
  }
  const auto sum = [&fields](const char* user, const char* sys) {
    const auto u = fields.find(user);
    const auto s = fields.find(sys);
    return u != fields.end() && s != fields.end() ? u->second + s->second : -1.0;
  };
  const double main_thread = sum("used_cpu_user_main_thread", "used_cpu_sys_main_thread");
  return main_thread >= 0 ? main_thread : sum("used_cpu_user", "used_cpu_sys");
}

}  // namespace rlock::cli
