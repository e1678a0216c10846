// redisson_names.hpp: the names of the keys and channels Redisson derives from an object's key,
// used by `rlock status` to tell what kind of object a key is. All follow Redisson 4.x:
//   prefix_name(p, k) = "p:k" if k contains '{' (it has a hash tag), else "p:{k}"
//   suffix_name(k, s) = "k:s" if k contains '{', else "{k}:s"
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace rlock::cli::redisson {

std::string prefix_name(std::string_view prefix, std::string_view key);
std::string suffix_name(std::string_view key, std::string_view suffix);

/// Unlock messages of RLock, RFairLock, RFencedLock: redisson_lock__channel:{key}.
inline std::string lock_channel(std::string_view key) {
  return prefix_name("redisson_lock__channel", key);
}
/// RReadWriteLock's channel, shared by its read and write halves: redisson_rwlock:{key}.
inline std::string read_write_lock_channel(std::string_view key) {
  return prefix_name("redisson_rwlock", key);
}
/// RFairLock's queue of waiters: redisson_lock_queue:{key}.
inline std::string fair_lock_queue(std::string_view key) {
  return prefix_name("redisson_lock_queue", key);
}
/// RFencedLock's token counter: redisson_lock_token:{key}.
inline std::string fenced_lock_token(std::string_view key) {
  return prefix_name("redisson_lock_token", key);
}
/// RPermitExpirableSemaphore's timeouts: {key}:timeout.
inline std::string expirable_semaphore_timeouts(std::string_view key) {
  return suffix_name(key, "timeout");
}
/// RSemaphore's and RPermitExpirableSemaphore's channel (releases): redisson_sc:{key}.
inline std::string semaphore_channel(std::string_view key) {
  return prefix_name("redisson_sc", key);
}
/// RCountDownLatch's channel: always redisson_countdownlatch__channel__{key} (no tag rule).
inline std::string count_down_latch_channel(std::string_view key) {
  return "redisson_countdownlatch__channel__{" + std::string(key) + "}";
}

}  // namespace rlock::cli::redisson
