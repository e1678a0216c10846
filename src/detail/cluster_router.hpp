// Cluster mode: which node serves a key, learnt from the cluster itself.
//
// The router keeps a node (command connections and subscribers, node.hpp) per master and a
// table of the 16384 slots. It learns the table by CLUSTER SLOTS: at start from the seed
// addresses, then every scan_interval, and soon (coalesced) after a MOVED reply or a failed
// connection. A scan asks the known masters first, on their own connections, then each seed on
// a short-lived connection of its own, each within `timeout`, until one answers with a map.
//
// Guarantees:
//   - node_for() never blocks on the network and always returns a node: the slot's master, or,
//     before any map is known (or for a slot no master serves), the first seed's node. A wrong
//     guess costs one MOVED, which core follows (and which corrects the table at once);
//   - nodes are never destroyed before close(): a reference from node_for() stays valid;
//   - a failover: when the master of a range is gone from the map and the range's new master
//     has no node yet (the promoted replica), the old node is moved there (node::master_switched)
//     rather than a new one started, so its subscriptions follow the range and their listeners
//     hear `resubscribed`; requests written to the dead master fail as on any lost connection;
//   - a node that serves no slot any more (and was not moved) is kept, idle, until close();
//     its subscriptions stay where they are (classic pub/sub reaches every node of a cluster);
//   - thread-safe.
#pragma once

#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "detail/cluster_slots.hpp"
#include "detail/connection.hpp"
#include "detail/event_sink.hpp"
#include "detail/node.hpp"
#include "rlock/config.hpp"
#include "rlock/connection_status.hpp"

namespace rlock::detail {

class cluster_router : public std::enable_shared_from_this<cluster_router> {
 public:
  struct options {
    /// Every node's connections: credentials, TLS, timing, scripts. The address's host and
    /// port are each node's; its scheme the seeds'.
    connection_options node;
    std::vector<server_address> seeds;
    int pool_size = 1;
    int sub_pool_size = 1;
    /// Each node's connections of their own for requests followed by WAIT (node.hpp).
    int synced_pool_size = 0;
    std::chrono::milliseconds scan_interval{5000};
    /// Bounds each node's answer to CLUSTER SLOTS.
    std::chrono::milliseconds timeout{3000};
    /// Called (on an I/O thread, no lock held) after a scan changed a slot's master, and once
    /// when the first scan has settled (settled()), with how many masters serve slots now.
    std::function<void(std::size_t masters)> on_change;
    /// Given to every node's subscribers (subscriber::set_moved_handler).
    moved_handler on_moved;
    /// Pub/sub kind: config::cluster_sharded_subscription.
    sharded_subscription_mode sharded = sharded_subscription_mode::automatic;
    /// Given to every node (its link events); null: none.
    std::shared_ptr<event_sink> events;
  };

  cluster_router(asio::io_context& io, options o);
  /// Starts the first seed's node and the first scan.
  void start();
  /// Closes every node and stops scanning. Idempotent.
  void close();

  /// The node that serves `key`'s slot (see the guarantees).
  node& node_for(std::string_view key);
  /// The node at `e`, started if it is new (a MOVED or ASK target).
  node& node_at(const cluster_endpoint& e);
  /// The host of the node a request went to (for a redirect that names no host).
  std::string host_of(const node& n) const;
  /// A MOVED reply: the slot is served by `r.to` from now on; a scan follows soon.
  void moved(const redirect& r);
  /// Asks for a scan soon (coalesced with one under way).
  void scan_soon();

  /// Connected when a map is known and every master in it has a ready command connection;
  /// otherwise the first master's (or the seeds') failure, or the slots no master serves.
  connection_status status() const;
  /// Channels confirmed on the subscribers of every node now.
  std::size_t channels() const;
  /// The first scan has ended (with a map and, in automatic mode, the servers' answer to
  /// PUBSUB SHARDNUMSUB; or with no seed reachable): sharded() holds from then on, unless
  /// that scan failed and a later one learns otherwise.
  bool settled() const { return settled_.load(std::memory_order_acquire); }
  /// Pub/sub is sharded (SSUBSCRIBE on the master of a channel's slot, SPUBLISH in scripts).
  bool sharded() const { return sharded_.load(std::memory_order_acquire); }

 private:
  struct scan_state;
  node& node_at_locked(const cluster_endpoint& e);
  node& start_node_locked(const cluster_endpoint& e);
  void run_scan();
  void ask_next(const std::shared_ptr<scan_state>& s);
  void on_answer(const std::shared_ptr<scan_state>& s, const std::string& host, exec_result res);
  /// True if some slot's master changed.
  bool apply(const std::vector<slot_range>& map);
  void scan_finished(bool ok, std::error_code ec, std::string detail);
  /// Automatic mode, after a map: asks a master whether it knows sharded pub/sub.
  void probe_sharded(bool changed);
  void settle();
  /// Calls opts_.on_change with the number of masters that serve slots.
  void report_change();
  void arm_locked(std::chrono::milliseconds after);

  asio::io_context& io_;
  options opts_;
  mutable std::shared_mutex mu_;
  /// By endpoint name ("host:port"); a moved node is renamed.
  std::map<std::string, std::unique_ptr<node>> nodes_;
  std::unordered_map<const node*, cluster_endpoint> where_;
  std::vector<node*> slots_;  // cluster_slot_count entries; null: no master known
  node* fallback_ = nullptr;  // the first seed's node
  bool mapped_ = false;
  // Scanning, under scan_mu_.
  mutable std::mutex scan_mu_;
  asio::steady_timer timer_;
  bool scanning_ = false;
  bool again_ = false;
  bool closed_ = false;
  std::error_code scan_error_;
  std::string scan_detail_;
  std::atomic<bool> settled_{false};
  std::atomic<bool> sharded_{false};
  bool sharded_known_ = false;  // under scan_mu_
};

}  // namespace rlock::detail
