#include "detail/resolver_thread.hpp"

#include <asio.hpp>
#include <future>
#include <mutex>
#include <thread>
#include <utility>

namespace rlock::detail {

// Shared with the thread, which may outlive the resolver_thread (a resolver that never
// returned): everything the thread touches lives here.
struct resolver_thread::state {
  asio::io_context ctx;
  asio::executor_work_guard<asio::io_context::executor_type> work{ctx.get_executor()};
  std::mutex mu;  // held while a continuation runs, and by stop()
  bool stopped = false;
  std::thread thread;
  std::future<void> exited;
};

resolver_thread::resolver_thread(std::function<void()> on_start)
    : state_(std::make_shared<state>()) {
  std::promise<void> exiting;
  state_->exited = exiting.get_future();
  state_->thread = std::thread(
      [s = state_, on_start = std::move(on_start), exiting = std::move(exiting)]() mutable {
        if (on_start) on_start();
        s->ctx.run();
        exiting.set_value();
      });
}

resolver_thread::~resolver_thread() {
  stop();
}

void resolver_thread::post(std::function<void()> job) {
  asio::post(state_->ctx, std::move(job));
}

bool resolver_thread::deliver(const std::function<void()>& continuation) {
  std::lock_guard lk(state_->mu);
  if (state_->stopped) return false;
  continuation();
  return true;
}

void resolver_thread::stop(std::chrono::milliseconds patience) {
  {
    std::lock_guard lk(state_->mu);
    if (state_->stopped) return;
    state_->stopped = true;
  }
  state_->work.reset();
  state_->ctx.stop();
  if (!state_->thread.joinable()) return;
  if (state_->thread.get_id() == std::this_thread::get_id() ||
      state_->exited.wait_for(patience) != std::future_status::ready) {
    // A resolver still running (or the client shut down from one): it returns on its own
    // thread, which then ends; `state` lives as long as it does.
    state_->thread.detach();
    return;
  }
  state_->thread.join();
}

}  // namespace rlock::detail
