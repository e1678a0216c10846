// event_recorder: keeps the client_events a client delivers (config::on_event) and lets a test
// wait for one, on the delivery itself rather than by polling.
//
// Guarantees: handler() may be called on any thread; wait_for() returns as soon as a matching
// event has been recorded (also one recorded before the call), or std::nullopt after `limit`.
// The recorder must outlive every client given its handler (declare it before them).
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "rlock/client_event.hpp"

namespace rlock::test {

class event_recorder {
 public:
  using match = std::function<bool(const client_event&)>;

  /// For config::on_event.
  std::function<void(const client_event&)> handler() {
    return [this](const client_event& e) {
      std::lock_guard lk(mu_);
      events_.push_back(e);
      cv_.notify_all();
    };
  }

  /// The first recorded event for which `m` holds, waiting up to `limit` for it.
  std::optional<client_event> wait_for(const match& m, std::chrono::milliseconds limit) {
    std::unique_lock lk(mu_);
    std::optional<client_event> found;
    cv_.wait_for(lk, limit, [&] {
      for (const client_event& e : events_) {
        if (m(e)) {
          found = e;
          return true;
        }
      }
      return false;
    });
    return found;
  }
  /// wait_for() an event of `kind`.
  std::optional<client_event> wait_for(client_event_kind kind, std::chrono::milliseconds limit) {
    return wait_for([kind](const client_event& e) { return e.kind == kind; }, limit);
  }

  /// Waits up to `limit` until `n` events of `kind` have been recorded; false if they have not.
  bool wait_for_count(client_event_kind kind, std::size_t n, std::chrono::milliseconds limit) {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, limit, [&] { return count_locked(kind) >= n; });
  }

  /// The events recorded so far, in order.
  std::vector<client_event> events() const {
    std::lock_guard lk(mu_);
    return events_;
  }
  /// How many of them are of `kind`.
  std::size_t count(client_event_kind kind) const {
    std::lock_guard lk(mu_);
    return count_locked(kind);
  }
  /// How many of them `m` holds for.
  std::size_t count(const match& m) const {
    std::lock_guard lk(mu_);
    return static_cast<std::size_t>(std::count_if(events_.begin(), events_.end(), m));
  }
  /// Their kinds, in order, as text ("connected disconnected connected"), for messages.
  std::string kinds() const {
    std::lock_guard lk(mu_);
    std::string out;
    for (const client_event& e : events_) {
      if (!out.empty()) out += ' ';
      out += to_string(e.kind);
    }
    return out;
  }

 private:
  std::size_t count_locked(client_event_kind kind) const {
    std::size_t n = 0;
    for (const client_event& e : events_) n += e.kind == kind ? 1 : 0;
    return n;
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<client_event> events_;
};

}  // namespace rlock::test
