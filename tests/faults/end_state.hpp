// end_state: what a scenario leaves behind on the lock server.
//
//  - idle renewals: EVALSHA/EVAL calls (INFO commandstats) over two renewal periods while every
//    worker is idle but still connected. Nothing holds or waits, so any call is a renewal or a
//    queue refresh that outlived its lock (Redisson #7272).
//  - keys, once every client has exited: the lock key, rlock_queue:{name} and
//    rlock_queue_live:{name} must be gone; one that still exists counts as left behind if it has
//    no TTL, or if it is still there after its TTL (bounded wait). Unlock latches
//    (redisson_unlock_latch:*) are kept ~20 s by design: they only need a TTL. Any other key
//    is unexpected.
//  - channels: PUBSUB NUMSUB of redisson_lock__channel:{name} and of every per-process
//    rlock_handoff:{name}:<client uuid>, and
//    PUBSUB CHANNELS, once every client has exited (the server is given up to 3 s to notice).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "support/redis_server.hpp"

namespace rlock::faults {

struct end_state {
  long long idle_renewals = -1;  // -1: not measured
  std::vector<std::string> keys_left{};
  std::vector<std::string> keys_lingering{};  // still there at the end, then expired by TTL
  std::vector<std::string> latches_without_ttl{};
  long long latches = 0;
  std::vector<std::string> unexpected_keys{};
  long long subscribers = -1;  // NUMSUB of the lock's two channels
  std::vector<std::string> channels_left{};

  /// Everything above that is a leak, as text (empty: nothing left behind).
  std::vector<std::string> leaks() const;
};

/// Script calls (EVALSHA + EVAL) the server has run so far.
long long script_calls(const test::redis_server& server);

/// Fills keys_*, latches*, unexpected_keys, subscribers and channels_left. Call after every
/// client of the lock server has exited. With `fenced`, the lock's fencing token counter
/// (redisson_lock_token:{name}: no TTL, never deleted, as Redisson's) is expected, not a leak.
void check_leftovers(const test::redis_server& server, const std::string& name,
                     std::chrono::milliseconds longest_ttl, bool fenced, end_state& out);

}  // namespace rlock::faults
