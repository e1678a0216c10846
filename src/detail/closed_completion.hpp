// How work refused because the client is closed is completed.
//
// After client::shutdown() the client's I/O threads are joined and its io_context runs nothing
// more, so a completion posted there would never run and a blocking caller waiting for it would
// hang. Refusals of a closed client therefore run on Asio's system executor: never inline in the
// call that was refused (a caller may hold its own locks, or be inside a handler), and always.
#pragma once

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/system_executor.hpp>
#include <atomic>
#include <memory>
#include <type_traits>
#include <utility>

namespace rlock::detail {

/// Runs `f` soon on a thread of Asio's system thread pool. For completions of work that a closed
/// client, connection or service refuses (errc::shutdown); they only touch the request's own
/// state, and every completion of this library is safe on any thread.
template <class F>
void complete_closed(F&& f) {
  asio::post(asio::system_executor(), std::forward<F>(f));
}

/// Posts `f` to `io`, or completes it as refused work once `io`'s threads have ended (it is
/// stopped: after client::shutdown()). For completions that must not run inline, such as
/// rejecting invalid arguments of an asynchronous call. `f` runs exactly once, even when a
/// shutdown ends `io`'s threads while this call runs: a handler posted before the last thread
/// ran out of work is run by it; one posted after finds `io` stopped, and the system executor
/// runs it instead (whichever comes first wins; the other does nothing).
template <class F>
void post_or_complete_closed(asio::io_context& io, F&& f) {
  struct once {
    explicit once(F&& fn) : f(std::forward<F>(fn)) {}
    std::decay_t<F> f;
    std::atomic<bool> taken{false};
  };
  auto state = std::make_shared<once>(std::forward<F>(f));
  auto run = [state] {
    if (!state->taken.exchange(true)) std::move(state->f)();
  };
  asio::post(io, run);
  // Checked after the post, not before: a check before could find `io` running, and its last
  // thread could then end (out of work) before the handler was queued, which nothing would run.
  if (io.stopped()) complete_closed(run);
}

}  // namespace rlock::detail
