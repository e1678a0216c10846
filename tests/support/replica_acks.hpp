// wait_until_replicas_acknowledge: waits until a master's replicas acknowledge its stream, so
// that a WAIT sent now is answered by them (tests of config::replica_sync).
#pragma once

#include <chrono>
#include <string>

#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace rlock::test {

/// Waits until `master` has a replica online that has acknowledged a write made since it
/// connected (a replica is sent the stream, and so asked for acknowledgements, only after its
/// first acknowledgement, which it sends within a second of loading; a resumed replica's take a
/// moment too). False if not within `limit`. External state: there is no event to wait on.
inline bool wait_until_replicas_acknowledge(const redis_server& master,
                                            std::chrono::milliseconds limit) {
  const auto number_after = [](const std::string& text, const std::string& field) {
    const auto at = text.find(field);
    return at == std::string::npos ? -1LL : std::stoll(text.substr(at + field.size()));
  };
  return wait_until(
      [&] {
        const std::string info = master.cli({"INFO", "replication"});
        if (info.find("state=online") == std::string::npos) return false;
        const long long written = number_after(info, "master_repl_offset:");
        if (written <= 0) {
          // Nothing in the stream yet to be acknowledged (writes made before a replica
          // connected are not counted).
          (void)master.cli({"SET", "replica-acks-probe", "1"});
          return false;
        }
        return number_after(info, ",offset=") >= written;
      },
      limit, std::chrono::milliseconds(20));
}

}  // namespace rlock::test
