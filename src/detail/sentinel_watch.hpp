// sentinel_watch: Sentinel mode's ear for a failover. It subscribes to "+switch-master" on
// every configured Sentinel (each through a subscriber of its own, reconnecting like any other)
// and calls back with the new address when one announces a switch of the client's master.
//
// Why: a connection checks that its server is the master only when it connects. After a manual
// failover (SENTINEL FAILOVER, or a master cut off and back) the old master stays up and takes
// writes until Sentinel demotes it, about 10 s later with default settings; locks taken there
// meanwhile are lost when it becomes a replica. Moving at the announcement closes that window
// to the time the message takes (Redisson subscribes to the same channel).
//
// Guarantees:
//   - the callback runs on an I/O thread, once per announcement per Sentinel that makes it
//     (several Sentinels announce one switch, so it must be idempotent), one at a time, and
//     never after close() has returned; it must not block or call close();
//   - a Sentinel that is down, refuses the subscription (ACL) or never announces changes
//     nothing: connections still find the master by asking the Sentinels on every connect and
//     checking ROLE, and leave a demoted one at its READONLY reply, as without the watch;
//   - an announcement missed while a Sentinel's connection was down is not replayed.
#pragma once

#include <asio.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detail/connection.hpp"

namespace rlock::detail {

class subscriber;

/// The new address in a "+switch-master" message, "<name> <old ip> <old port> <new ip>
/// <new port>", if it is about `master_name`; nullopt for another master's switch or a payload
/// of another shape.
std::optional<std::pair<std::string, std::uint16_t>> parse_switch_master(
    std::string_view payload, std::string_view master_name);

class sentinel_watch {
 public:
  using on_switch = std::function<void(const std::string& host, std::uint16_t port)>;

  /// `opts`: the client's connection options in Sentinel mode (sentinels, master_name, TLS,
  /// timeouts); `f`: called with each announced address of the master.
  sentinel_watch(asio::io_context& io, const connection_options& opts, on_switch f);
  ~sentinel_watch();
  sentinel_watch(const sentinel_watch&) = delete;
  sentinel_watch& operator=(const sentinel_watch&) = delete;

  void start();
  /// Closes the Sentinels' connections; no callback starts after it returns. Idempotent.
  void close();

 private:
  struct shared {
    std::mutex mu;
    bool closed = false;
    on_switch f;
  };
  asio::io_context& io_;
  std::string master_name_;
  std::vector<connection_options> sentinels_;
  std::vector<std::shared_ptr<subscriber>> subs_;
  std::shared_ptr<shared> shared_;
};

}  // namespace rlock::detail
