// resolver_thread: the thread on which a client asks config::credentials_resolver, so that a
// resolver that takes its time (a vault or a cloud provider asked over the network) holds up
// only the connects waiting for its answer, not the I/O threads that renew held locks and carry
// every other request.
//
// One thread per client, started with it when a resolver is configured; jobs run one at a time
// in the order posted. A job hands its result back with deliver(), which runs the continuation
// only while the client has not stopped the thread, and holds stop() off while it runs: after
// stop() no continuation touches the client's connections or its io_context. stop() waits a
// moment for a job under way; a resolver that still has not returned is left to return on the
// thread, which then ends by itself (its result is dropped).
#pragma once

#include <chrono>
#include <functional>
#include <memory>

namespace rlock::detail {

class resolver_thread {
 public:
  /// `on_start` runs first on the thread (marks it as the client's, so that a blocking call of
  /// the client from a resolver is refused as from an I/O thread).
  explicit resolver_thread(std::function<void()> on_start);
  ~resolver_thread();
  resolver_thread(const resolver_thread&) = delete;
  resolver_thread& operator=(const resolver_thread&) = delete;

  /// Runs `job` on the thread, after the jobs posted before it. Dropped after stop().
  void post(std::function<void()> job);
  /// Runs `continuation` now, on the calling thread, unless stop() has been called; stop()
  /// waits until it has returned. Returns whether it ran.
  bool deliver(const std::function<void()>& continuation);
  /// Drops the jobs not started, and stops delivering: waits up to `patience` for a job under
  /// way to return, then leaves it. Idempotent.
  void stop(std::chrono::milliseconds patience = std::chrono::milliseconds(200));

 private:
  struct state;
  std::shared_ptr<state> state_;
};

}  // namespace rlock::detail
