// wait_until_replicas_acknowledge: waits until a master's replicas acknowledge its stream, so
// that a WAIT sent now is answered by them (tests of config::replica_sync).
#pragma once

#include <chrono>
#include <string>

#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace rlock::test {

/// Waits until `master` has `replicas` replicas online that have acknowledged a write made
/// since they connected (a replica is sent the stream, and so asked for acknowledgements, only
/// after its first acknowledgement, which it sends within a second of loading; a resumed
/// replica's take a moment too). False if not within `limit`. External state: there is no event
/// to wait on.
inline bool wait_until_replicas_acknowledge(const redis_server& master,
                                            std::chrono::milliseconds limit, int replicas = 1) {
  const auto number_after = [](const std::string& text, const std::string& field,
                               std::size_t from = 0) {
    const auto at = text.find(field, from);
    return at == std::string::npos ? -1LL : std::stoll(text.substr(at + field.size()));
  };
  return wait_until(
      [&] {
        const std::string info = master.cli({"INFO", "replication"});
        const long long written = number_after(info, "master_repl_offset:");
        if (written <= 0) {
          // Nothing in the stream yet to be acknowledged (writes made before a replica
          // connected are not counted).
          (void)master.cli({"SET", "replica-acks-probe", "1"});
          return false;
        }
        // One line per replica: "slave<i>:ip=...,port=...,state=online,offset=<n>,lag=...".
        int acknowledged = 0;
        for (auto at = info.find("\nslave"); at != std::string::npos;
             at = info.find("\nslave", at + 1)) {
          const auto end = info.find('\n', at + 1);
          const std::string line = info.substr(at + 1, end - at - 1);
          if (line.find("state=online") == std::string::npos) continue;
          if (number_after(line, ",offset=") >= written) ++acknowledged;
        }
        return acknowledged >= replicas;
      },
      limit, std::chrono::milliseconds(20));
}

}  // namespace rlock::test
