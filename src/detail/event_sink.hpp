// Delivery of a client's events to config::on_event: one at a time, in order, on an I/O thread,
// never after close().
#pragma once

#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>

#include "rlock/client_event.hpp"

namespace rlock::detail {

class event_sink : public std::enable_shared_from_this<event_sink> {
 public:
  using handler = std::function<void(const client_event&)>;

  /// Delivers on `io`'s threads, through a strand of its own (several I/O threads deliver one
  /// event at a time, in the order of emit()).
  event_sink(asio::io_context& io, handler h);

  /// True if events are delivered (a handler was given): lets a caller skip making one.
  bool wanted() const { return static_cast<bool>(handler_); }
  /// Queues `e` for the handler. Thread-safe; never blocks and never runs the handler on the
  /// calling thread. A no-op without a handler or after close().
  void emit(client_event e);
  /// Delivers the events queued so far, waiting for them at most `drain` (a listener that
  /// blocks, against the rules, or I/O threads busy otherwise are not waited for longer), then
  /// delivers nothing more: events not delivered by then, and events emitted after, are
  /// dropped. An event being delivered on another thread then finishes (shutdown joins the
  /// I/O threads after). Call with a `drain` of 0 on an I/O thread, which must not wait for
  /// itself. Thread-safe; the first call decides.
  void close(std::chrono::milliseconds drain);

 private:
  asio::strand<asio::io_context::executor_type> strand_;
  handler handler_;
  std::atomic<bool> closed_{false};
};

}  // namespace rlock::detail
