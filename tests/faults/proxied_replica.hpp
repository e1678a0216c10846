// A master and a replica that replicates through a fault_proxy, for tests of what a client
// asking for replica acknowledgement (config::replica_sync) does when the replication stream
// stops at a given write (fault_proxy::hang_on).
#pragma once

#include <chrono>
#include <rlock/config.hpp>
#include <string>

#include "faults/fault_proxy.hpp"
#include "support/fast_config.hpp"
#include "support/redis_server.hpp"
#include "support/server_monitor.hpp"

namespace rlock::faults {

struct proxied_replica {
  test::redis_server master{
      test::server_options{.extra_args = {"--repl-diskless-sync-delay", "0"}}};
  fault_proxy proxy{master.port()};
  test::redis_server replica{test::server_options{
      .extra_args = {"--replicaof", "127.0.0.1", std::to_string(proxy.port())}}};

  /// A client of the master that waits up to 300 ms for the replica's acknowledgement, and
  /// tries `tries` times (config::replica_sync_tries).
  config client_config(int tries) const {
    using namespace std::chrono_literals;
    config cfg = test::fast_config(master.url());
    cfg.replica_sync = 1;
    cfg.replica_sync_timeout = 300ms;
    cfg.replica_sync_tries = tries;
    return cfg;
  }
};

/// A script run by a client (EVALSHA or EVAL, not a command inside a script).
inline bool client_script(const test::monitored& m) {
  return !m.from_script && !m.args.empty() && (m.args[0] == "EVALSHA" || m.args[0] == "EVAL");
}

}  // namespace rlock::faults
