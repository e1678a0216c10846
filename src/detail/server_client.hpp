// Which connection of the server a request was written on, and how to close it there.
//
// A request whose outcome is unknown (written, then its connection hung or broke) may still be
// in the network or in the server's socket buffer, and run later: after its resend, and after
// whatever the caller did once the resend had answered. A lock acquire that runs that late takes
// a lock its owner has already released (an orphan hold until the lease ends). rlock closes the
// old connection on the server (CLIENT KILL) in the same write as the resend, ahead of it: what
// the old connection still carried then never runs, and what it carried that already ran, the
// resend finds applied (scripts/acquire's ARGV[3]).
//
// The server's id of a connection is its CLIENT INFO "id" and "addr" (the connection's address
// as the server sees it). Both are matched, so that a kill sent to another server than the one
// the id came from (a restart reuses ids) closes nothing.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::detail {

struct server_client {
  std::string id;    ///< CLIENT INFO's id=, digits
  std::string addr;  ///< CLIENT INFO's addr=, "ip:port" as the server sees the connection
  friend bool operator==(const server_client&, const server_client&) = default;
};

/// The id and addr of a CLIENT INFO reply ("id=7 addr=127.0.0.1:50000 laddr=... "); nullopt if
/// either is missing or malformed (an id that is not digits, an addr with spaces).
std::optional<server_client> parse_client_info(std::string_view info);

/// The arguments of "CLIENT KILL ID <id> ADDR <addr> SKIPME yes" (views into `c`).
std::array<std::string_view, 8> kill_args(const server_client& c);

/// Appends the RESP encoding of kill_args(c) to `out`.
void encode_kill(const server_client& c, std::string& out);

/// Appends each of `from` that `to` does not hold yet, in order.
void add_unique(std::vector<server_client>& to, std::vector<server_client> from);

}  // namespace rlock::detail
