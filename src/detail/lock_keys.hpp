// Redisson's key and channel names for a lock (protocol reference §0.1, §1.1).
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

namespace rlock::detail {

/// prefixName(prefix, n): "prefix:n" if n already has a hash tag, else "prefix:{n}", with room
/// for `extra` more characters (one allocation for a key built on from here).
inline std::string prefix_name(std::string_view prefix, std::string_view n, std::size_t extra = 0) {
  const bool tagged = n.find('{') != std::string_view::npos;
  std::string out;
  out.reserve(prefix.size() + n.size() + (tagged ? 1 : 3) + extra);
  out += prefix;
  if (tagged) {
    out += ':';
    out += n;
  } else {
    out += ":{";
    out += n;
    out += '}';
  }
  return out;
}

/// The pub/sub channel of a reentrant lock: redisson_lock__channel:{<name>}.
inline std::string lock_channel(std::string_view raw_name) {
  return prefix_name("redisson_lock__channel", raw_name);
}

/// prefix_name(prefix, n) + ":" + suffix, in one allocation.
inline std::string prefix_name_with(std::string_view prefix, std::string_view n,
                                    std::string_view suffix) {
  std::string out = prefix_name(prefix, n, 1 + suffix.size());
  out += ':';
  out += suffix;
  return out;
}

/// The unlock latch: redisson_unlock_latch:{<name>}:<32 hex request id>.
inline std::string unlock_latch(std::string_view raw_name, std::string_view request_id) {
  return prefix_name_with("redisson_unlock_latch", raw_name, request_id);
}

/// The fencing token counter of a lock (RFencedLock): redisson_lock_token:{<name>}.
inline std::string token_key(std::string_view raw_name) {
  return prefix_name("redisson_lock_token", raw_name);
}

/// rlock's wait queue of a lock (queued hand-off): rlock_queue:{<name>}. The queued scripts
/// name the queue's other key, the waiters' liveness rlock_queue_live:{<name>}, and the
/// hand-off channels' prefix (handoff_channel) after it, as prefix_name does (queue_prelude.lua's
/// queue_sibling), instead of taking them as arguments.
inline std::string queue_key(std::string_view raw_name) {
  return prefix_name("rlock_queue", raw_name);
}

/// The prefix of the hand-off channels of a lock: rlock_handoff:{<name>} (room for `extra` more).
inline std::string handoff_channel(std::string_view raw_name, std::size_t extra = 0) {
  return prefix_name("rlock_handoff", raw_name, extra);
}

/// The channel on which a holder hands the lock to a waiter of one process (client id):
/// rlock_handoff:{<name>}:<client uuid>. Only that process is woken.
inline std::string process_handoff_channel(std::string_view raw_name, std::string_view client_id) {
  std::string out = handoff_channel(raw_name, 1 + client_id.size());
  out += ':';
  out += client_id;
  return out;
}

/// A fair lock's queue (Redisson's RFairLock): redisson_lock_queue:{<name>}, a list of owners.
inline std::string fair_queue_key(std::string_view raw_name) {
  return prefix_name("redisson_lock_queue", raw_name);
}

/// A fair lock's eviction times: redisson_lock_timeout:{<name>}, owner -> epoch ms.
inline std::string fair_timeout_key(std::string_view raw_name) {
  return prefix_name("redisson_lock_timeout", raw_name);
}

/// The channel of one fair lock waiter: redisson_lock__channel:{<name>}:<owner field>.
inline std::string fair_waiter_channel(std::string_view raw_name, std::string_view owner) {
  return prefix_name_with("redisson_lock__channel", raw_name, owner);
}

/// The owner field: <client uuid>:<owner id>.
inline std::string owner_field(std::string_view client_id, std::uint64_t owner_id) {
  char digits[20];  // the most a 64-bit number has
  const auto end = std::to_chars(std::begin(digits), std::end(digits), owner_id).ptr;
  std::string out;
  out.reserve(client_id.size() + 1 + static_cast<std::size_t>(end - digits));
  out += client_id;
  out += ':';
  out.append(digits, end);
  return out;
}

/// 16 random bytes as 32 lowercase hex characters (Redisson's request id).
std::string random_request_id();

}  // namespace rlock::detail
