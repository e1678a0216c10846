// loopback_listener: a TCP listener on 127.0.0.1 that plays a broken server, for tests of how a
// client copes with one (no Redis behind it).
//
// Behaviours (fixed at construction):
//   close_at_once  accept every connection and close it at once, before reading anything.
//   silent         accept, read and discard everything, never answer, never close.
//   never_read     accept and then neither read nor answer nor close: the socket's receive
//                  buffer (kept small) fills, then the client's send buffer, and its writes stall.
//   never_accept   a listener whose accept queue is full (a connection of its own fills it) and
//                  is never drained: the kernel drops new connections' SYNs, so their connect()
//                  neither completes nor fails (a host that drops packets, on loopback).
//   answers_http   accept, and answer the first bytes read with an HTTP 400 response, then
//                  close: a web server or HTTP proxy on the port, not Redis.
//
// Guarantees:
//  - Listens on a kernel-chosen port of 127.0.0.1 before the constructor returns (throws
//    std::runtime_error if it cannot); connections are accepted from then on.
//  - One internal thread does all socket work with poll(); the counters and wait_for_accepted()
//    may be used from any thread.
//  - The destructor closes every socket (the listener's and every accepted one) and joins the
//    thread; it never throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace rlock::test {

enum class listener_behaviour { close_at_once, silent, never_read, never_accept, answers_http };

class loopback_listener {
 public:
  explicit loopback_listener(listener_behaviour behaviour);
  ~loopback_listener();
  loopback_listener(const loopback_listener&) = delete;
  loopback_listener& operator=(const loopback_listener&) = delete;
  loopback_listener(loopback_listener&&) = delete;
  loopback_listener& operator=(loopback_listener&&) = delete;

  std::uint16_t port() const;
  /// "redis://127.0.0.1:<port>"
  std::string url() const;

  /// Connections accepted so far (0 for never_accept).
  std::uint64_t accepted() const;
  /// Bytes read (and discarded) so far; stays 0 for close_at_once and never_read.
  std::uint64_t bytes_read() const;
  /// Blocks until at least `n` connections were accepted or `limit` passed; true if they were.
  bool wait_for_accepted(std::uint64_t n, std::chrono::milliseconds limit) const;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace rlock::test
