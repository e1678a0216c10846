// event_flag.hpp: a wake-up for a poll loop (eventfd) that any thread may raise, for example a
// completion handler running on an rlock::client I/O thread or a std::stop_callback.
//
// Guarantees: raise() is thread-safe, async-signal-safe and never blocks; raises before a
// clear() are coalesced. fd() becomes readable (POLLIN) after raise() until clear().
#pragma once

namespace rlock::cli {

class event_flag {
 public:
  event_flag();
  ~event_flag();
  event_flag(const event_flag&) = delete;
  event_flag& operator=(const event_flag&) = delete;

  void raise() const noexcept;
  /// Consumes pending raises; returns whether there was one.
  bool clear() const noexcept;
  int fd() const noexcept { return fd_; }

 private:
  int fd_ = -1;
};

}  // namespace rlock::cli
