// connections_settled(server, name, n): true once `n` connections named `name` are listed by
// the server (CLIENT LIST), each with PING as its last command and its replies written out
// (obl=0 oll=0). A client's setup ends with a PING, so a connection still in its setup (which
// under load may finish late) is not counted. Tests that drop "the next reply" through a fault
// proxy wait for this first, so that the reply dropped is not a setup reply.
#pragma once

#include <string>
#include <string_view>

#include "support/redis_server.hpp"

namespace rlock::faults {

inline bool connections_settled(const test::redis_server& server, std::string_view name, int n) {
  const std::string list = server.cli({"CLIENT", "LIST"});
  const std::string tag = " name=" + std::string(name) + " ";
  int settled = 0;
  for (std::size_t at = list.find(tag); at != std::string::npos; at = list.find(tag, at + 1)) {
    const std::string line = list.substr(at, list.find('\n', at) - at);
    if (line.find(" cmd=ping ") != std::string::npos &&
        line.find(" obl=0 oll=0 ") != std::string::npos) {
      ++settled;
    }
  }
  return settled == n;
}

}  // namespace rlock::faults
