#include "support/redis_cluster.hpp"

#include <stdexcept>

#include "support/wait.hpp"

namespace rlock::test {
namespace {

constexpr int slots = 16384;

std::size_t line_count(const std::string& text) {
  std::size_t n = 0;
  for (const char c : text) n += c == '\n' ? 1 : 0;
  if (!text.empty() && text.back() != '\n') ++n;
  return n;
}

}  // namespace

redis_cluster::redis_cluster(cluster_options options) : options_(options) {
  const int total = options_.masters * (1 + options_.replicas_per_master);
  server_options so;
  so.cluster = true;
  if (options_.tls) {
    tls_ = generate_test_certificates(certs_.path());
    so.tls = true;
    so.shared_tls = tls_;
  }
  // A replica's first sync starts at once (Redis 7 waits 5 s for more replicas by default).
  so.extra_args = {"--cluster-node-timeout", std::to_string(options_.node_timeout.count()),
                   "--repl-diskless-sync-delay", "0"};
  for (int i = 0; i < total; ++i) nodes_.push_back(std::make_unique<redis_server>(so));
  for (int m = 0; m < options_.masters; ++m) {
    const int first = m * slots / options_.masters;
    const int last = (m + 1) * slots / options_.masters - 1;
    master(m).cli({"CLUSTER", "ADDSLOTSRANGE", std::to_string(first), std::to_string(last)});
  }
  for (std::size_t i = 1; i < nodes_.size(); ++i) {
    nodes_.front()->cli({"CLUSTER", "MEET", "127.0.0.1", std::to_string(nodes_[i]->port()),
                         std::to_string(nodes_[i]->cluster_bus_port())});
  }
  const auto fail = [&](const std::string& why) {
    throw std::runtime_error("redis_cluster: " + why + "\n" +
                             nodes_.front()->cli({"CLUSTER", "NODES"}));
  };
  const auto all_known = [&] {
    for (const auto& n : nodes_) {
      if (line_count(n->cli({"CLUSTER", "NODES"})) != nodes_.size()) return false;
    }
    return true;
  };
  if (!wait_until(all_known, std::chrono::seconds(20))) fail("nodes did not meet");
  for (int m = 0; m < options_.masters; ++m) {
    const std::string id = id_of(master(m));
    for (int r = 0; r < options_.replicas_per_master; ++r) {
      const std::string answer = replica(m, r).cli({"CLUSTER", "REPLICATE", id});
      if (answer != "OK") fail("CLUSTER REPLICATE: " + answer);
    }
  }
  const auto replicas_up = [&] {
    for (int m = 0; m < options_.masters; ++m) {
      for (int r = 0; r < options_.replicas_per_master; ++r) {
        if (replica(m, r).cli({"INFO", "replication"}).find("master_link_status:up") ==
            std::string::npos) {
          return false;
        }
      }
    }
    return true;
  };
  if (!wait_until([&] { return all_ok() && replicas_up(); }, std::chrono::seconds(20))) {
    fail("the cluster did not come up");
  }
}

const tls_files& redis_cluster::tls() const {
  if (!options_.tls) throw std::logic_error("redis_cluster::tls: not a TLS cluster");
  return tls_;
}

redis_server& redis_cluster::replica(std::size_t m, std::size_t r) const {
  const std::size_t masters = static_cast<std::size_t>(options_.masters);
  const std::size_t per = static_cast<std::size_t>(options_.replicas_per_master);
  if (m >= masters || r >= per) throw std::out_of_range("redis_cluster::replica");
  return *nodes_.at(masters + m * per + r);
}

redis_server& redis_cluster::owner_of(const std::string& key) const {
  for (const auto& n : nodes_) {
    if (!n->running() || n->paused()) continue;
    const raw_reply r = n->cli_reply({"EXISTS", key});
    if (r.is_integer()) return *n;
  }
  throw std::runtime_error("redis_cluster: no node serves " + key);
}

std::string redis_cluster::id_of(const redis_server& node) {
  return node.cli({"CLUSTER", "MYID"});
}

bool redis_cluster::all_ok() const {
  for (const auto& n : nodes_) {
    if (!n->running() || n->paused()) continue;
    if (n->cli({"CLUSTER", "INFO"}).find("cluster_state:ok") == std::string::npos) return false;
  }
  return true;
}

std::vector<std::string> names_served_by(const redis_cluster& cluster, const redis_server& node,
                                         const std::string& prefix, std::size_t count) {
  std::vector<std::string> out;
  for (int i = 0; out.size() < count && i < 100000; ++i) {
    std::string name = prefix + std::to_string(i);
    if (&cluster.owner_of(name) == &node) out.push_back(std::move(name));
  }
  return out;
}

}  // namespace rlock::test
