// The cluster example: locks on a Redis Cluster. The client learns from one node which master
// serves each slot, and sends every lock's scripts to the master of its name's slot; waiters
// are woken through sharded pub/sub (Redis 7), as Redisson's are by default.
//
//   rlock_cluster_example [redis://host:port ...]   (nodes of an existing cluster)
//
// With no URL it starts a throwaway cluster of three masters on free loopback ports.
#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <rlock/client.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "throwaway_server.hpp"  // tools/

using namespace std::chrono_literals;

namespace {

/// Three masters splitting the 16384 slots, introduced to each other; returns once every one
/// says the cluster is ok (at most 20 s).
std::vector<std::unique_ptr<rlock::examples::throwaway_server>> start_cluster() {
  std::vector<std::unique_ptr<rlock::examples::throwaway_server>> nodes;
  std::vector<rlock::client> admins;
  for (int i = 0; i < 3; ++i) {
    nodes.push_back(std::make_unique<rlock::examples::throwaway_server>(true));
    rlock::config one;
    one.address = nodes.back()->url();  // a single node, for its CLUSTER commands
    admins.emplace_back(one);
    admins.back().execute({"CLUSTER", "ADDSLOTSRANGE", std::to_string(i * 16384 / 3),
                           std::to_string((i + 1) * 16384 / 3 - 1)});
  }
  for (int i = 1; i < 3; ++i) {
    admins[0].execute({"CLUSTER", "MEET", "127.0.0.1", std::to_string(nodes[i]->port()),
                       std::to_string(nodes[i]->bus_port())});
  }
  const auto until = std::chrono::steady_clock::now() + 20s;
  for (auto& admin : admins) {
    while (std::string(admin.execute({"CLUSTER", "INFO"}).str()).find("cluster_state:ok") ==
           std::string::npos) {
      if (std::chrono::steady_clock::now() > until) throw std::runtime_error("cluster not ok");
      std::this_thread::sleep_for(50ms);  // the nodes gossip; nothing to wait on
    }
  }
  return nodes;
}

}  // namespace

int main(int argc, char** argv) try {
  std::vector<std::unique_ptr<rlock::examples::throwaway_server>> nodes;
  rlock::config cfg;
  for (int i = 1; i < argc; ++i) cfg.cluster_addresses.emplace_back(argv[i]);
  if (cfg.cluster_addresses.empty()) {
    nodes = start_cluster();
    cfg.cluster_addresses = {nodes.front()->url()};  // one seed is enough
  }
  rlock::client client(cfg);

  // Each lock lives on the master of its name's slot, with Redisson's layout there.
  for (const std::string name : {"invoice-1", "invoice-2", "invoice-3", "invoice-4"}) {
    rlock::reentrant_lock l = client.get_lock(name);
    l.lock();
    const long long slot = client.execute({"CLUSTER", "KEYSLOT", name}).integer();
    std::cout << name << ": held (slot " << slot << ")\n";
    l.unlock();
  }

  // Threads contend for one lock; each release hands it to the next waiter. The increment is
  // a read then a write: without the lock, updates would be lost.
  rlock::reentrant_lock shared = client.get_lock("ledger");
  std::atomic<int> counter{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        std::lock_guard hold(shared);  // lock() ... unlock()
        const int seen = counter.load();
        counter.store(seen + 1);
      }
    });
  }
  for (auto& t : workers) t.join();
  std::cout << "4 threads x 25 increments under one lock: " << counter.load() << "\n";
  return counter.load() == 100 ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "cluster example: " << e.what() << "\n";
  return 1;
}
