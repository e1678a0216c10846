// sentinel_group: a master, its replica and a Sentinel monitoring them, all redis-server
// processes of the test that makes it (the Sentinel tests: sentinel_test.cpp, and the failover
// under load, sentinel_failover_load_test.cpp).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "common.hpp"
#include "support/replica_acks.hpp"
#include "support/wait.hpp"

namespace rlock::test {

/// A master, a replica of it, and one Sentinel monitoring the master as "mymaster" (quorum 1,
/// down after 1 s: a killed master is failed over within a few seconds).
struct sentinel_group {
  std::unique_ptr<redis_server> master = std::make_unique<redis_server>();
  std::unique_ptr<redis_server> replica = std::make_unique<redis_server>(
      server_options{.extra_args = {"--replicaof", "127.0.0.1", std::to_string(master->port())}});
  std::unique_ptr<redis_server> sentinel = std::make_unique<redis_server>(server_options{
      .extra_args = {"--sentinel", "monitor", "mymaster", "127.0.0.1",
                     std::to_string(master->port()), "1", "--sentinel", "down-after-milliseconds",
                     "mymaster", "1000", "--sentinel", "failover-timeout", "mymaster", "10000"}});

  /// The master's port as the Sentinel names it.
  std::string named_port() const {
    const raw_reply r = sentinel->cli_reply({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"});
    return r.is_array() && r.elements.size() == 2 ? r.elements[1].str : std::string();
  }

  /// Waits until the Sentinel knows the replica and the replica has synchronised with the master
  /// (a failover needs both). External state: there is no event to wait on.
  bool wait_until_replica_known() const {
    const std::string port = std::to_string(replica->port());
    return wait_until(
        [&] {
          const std::string info = replica->cli({"INFO", "replication"});
          const std::string known = sentinel->cli({"SENTINEL", "REPLICAS", "mymaster"});
          return info.find("master_link_status:up") != std::string::npos &&
                 known.find(port) != std::string::npos;
        },
        20s, 50ms);
  }

  /// wait_until_replica_known(), and then until the replica acknowledges the master's stream,
  /// so that a WAIT sent now is answered by it (tests of config::replica_sync).
  bool wait_until_replica_acknowledges() const {
    return wait_until_replica_known() && wait_until_replicas_acknowledge(*master, 20s);
  }

  /// The Sentinel has announced a new master ("+switch-master", in its log as it publishes it).
  /// External state: there is no event to wait on.
  bool announced_switch() const {
    return sentinel->log_tail(std::size_t{1} << 20).find("+switch-master mymaster") !=
           std::string::npos;
  }

  config client_config(std::vector<std::string> sentinels = {}) const {
    config c = fast_config("redis://127.0.0.1:1");  // unused in Sentinel mode
    c.master_name = "mymaster";
    c.sentinel_addresses =
        sentinels.empty() ? std::vector<std::string>{sentinel->url()} : std::move(sentinels);
    return c;
  }
};

}  // namespace rlock::test
