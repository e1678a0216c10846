// Decoding of the lock scripts' replies, one function per script contract (src/lua/*.lua).
//
// Each function accepts any reply a server (or a corrupted stream) could produce. What the
// script's contract does not allow becomes errc::script_error; nothing but the exact
// "acquired" reply (nil) is ever read as acquired. Fuzzed by tests/fuzz/replies_fuzz.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include "detail/acquire_fsm.hpp"
#include "detail/exec_result.hpp"

namespace rlock::detail {

/// lock_acquire / lock_acquire_queued: nil (acquired), an integer PTTL (>= -1), or
/// {PTTL, server ms} (queued). `server_ms` is set for the latter, else -1.
acquire_fsm::reply decode_acquire(const exec_result& r, long long& server_ms);

enum class unlock_result { released, still_held, not_owner };
struct unlock_outcome {
  std::error_code ec;
  unlock_result result = unlock_result::not_owner;
};
/// lock_unlock / lock_unlock_queued: 1 (released), 0 (still held), nil (not the owner).
unlock_outcome decode_unlock(const exec_result& r);

/// lock_force_unlock: 1 (a lock existed) or 0.
std::optional<bool> decode_force_unlock(const exec_result& r, std::error_code& ec);

/// lock_renew: an array of exactly `keys` integers, each 0 (lost) or 1 (renewed).
std::optional<std::vector<bool>> decode_renew(const exec_result& r, std::size_t keys);

/// lock_queue_refresh: {server ms, s1..sn} with si in {0, 1, 2, 3}.
struct refresh_outcome {
  long long server_ms = 0;
  /// 0: dropped as stale, 1: holds the lock, 2: still queued, 3: still queued behind a holder
  /// that does not hand over (the waiter needs the Redisson channel)
  std::vector<int> status;
};
std::optional<refresh_outcome> decode_refresh(const exec_result& r, std::size_t waiters);

/// Not a script's: a counter the lock keeps as a string, read with HGET (a hold count) or GET
/// (a fencing token). The request's error as it is; 0 when absent (nil); errc::wrong_type for
/// anything but a whole decimal integer (any bytes a peer wrote there).
std::pair<std::error_code, long long> decode_counter(const exec_result& r);

}  // namespace rlock::detail
