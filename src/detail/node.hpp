// The connections of a client to one Redis server: command connections and subscribers.
#pragma once

#include <asio.hpp>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "detail/connection.hpp"
#include "detail/event_sink.hpp"
#include "detail/subscriber.hpp"
#include "rlock/connection_status.hpp"

namespace rlock::detail {

/// Connections to one server.
class node {
 public:
  /// `synced_pool_size`: command connections of their own for the requests that wait for
  /// their replicas (pick_synced()); 0: none. Only those count the server's replicas
  /// (connection_options::count_replicas). `events`, if given: the node's link reports
  /// (client_event_kind::connected, disconnected, connect_failed, master_switched), judged by
  /// all its command connections together (link_events below).
  node(asio::io_context& io, const connection_options& opts, int pool_size, int sub_pool_size,
       int synced_pool_size = 0, const std::shared_ptr<event_sink>& events = nullptr);
  void start();
  void close();
  /// A command connection (round-robin over the pool).
  connection& pick();
  /// A connection for a request followed by WAIT (config::replica_sync), round-robin over the
  /// node's own pool of them, else pick(). A WAIT holds back every later request on its
  /// connection until it returns: on connections of their own, renewals and the other requests
  /// never queue behind one, and a few WAITs in flight at once are answered together.
  connection& pick_synced();
  /// The subscriber that carries `channel` (stable for a given channel).
  subscriber& subscriber_for(std::string_view channel);
  /// Moves every connection to another server (connection::master_switched): Sentinel mode's
  /// new master, or in Cluster mode the replica promoted in place of this node's dead master.
  /// Subscribers subscribe their channels again there and tell their listeners.
  void master_switched(const std::string& host, std::uint16_t port, const std::string& detail);
  /// With events: the server the connections are at, as last known (for events); else empty.
  std::string server() const;
  /// Cluster mode: subscriber::set_moved_handler on every subscriber (before start()).
  void set_moved_handler(const moved_handler& h);
  /// Connected if any command connection is ready; otherwise the first recorded failure.
  connection_status status() const;
  /// Channels confirmed on the node's subscribers now.
  std::size_t channels() const;

 private:
  class link_events;
  std::shared_ptr<link_events> link_events_;  // null without events
  std::vector<std::shared_ptr<connection>> conns_;
  std::vector<std::shared_ptr<subscriber>> subs_;
  std::vector<std::shared_ptr<connection>> synced_;  // empty without replica_sync
  std::atomic<std::size_t> next_synced_{0};
  std::atomic<std::size_t> next_{0};
};

}  // namespace rlock::detail
