// Redis Cluster's key space, without I/O: the slot of a key, the slot map a node reports
// (CLUSTER SLOTS), and the redirections it answers with (MOVED, ASK).
//
// A key's slot is CRC16-CCITT (XMODEM) of the key modulo 16384, or of its hash tag: the bytes
// between the first '{' and the first '}' after it, when there is at least one byte between
// them. Every key and channel of one rlock (and Redisson) object carries the object's name as
// its hash tag or is the name itself (lock_keys.hpp's prefix_name), so they share one slot.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rlock/reply.hpp"

namespace rlock::detail {

inline constexpr std::uint16_t cluster_slot_count = 16384;

/// The slot of `key` (0..16383), hash tags honoured.
std::uint16_t key_slot(std::string_view key);

/// Whether the keys and channels derived from object name `name` (prefix_name, lock_keys.hpp)
/// all fall in the name's slot: true for a name without '{', or with a hash tag (a '{', later a
/// '}', something between). A name such as "a{}b" or "a{b" has none: each derived key is then
/// hashed whole, and a script over them fails with CROSSSLOT in a cluster.
bool keeps_one_slot(std::string_view name);

/// A node's address as the cluster announces it.
struct cluster_endpoint {
  std::string host;
  std::uint16_t port = 0;
  /// "host:port" (IPv6 hosts in brackets): the node's name in the client's table.
  std::string name() const;
  friend bool operator==(const cluster_endpoint&, const cluster_endpoint&) = default;
};

/// One range of slots and the master that serves it.
struct slot_range {
  std::uint16_t first = 0;
  std::uint16_t last = 0;
  cluster_endpoint master;
};

/// The masters of a CLUSTER SLOTS reply, range by range. `asked_host` stands in for a master
/// announced with an empty or unknown ("?") host (cluster-preferred-endpoint-type
/// unknown-endpoint: the node that answered). nullopt, with the reason in *why, for a reply of
/// any other shape, a slot out of range, a range whose first slot is after its last, or no
/// range at all (a node that serves no slot yet knows no map worth using).
std::optional<std::vector<slot_range>> parse_cluster_slots(reply_view r,
                                                           std::string_view asked_host,
                                                           std::string* why = nullptr);

/// A MOVED or ASK error reply: "MOVED 3999 127.0.0.1:6381", "ASK 3999 [::1]:6381" or "ASK 3999
/// ::1:6381". An empty host ("MOVED 3999 :6381") means the node that answered: `asked_host`.
struct redirect {
  bool ask = false;  ///< ASK: this command only, after ASKING; MOVED: the slot has moved
  std::uint16_t slot = 0;
  cluster_endpoint to;
};
std::optional<redirect> parse_redirect(std::string_view text, std::string_view asked_host);

}  // namespace rlock::detail
