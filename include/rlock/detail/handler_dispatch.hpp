// Internal to the public headers: how a completion reaches the user's handler.
#pragma once

#include <asio.hpp>
#include <type_traits>
#include <utility>

namespace rlock::detail {

/// Hands `f` (a handler bound to its arguments) to `ex`, the handler's associated executor;
/// `own` is the client's executor, the default. A handler that would run on the client's
/// io_context after its threads have ended (client::shutdown(): the io_context is stopped)
/// would never run, and whoever waits for it would wait for ever: it runs on Asio's system
/// executor instead. That holds for any executor over the client's io_context (a strand of it,
/// an any_io_executor holding it), found by its execution context. Any other executor is the
/// user's, and its own rules apply.
/// `work` (the handler's work guard on `ex`) is released once `f` is handed over; in the first
/// case before, as nothing runs on that io_context any more: once `f` has run, its caller may
/// destroy the client, and with it the io_context the guard refers to.
template <class Executor, class Work, class F>
void dispatch_handler(const Executor& ex, const asio::io_context::executor_type& own, Work& work,
                      F&& f) {
  if constexpr (asio::can_query_v<const Executor&, asio::execution::context_t>) {
    const asio::execution_context& ctx = asio::query(ex, asio::execution::context);
    if (&ctx == &own.context() && own.context().stopped()) {
      work.reset();
      asio::post(asio::system_executor(), std::forward<F>(f));
      return;
    }
  }
  asio::dispatch(ex, std::forward<F>(f));
  work.reset();
}

}  // namespace rlock::detail
