// Acquires parked behind the undo of the same owner's earlier acquire (lock_undo.cpp): they
// start once it has landed, or end at their own deadline or stop request meanwhile.
#include <algorithm>
#include <functional>
#include <memory>
#include <string>

#include "detail/lock_service.hpp"
#include "detail/lock_service_op.hpp"
#include "detail/replica_sync.hpp"

namespace rlock::detail {

std::shared_ptr<lock_service::op> lock_service::next_parked_locked(
    const std::pair<std::string, std::uint64_t>& key) {
  if (closed_ || undo_in_flight_.count(key) != 0 || acquiring_.count(key) != 0) return nullptr;
  auto w = after_undo_.find(key);
  if (w == after_undo_.end()) return nullptr;
  std::shared_ptr<op> next = w->second.front();
  w->second.erase(w->second.begin());
  if (w->second.empty()) after_undo_.erase(w);
  acquiring_.emplace(key, next);
  return next;
}

namespace {

// The error text of an acquire that reached its deadline parked (never sent): behind its
// owner's undo of an earlier acquire, or behind its owner's acquire in flight.
std::string parked_timeout_detail(bool behind_undo) {
  if (behind_undo) {
    return "not tried: until the deadline it waited for the undo of this owner's earlier "
           "acquire, whose outcome is unknown, and the server has not answered that undo yet";
  }
  return "not tried: until the deadline it waited for this owner's acquire already in flight "
         "to end";
}

}  // namespace

void lock_service::park_locked(const std::shared_ptr<op>& o) {
  // A parked acquire has not started: its own deadline and stop request still end it.
  std::weak_ptr<lock_service> svc = weak_from_this();
  if (o->req.deadline != clock::time_point::max()) {
    o->timer.expires_at(o->req.deadline);
    o->timer.async_wait([svc, o](std::error_code ec) {
      if (ec) return;
      if (auto s = svc.lock()) s->unpark(o, errc::timeout);
    });
  }
  if (o->req.stop.stop_possible()) {
    std::weak_ptr<op> weak = o;
    // Not inline: request_stop() may run on a thread that holds locks of its own.
    o->stop_cb = std::make_unique<std::stop_callback<std::function<void()>>>(
        o->req.stop, std::function<void()>([weak, svc] {
          auto op_ptr = weak.lock();
          auto s = svc.lock();
          if (!op_ptr || !s) return;
          asio::post(s->core_->io(), [s, op_ptr] { s->unpark(op_ptr, errc::stopped); });
        }));
  }
}

void lock_service::unpark(const std::shared_ptr<op>& o, errc why) {
  bool behind_undo = false;
  {
    std::lock_guard lk(mu_);
    const auto key = std::make_pair(o->req.raw_name, o->req.owner_id);
    auto it = after_undo_.find(key);
    if (it == after_undo_.end()) return;
    const auto n = std::erase(it->second, o);
    if (it->second.empty()) after_undo_.erase(it);
    if (n == 0) return;  // started meanwhile: its state machine has the deadline now
    behind_undo = undo_in_flight_.count(key) != 0;
  }
  o->timer.cancel();
  o->stop_cb.reset();
  auto done = std::move(o->done);
  if (why == errc::timeout && o->req.unconfirmed_tries > 0) {
    // A try again (the replicas did not confirm the last try) whose deadline came while the
    // last try was being undone: that try's error stands.
    why = errc::replication_not_confirmed;
    if (o->req.error_detail != nullptr) {
      *o->req.error_detail = after_tries(o->req.unconfirmed_detail, o->req.unconfirmed_tries);
    }
  } else if (why == errc::timeout && o->req.error_detail != nullptr) {
    // Never sent: say what it waited for, or the caller sees a bare timeout with nothing to
    // tell it from a server that did not answer the acquire itself.
    *o->req.error_detail = parked_timeout_detail(behind_undo);
  }
  if (done) done(make_error_code(why), false);
}

void lock_service::resume_parked(const std::shared_ptr<op>& o) {
  o->timer.cancel();  // the parking deadline; the state machine arms its own
  start(o);
}

}  // namespace rlock::detail
