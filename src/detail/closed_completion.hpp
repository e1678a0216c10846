// How work refused because the client is closed is completed.
//
// After client::shutdown() the client's I/O threads are joined and its io_context runs nothing
// more, so a completion posted there would never run and a blocking caller waiting for it would
// hang. Refusals of a closed client therefore run on the library's fallback context
// (fallback_executor.hpp): never inline in the call that was refused (a caller may hold its own
// locks, or be inside a handler), and always.
#pragma once

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <utility>

#include "rlock/detail/fallback_executor.hpp"
#include "rlock/detail/handler_dispatch.hpp"

namespace rlock::detail {

/// Runs `f` soon on the library's fallback thread. For completions of work that a closed
/// client, connection or service refuses (errc::shutdown); they only touch the request's own
/// state, and every completion of this library is safe on any thread.
template <class F>
void complete_closed(F&& f) {
  asio::post(fallback_executor(), std::forward<F>(f));
}

/// Posts `f` to `io`, or completes it as refused work once the client's threads have ended
/// (`io`'s io_gate is closed: after client::shutdown()). For completions that must not run
/// inline, such as rejecting invalid arguments of an asynchronous call. `f` runs exactly once:
/// posted before the gate closes, it is run by `io`'s threads or by the drain that follows the
/// close (core::shutdown); after, on the fallback context.
template <class F>
void post_or_complete_closed(asio::io_context& io, F&& f) {
  auto& gate = asio::use_service<io_gate>(io);
  auto held = gate.hold();
  if (gate.open(held)) {
    asio::post(io, std::forward<F>(f));
    return;
  }
  held.unlock();
  complete_closed(std::forward<F>(f));
}

}  // namespace rlock::detail
