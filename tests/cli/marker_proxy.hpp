// marker_proxy: a TCP forwarder, written in Python, between an rlock process and a Redis port
// that runs a hook once, just before it forwards the first client data containing a marker.
//
// Guarantees: start_marker_proxy() returns once the forwarder listens on a free loopback port
// (it writes the port into a FIFO: an event, not a poll), or fails the test (ASSERT) and
// returns std::nullopt. The marker is matched case-insensitively against each chunk the client
// sends. `hook` is Python source defining `def hook(rport, arg)`, called with the Redis port
// and `hook_arg` on the forwarder's thread before that chunk is forwarded; nothing is forwarded
// in either direction on that connection meanwhile. The forwarder is killed with the returned
// child_process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace rlock::test {

struct marker_proxy {
  child_process process;
  std::string port;  ///< where rlock connects: redis://127.0.0.1:<port>
};

std::optional<marker_proxy> start_marker_proxy(const temp_dir& dir, std::uint16_t redis_port,
                                               const std::string& marker, const std::string& hook,
                                               const std::string& hook_arg);

}  // namespace rlock::test
