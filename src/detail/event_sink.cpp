#include "detail/event_sink.hpp"

#include <future>
#include <utility>

namespace rlock::detail {

event_sink::event_sink(asio::io_context& io, handler h)
    : strand_(asio::make_strand(io)), handler_(std::move(h)) {}

void event_sink::emit(client_event e) {
  if (!handler_ || closed_.load(std::memory_order_acquire)) return;
  asio::post(strand_, [self = shared_from_this(), e = std::move(e)] {
    if (self->closed_.load(std::memory_order_acquire)) return;
    try {
      self->handler_(e);
    } catch (...) {  // NOLINT(bugprone-empty-catch): a listener must not stop the client's I/O
    }
  });
}

void event_sink::close(std::chrono::milliseconds drain) {
  if (!handler_ || closed_.load(std::memory_order_acquire)) return;
  if (drain.count() > 0) {
    // The strand runs its handlers in order: once this one has run, so have those before it.
    auto delivered = std::make_shared<std::promise<void>>();
    std::future<void> done = delivered->get_future();
    asio::post(strand_, [delivered] { delivered->set_value(); });
    done.wait_for(drain);
  }
  closed_.store(true, std::memory_order_release);
}

}  // namespace rlock::detail
