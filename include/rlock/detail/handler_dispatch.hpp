// Internal to the public headers: how a completion reaches the user's handler.
#pragma once

#include <asio/associated_cancellation_slot.hpp>
#include <asio/associated_executor.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/cancellation_type.hpp>
#include <asio/dispatch.hpp>
#include <asio/execution/context.hpp>
#include <asio/execution_context.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/query.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stop_token>
#include <system_error>
#include <type_traits>
#include <utility>

#include "rlock/detail/fallback_executor.hpp"
#include "rlock/detail/fork_epoch.hpp"

namespace rlock::detail {

/// Whether the client's io_context still takes handlers: open until client::shutdown() has
/// ended the client's threads (core::shutdown closes it, then runs what is left in the queue).
/// An io_context service, so that any executor over that io_context finds it through its
/// execution context. Whoever posts there from outside its threads holds the shared lock from
/// the check to the post, so a handler is either posted before the close (and run: by the
/// client's threads, or by the drain after the close) or handed to the fallback context after
/// it. io_context::stopped() cannot tell this: when the last handler of an io_context ends,
/// its work count reaches 0 a moment before it marks itself stopped, and a handler posted in
/// that moment (found "not stopped") would never run.
/// In a fork() child of the process that made the gate (the client makes it with its
/// io_context) the gate is closed too: the child has none of the client's threads.
class io_gate : public asio::execution_context::service {
 public:
  // Asio's service key; its constructor is empty and cannot throw.
  inline static asio::execution_context::id id;  // NOLINT(cert-err58-cpp)

  explicit io_gate(asio::execution_context& ctx)
      : asio::execution_context::service(ctx), epoch_(fork_epoch()) {}

  /// The shared lock to hold from open() to the post.
  std::shared_lock<std::shared_mutex> hold() { return std::shared_lock(mu_); }
  /// Whether handlers may still be posted; `held` is hold()'s lock.
  bool open(const std::shared_lock<std::shared_mutex>& held) const {
    (void)held;
    return !closed_ && fork_epoch() == epoch_;
  }
  /// From now on, nothing is posted through this gate (waits for posts under way).
  void close() {
    std::lock_guard lk(mu_);
    closed_ = true;
  }

 private:
  void shutdown() override {}

  std::shared_mutex mu_;
  bool closed_ = false;
  std::uint64_t epoch_;  // fork_epoch() of the process that made it
};

/// Hands `f` (a handler bound to its arguments) to `ex`, the handler's associated executor;
/// `own` is the client's executor, the default. A handler that would run on the client's
/// io_context after its threads have ended (client::shutdown(): its io_gate is closed) would
/// never run, and whoever waits for it would wait for ever: it runs on the fallback context
/// instead. That holds for any executor over the client's io_context (a strand of it, an
/// any_io_executor holding it), found by its execution context. Any other executor is the
/// user's, and its own rules apply.
/// `work` (the handler's work guard on `ex`) is released once `f` is handed over; in the
/// second case before, as nothing runs on that io_context any more: once `f` has run, its
/// caller may destroy the client, and with it the io_context the guard refers to.
template <class Executor, class Work, class F>
void dispatch_handler(const Executor& ex, const asio::io_context::executor_type& own, Work& work,
                      F&& f) {
  if constexpr (asio::can_query_v<const Executor&, asio::execution::context_t>) {
    const asio::execution_context& ctx = asio::query(ex, asio::execution::context);
    // On a thread running the io_context, it cannot be closed under the handler.
    if (&ctx == &own.context() && !own.running_in_this_thread()) {
      auto& gate = asio::use_service<io_gate>(own.context());
      auto held = gate.hold();
      if (gate.open(held)) {
        asio::dispatch(ex, std::forward<F>(f));  // from outside its threads: a post
        held.unlock();
        work.reset();
        return;
      }
      held.unlock();
      work.reset();
      asio::post(fallback_executor(), std::forward<F>(f));
      return;
    }
  }
  asio::dispatch(ex, std::forward<F>(f));
  work.reset();
}

/// A completion handler as the callback an operation completes with: it runs on the handler's
/// associated executor (default `own`, the client's) through dispatch_handler, whose context a
/// work guard keeps busy until the handler has been handed over (as Asio's own operations do,
/// so the caller's io_context cannot be destroyed while the client posts into it). The
/// handler's cancellation slot is cleared first: the operation is over.
template <class T, class Handler>
std::function<void(std::error_code, T)> wrap_completion(const asio::io_context::executor_type& own,
                                                        Handler handler) {
  auto ex = asio::get_associated_executor(handler, own);
  auto work = std::make_shared<asio::executor_work_guard<decltype(ex)>>(ex);
  auto h = std::make_shared<Handler>(std::move(handler));
  return [h, ex, own, work](std::error_code ec, T v) {
    dispatch_handler(ex, own, *work, [h, ec, v]() mutable {
      asio::get_associated_cancellation_slot(*h).clear();
      (*h)(ec, v);
    });
  };
}

/// As wrap_completion, for a handler that takes the code only.
template <class Handler>
std::function<void(std::error_code)> wrap_void_completion(
    const asio::io_context::executor_type& own, Handler handler) {
  auto ex = asio::get_associated_executor(handler, own);
  auto work = std::make_shared<asio::executor_work_guard<decltype(ex)>>(ex);
  auto h = std::make_shared<Handler>(std::move(handler));
  return [h, ex, own, work](std::error_code ec) {
    dispatch_handler(ex, own, *work, [h, ec]() mutable {
      asio::get_associated_cancellation_slot(*h).clear();
      (*h)(ec);
    });
  };
}

/// The stop token of an operation whose handler may have a connected cancellation slot: a
/// terminal, partial or total cancellation requests the stop. An empty token (never stopped)
/// without a connected slot. The slot owns the stop source until it is cleared (the operation
/// completed) or given another handler.
template <class Handler>
std::stop_token stop_token_of(Handler& handler) {
  auto slot = asio::get_associated_cancellation_slot(handler);
  if constexpr (std::is_same_v<decltype(slot), asio::cancellation_slot>) {
    if (slot.is_connected()) {
      auto source = std::make_shared<std::stop_source>();
      slot.assign([source](asio::cancellation_type type) {
        using ct = asio::cancellation_type;
        if ((type & (ct::terminal | ct::partial | ct::total)) != ct::none) source->request_stop();
      });
      return source->get_token();
    }
  }
  return {};
}

}  // namespace rlock::detail
