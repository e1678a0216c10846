// connections_settled(server, name, n): true once `n` connections named `name` are listed by
// the server (CLIENT LIST), each with PING as its last command and its replies written out
// (obl=0 oll=0). A client's setup ends with a PING, so a connection still in its setup (which
// under load may finish late) is not counted. Tests that drop "the next reply" through a fault
// proxy wait for this first, so that the reply dropped is not a setup reply.
#pragma once

#include <algorithm>
#include <string_view>

#include "support/client_list.hpp"
#include "support/redis_server.hpp"

namespace rlock::faults {

inline bool connections_settled(const test::redis_server& server, std::string_view name, int n) {
  const auto clients = test::client_list(server, name);
  const auto settled = std::count_if(clients.begin(), clients.end(), [](const auto& c) {
    return c.at("cmd") == "ping" && c.at("obl") == "0" && c.at("oll") == "0";
  });
  return settled == n;
}

}  // namespace rlock::faults
