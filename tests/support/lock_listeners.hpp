// lock_listeners: how many subscribers wait for a lock's release, counted by the server.
#pragma once

#include <string>

#include "support/redis_server.hpp"

namespace rlock::test {

/// Subscribers of a lock's Redisson channel redisson_lock__channel:{name} plus those of rlock's
/// per-process hand-off channels rlock_handoff:{name}:<client uuid> (PUBSUB NUMSUB). A waiting
/// process is counted once it has subscribed to what it waits on, which it does before its
/// last re-check: once the count has grown, an unlock reaches the waiter. `name` is a plain
/// lock name without a hash tag.
inline long long lock_listeners(const redis_server& server, const std::string& name) {
  long long n = server.cli_reply({"PUBSUB", "NUMSUB", "redisson_lock__channel:{" + name + "}"})
                    .elements.at(1)
                    .integer;
  const auto handoff = server.cli_reply({"PUBSUB", "CHANNELS", "rlock_handoff:{" + name + "}:*"});
  for (const auto& c : handoff.elements) {
    n += server.cli_reply({"PUBSUB", "NUMSUB", c.str}).elements.at(1).integer;
  }
  return n;
}

}  // namespace rlock::test
