// redis_cluster: a private Redis Cluster for one test: masters that split the 16384 slots
// evenly, each with its replicas, all on free loopback ports (redis_server with cluster = true).
//
// Guarantees:
//  - The constructor returns only once every node reports cluster_state:ok, knows every other
//    node, and every replica's link to its master is up; otherwise it throws std::runtime_error
//    with the first node's CLUSTER NODES. Bounded by about 30 s.
//  - cluster-node-timeout is `node_timeout` (short, so that a failover takes about a second or
//    two); nodes are killed with the object, as redis_server's.
//  - owner_of() asks the nodes themselves (the node that answers a key's EXISTS without a
//    redirection), so it stays right after a failover or a slot migration.
//  - Not thread-safe, except that the const accessors may be used from several threads.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "support/redis_server.hpp"
#include "support/temp_dir.hpp"
#include "support/tls_certs.hpp"

namespace rlock::test {

struct cluster_options {
  int masters = 3;
  int replicas_per_master = 0;
  std::chrono::milliseconds node_timeout{1000};
  // TLS nodes (tls-port only) whose bus and replication links are TLS too (tls-cluster yes),
  // with certificates of one CA (tls()).
  bool tls = false;
};

class redis_cluster {
 public:
  explicit redis_cluster(cluster_options options = {});

  /// Every node: the masters first (in slot order), then the replicas (master 0's first).
  const std::vector<std::unique_ptr<redis_server>>& nodes() const { return nodes_; }
  /// The i-th initial master (slots i * 16384 / masters up to the next one's first, exclusive).
  redis_server& master(std::size_t i) const { return *nodes_.at(i); }
  /// The r-th replica of initial master m.
  redis_server& replica(std::size_t m, std::size_t r) const;
  /// A node's URL, to seed a client with.
  std::string seed_url() const { return nodes_.front()->url(); }
  /// The node that serves `key`'s slot now (throws std::runtime_error if none does).
  redis_server& owner_of(const std::string& key) const;
  /// The node id of a node (CLUSTER MYID).
  static std::string id_of(const redis_server& node);
  /// True when every running node reports cluster_state:ok.
  bool all_ok() const;
  /// The nodes' certificates (cluster_options::tls); throws std::logic_error otherwise.
  const tls_files& tls() const;

 private:
  cluster_options options_;
  temp_dir certs_{"rlock-cluster-tls"};
  tls_files tls_{};
  std::vector<std::unique_ptr<redis_server>> nodes_;
};

/// Names "<prefix><i>" for i = 0, 1, ... until `count` of them have slots that `node` serves.
std::vector<std::string> names_served_by(const redis_cluster& cluster, const redis_server& node,
                                         const std::string& prefix, std::size_t count);

}  // namespace rlock::test
