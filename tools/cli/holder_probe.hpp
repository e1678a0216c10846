// holder_probe.hpp: who holds a lock and its TTL (or how many permits of a permit-expirable
// semaphore are taken), refreshed in the background for the status line of `rlock exec` while
// it waits.
//
// Guarantees: refresh() sends HGETALL and PTTL of the key (a semaphore: GET of it and ZCARD of
// "{key}:timeout") without blocking, and only if the previous pair has been answered, so at most
// two requests are ever in flight whatever the refresh rate. describe() never blocks: it renders
// the last answers. Results that arrive after the probe is destroyed are dropped safely (shared
// state). refresh() and describe() are for one thread; the completion handlers may run on the
// client's I/O threads, and so may `on_answer` (called after each HGETALL answer, outside the
// probe's lock; it must outlive the requests).
#pragma once

#include <functional>
#include <memory>
#include <rlock/client.hpp>
#include <string>

namespace rlock::cli {

class holder_probe {
 public:
  /// What the key is: a lock's hash, or the count of a permit-expirable semaphore.
  enum class target { lock, permits };

  holder_probe(rlock::client& client, std::string key, std::function<void()> on_answer = {},
               target what = target::lock);

  void refresh();
  /// The last answer showed a hash without Redisson's lock fields (an application's hash);
  /// never for permits.
  bool not_a_lock() const;
  /// The first HGETALL (GET) has completed (answered or failed).
  bool settled() const;
  /// e.g. "ttl 27.1s, held by 5b0d2f1e...:1", "free"; permits: "2 taken, 0 free"; or "" before
  /// the first answer.
  std::string describe() const;

 private:
  struct state;
  void refresh_permits();
  rlock::client& client_;
  std::string key_;
  target what_;
  std::shared_ptr<state> state_;
};

}  // namespace rlock::cli
