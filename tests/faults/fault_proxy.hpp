// fault_proxy: a TCP relay on loopback between clients and one upstream server, with faults
// switched on and off while connections are open.
//
// Modes (set_mode applies to every open connection and to new ones):
//   pass          relay both directions as they come.
//   delay         hold every chunk read (either direction) for `delay` before relaying it;
//                 order is kept. Chunks queued under delay keep their due time after the mode
//                 changes back to pass.
//   drop_replies  relay client->server, but when the server answers, swallow the reply and close
//                 both sides: the command was applied, the client never learns it.
//   drop_one_reply  as drop_replies for the next reply only, then pass again by itself (before
//                 any later byte is relayed): a retry after that lost reply gets through.
//   hang          relay nothing, close nothing, accept nothing new (the kernel still completes
//                 handshakes into the listen backlog): a stalled network. Back in pass or delay,
//                 whatever was held is relayed late.
//   reset         close every connection, and every new one at once, with RST (SO_LINGER 0).
//   freeze_existing  the connections open when this mode is set relay nothing either way and
//                 are not closed (their bytes wait in order, as under hang); connections
//                 accepted later relay both ways. In any other mode the frozen ones relay again,
//                 late: one connection's commands stalled in the network while the client's
//                 next connection gets through.
//
// Guarantees:
//  - Listens on 127.0.0.1 on a kernel-chosen port; each accepted client gets its own upstream
//    connection (a refused upstream closes the client at once).
//  - One internal thread does all socket work with poll(); set_mode() returns once that thread
//    has applied the mode (so after set_mode(reset) no old connection survives). Member
//    functions may be called from any thread.
//  - The destructor closes every socket and joins the thread; it never throws.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace rlock::faults {

enum class proxy_mode { pass, delay, drop_replies, drop_one_reply, hang, reset, freeze_existing };

std::string_view to_string(proxy_mode m);

struct proxy_stats {
  std::uint64_t accepted = 0;         // client connections accepted
  std::uint64_t open = 0;             // connections currently relayed
  std::uint64_t bytes_up = 0;         // client -> server, relayed
  std::uint64_t bytes_down = 0;       // server -> client, relayed
  std::uint64_t replies_dropped = 0;  // connections closed after swallowing a reply
  std::uint64_t resets = 0;           // connections closed with RST
};

class fault_proxy {
 public:
  /// Starts relaying to upstream_host:upstream_port. Throws std::runtime_error if it cannot
  /// listen.
  explicit fault_proxy(std::uint16_t upstream_port, std::string upstream_host = "127.0.0.1");
  ~fault_proxy();
  fault_proxy(const fault_proxy&) = delete;
  fault_proxy& operator=(const fault_proxy&) = delete;

  std::uint16_t port() const;
  /// "redis://127.0.0.1:<port>"
  std::string url() const;

  /// Switches mode (delay is used by proxy_mode::delay only).
  void set_mode(proxy_mode mode, std::chrono::milliseconds delay = std::chrono::milliseconds(0));
  /// pass until a chunk read from a server holds `pattern`; from that chunk on (it is held too)
  /// as hang, until the next set_mode(). For a replica's link to its master: the replication
  /// stream stops at a given write, and the replica acknowledges nothing after it. The pattern
  /// is looked for in each chunk as read (loopback: a command the server propagates at once
  /// arrives whole).
  void hang_on(std::string pattern);
  proxy_mode mode() const;
  proxy_stats stats() const;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace rlock::faults
