// A master and one replica of it, for the tests of replica acknowledgement (config::replica_sync).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common.hpp"
#include "support/replica_acks.hpp"

namespace rlock::test {

/// A master and one replica of it (a full sync at once: no diskless-sync delay).
struct replicated_pair {
  std::unique_ptr<redis_server> master = std::make_unique<redis_server>(
      server_options{.extra_args = {"--repl-diskless-sync-delay", "0"}});
  std::unique_ptr<redis_server> replica = std::make_unique<redis_server>(
      server_options{.extra_args = {"--replicaof", "127.0.0.1", std::to_string(master->port())}});

  bool wait_until_synced() const { return wait_until_replicas_acknowledge(*master, 20s); }

  /// A client of the master asking for `replicas` acknowledgements within `sync_timeout` (by
  /// default long enough for a loaded machine: the tests that expect a shortfall set it short).
  config client_config(int replicas, std::chrono::milliseconds sync_timeout = 2000ms) const {
    config c = config_for(*master);
    c.replica_sync = replicas;
    c.replica_sync_timeout = sync_timeout;
    return c;
  }
};

/// A client config for `server`, which has no replica, asking for one within 100 ms.
inline config asking_a_lone_server(const redis_server& server) {
  config cfg = config_for(server);
  cfg.replica_sync = 1;
  cfg.replica_sync_timeout = 100ms;
  return cfg;
}

/// True when the permit-expirable semaphore `name`, whose one permit was taken and undone, has
/// it back: the count is 1 and no permit is leased.
inline bool expirable_permit_given_back(const redis_server& server, const std::string& name) {
  return server.cli({"GET", name}) == "1" &&
         server.cli({"EXISTS", "{" + name + "}:timeout"}) == "0";
}

}  // namespace rlock::test
