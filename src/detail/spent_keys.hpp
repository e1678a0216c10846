// spent_keys: request keys that no attempt can read any more, deleted by the client.
//
// rlock's requests that must count once each carry a key of their own, in which their script
// stores the result (Redisson's unlock latch, and rlock's semaphore, read-write lock and
// countdown latch request keys: once_request.hpp). Such a key lives as long as a late attempt
// of its request could still reach the server (its TTL, about 16-20 s at the default timeouts
// and retries). Once the request was answered on its only attempt, nothing will read the key
// again: left to its TTL, a client taking 5,000 locks/s on distinct names keeps about 100,000
// of them on the server (and a soak of 80,000 lock cycles and 11,000 semaphore cycles on
// distinct names left 116,000 keys there). Redisson sends a DEL after each answered unlock.
//
// spent_keys batches them instead: a key is deleted at most `delay` after it was put, by one DEL
// per batch of up to `batch_keys` keys (in Cluster mode one DEL per slot, whose keys share it),
// fire and forget: a DEL that fails leaves its keys to their TTL, as before. Unlock latches of a
// lock this process unlocks again go with that unlock's script instead (spent_latches.hpp), so
// a lock taken over and over costs no DEL. At close() the client deletes what is pending.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace rlock::detail {

class core;

/// `keys` as the DEL commands that delete them: at most `max_keys` keys each, and with
/// `by_slot` (Cluster mode) only keys of one slot in each; in the order given within a slot.
std::vector<std::vector<std::string>> del_batches(std::vector<std::string> keys, bool by_slot,
                                                  std::size_t max_keys);

class spent_keys {
 public:
  /// Keys of one DEL at most.
  static constexpr std::size_t batch_keys = 64;
  /// A key waits at most this long for its batch.
  static constexpr std::chrono::milliseconds delay{200};
  /// Keys pending at most: beyond, a key is left to its TTL (a server that does not answer).
  static constexpr std::size_t max_pending = 16384;

  /// `c` must outlive this object; its timer runs on c.io().
  explicit spent_keys(core& c);
  spent_keys(const spent_keys&) = delete;
  spent_keys& operator=(const spent_keys&) = delete;

  /// Deletes `key` soon. Thread-safe; never blocks on the network. After close(), ignored.
  void put(std::string key);
  void put(std::vector<std::string> keys);

  /// Sends the pending keys now and, unless called on one of the client's I/O threads, waits
  /// until their DELs are answered or `until`. Later puts are ignored. Idempotent.
  void close(std::chrono::steady_clock::time_point until);

 private:
  struct tally;
  void on_timer(std::error_code ec);
  /// Takes the pending keys and sends their DELs (outside mu_).
  void send(std::vector<std::string> keys, std::chrono::steady_clock::time_point deadline);

  core& core_;
  asio::steady_timer timer_;
  std::shared_ptr<tally> tally_;
  std::mutex mu_;
  std::vector<std::string> pending_;
  bool armed_ = false;
  bool closed_ = false;
};

}  // namespace rlock::detail
