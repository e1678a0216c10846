// lock_service's acquire in progress (lock_service::op) and the driver of its state machine,
// shared by the files that carry out acquire_fsm's actions: lock_service.cpp (start, attempts,
// finish), lock_wait.cpp (subscriptions, unlock messages, hand-offs, queue liveness),
// lock_release.cpp and lock_undo.cpp. Internal to those files.
#pragma once

#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "detail/lock_service.hpp"

namespace rlock::detail {

struct lock_service::op : std::enable_shared_from_this<op> {
  op(asio::io_context& io, acquire_request r, acquire_fsm::params p)
      : req(std::move(r)), fsm(p), timer(io) {}

  acquire_request req;
  std::mutex mu;  // guards fsm, timer and the fields below after start
  acquire_fsm fsm;
  asio::steady_timer timer;
  acquire_callback done;
  std::string owner;
  std::string channel;
  std::chrono::milliseconds lease{};
  bool renew = true;
  int prior_count = 0;
  std::uint64_t watchdog_id = 0;
  bool watchdog_added_here = false;
  clock::time_point sent_at;
  // The latest attempt may have run: it was answered, or written with no reply that proves it
  // did not run (server_busy does).
  bool last_may_have_run = false;
  // Some attempt of this acquire may have run (as last_may_have_run, for any of them).
  bool may_have_run = false;
  // Where attempts of this acquire were written whose outcome is unknown: its undo closes them
  // on the server first, so that none of them runs after the undo.
  std::vector<server_client> unknown_on;
  // The latest failed reply's code and text, for acquire_request::error_detail.
  std::error_code last_error;
  std::string last_error_detail;
  // Queued mode: the last enqueue's send time and the server time its reply carried, to turn a
  // hand-off's server time into a local lower bound of when the lease started.
  std::atomic<bool> enqueued{false};
  // Unique within the client: sent with the enqueue, stored with the queue entry and carried by
  // the hand-off message, which is accepted only by the acquire with this token.
  std::string token;
  // Send time of the first attempt: no hand-off to this acquire can precede it.
  clock::time_point first_sent_at;
  // The latest confirmation that the waiter was still queued (an enqueue's or a refresh's
  // reply): the local send time of that request and the server time it carried.
  clock::time_point enqueue_sent_at;
  long long enqueue_server_ms = -1;
  std::optional<clock::time_point> lease_from;
  // Handed over by another's script: the hand-off's TTL ends at the latest at the queue entry's
  // deadline, which the latest request that found the entry set (see handed_deadline()).
  std::optional<clock::time_point> handed_end;
  // A local lower bound of the queue entry's deadline when this acquire was handed the lock:
  // every request that found the entry (an enqueue or a refresh) set it to the server's time
  // plus the liveness; the latest confirmed one was sent at enqueue_sent_at, none before the
  // first attempt.
  clock::time_point handed_deadline(std::chrono::milliseconds liveness) const {
    const auto set_at =
        enqueue_server_ms >= 0 ? std::max(enqueue_sent_at, first_sent_at) : first_sent_at;
    return set_at + liveness;
  }
  bool queued = false;
  bool finished = false;
  // A re-entry found its owner's hold gone: that hold's loss signal, stopped at the latest
  // when this acquire completes.
  std::stop_source lost_hold{std::nostopstate};
  std::unique_ptr<std::stop_callback<std::function<void()>>> stop_cb;
  // A fair lock's waiter: its own channel (redisson_lock__channel:{<name>}:<owner>), on which
  // the release that makes it the head with the lock free tells it. Dropped when it finishes.
  subscription own_sub;
};

template <class Event>
void lock_service::step(const std::shared_ptr<op>& o, Event&& ev) {
  std::unique_lock lk(o->mu);
  if (o->finished) return;
  run(o, ev(o->fsm), lk);
}

}  // namespace rlock::detail
