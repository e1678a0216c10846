// Unlock latches that no attempt can read any more, waiting to be deleted by the next unlock
// script this process sends for the same lock.
//
// Redisson's unlock script sets a latch key per unlock (protocol reference §1.3) so that a resent
// unlock returns the first attempt's result instead of releasing twice. The latch lives for the
// whole retry window (about 16-20 s): at 50,000 unlocks/s a million of them would sit in the
// server, and creating and expiring them is about a quarter of the server's work for a lock and
// unlock. Once an unlock has been answered on its only attempt, nothing will ever read its latch:
// Redisson then sends a DEL; rlock passes the latch to the next unlock script of the same lock
// (same slot, no extra request), which deletes it with the lock's own DEL on a final release.
// A latch this table cannot keep (a full table: many distinct lock names) goes to spent_keys,
// which deletes it within moments, in a DEL of up to 64 keys.
// (Acquires carry none: their fast path then runs no more commands than Redisson's.) A latch
// whose unlock was retried keeps its TTL: the earlier attempt may still be on its way to the
// server.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rlock::detail {

class spent_latches {
 public:
  /// At most `max_locks` locks with latches waiting, each with at most `max_per_lock`. Beyond
  /// that a latch is not kept here: put() returns it, for the client to delete another way
  /// (spent_keys.hpp).
  explicit spent_latches(std::size_t max_locks = 1024, std::size_t max_per_lock = 4)
      : max_locks_(max_locks), max_per_lock_(max_per_lock) {}

  /// Records `latch` of lock `raw_name`, to be deleted by the next unlock script for that lock.
  /// Returns the latches that are not kept: `latch` itself when its lock has max_per_lock
  /// already, or another lock's, dropped whole to make room for a new lock in a full table.
  /// Call only for an unlock answered on its only attempt. Thread-safe.
  [[nodiscard]] std::vector<std::string> put(const std::string& raw_name, std::string latch) {
    std::vector<std::string> dropped;
    std::lock_guard lk(mu_);
    auto it = by_lock_.find(raw_name);
    if (it == by_lock_.end()) {
      if (by_lock_.size() >= max_locks_ && !by_lock_.empty()) {
        dropped = std::move(by_lock_.begin()->second);
        by_lock_.erase(by_lock_.begin());
      }
      it = by_lock_.emplace(raw_name, std::vector<std::string>{}).first;
    }
    if (it->second.size() < max_per_lock_) {
      it->second.push_back(std::move(latch));
    } else {
      dropped.push_back(std::move(latch));
    }
    return dropped;
  }

  /// Takes the latches recorded for `raw_name` (empty if none): the caller's script deletes
  /// them. If that script fails, they simply expire. Thread-safe.
  std::vector<std::string> take(const std::string& raw_name) {
    std::lock_guard lk(mu_);
    auto it = by_lock_.find(raw_name);
    if (it == by_lock_.end()) return {};
    std::vector<std::string> out = std::move(it->second);
    by_lock_.erase(it);
    return out;
  }

  /// Takes every recorded latch, by lock (at shutdown: the client deletes them itself).
  std::unordered_map<std::string, std::vector<std::string>> take_all() {
    std::lock_guard lk(mu_);
    return std::exchange(by_lock_, {});
  }
  /// Locks with latches waiting (for tests).
  std::size_t size() const {
    std::lock_guard lk(mu_);
    return by_lock_.size();
  }

 private:
  mutable std::mutex mu_;
  std::size_t max_locks_;
  std::size_t max_per_lock_;
  std::unordered_map<std::string, std::vector<std::string>> by_lock_;
};

}  // namespace rlock::detail
