#include "detail/channel_wait.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "detail/backoff.hpp"
#include "detail/replica_sync.hpp"
#include "detail/thread_rng.hpp"

namespace rlock::detail {

// One wait (channel_wait.hpp). All state under mu_; callbacks of the core and the subscriber
// run on I/O threads. Alive (self_) until finished, also while it only waits.
class wait_op : public std::enable_shared_from_this<wait_op> {
 public:
  wait_op(const std::shared_ptr<wait_registry>& registry, wait_spec spec)
      : registry_(registry),
        core_(registry->engine()),
        spec_(std::move(spec)),
        timer_(core_->io()),
        retry_timer_(core_->io()) {}

  void start(std::stop_token stop) {
    self_ = shared_from_this();
    if (stop.stop_requested()) {
      finish_now(make_error_code(errc::stopped), false);
      return;
    }
    {
      lock lk(mu_);
      in_flight_ = true;
    }
    if (stop.stop_possible()) {
      lock lk(mu_);
      stop_ = std::make_unique<std::stop_callback<std::function<void()>>>(
          std::move(stop), [weak = weak_from_this()] {
            // Not here: the callback may run inside request_stop() on the caller's thread.
            if (auto self = weak.lock()) {
              asio::post(self->core_->io(), [self] { self->end(make_error_code(errc::stopped)); });
            }
          });
    }
    send_attempt();
  }

  /// Completes a wait that never started.
  void refuse(std::error_code ec, const std::string& detail) { finish_now(ec, false, detail); }

  /// Ends the wait with `ec` (a stop request, shutdown); an attempt in flight is undone.
  void end(std::error_code ec) {
    std::unique_lock lk(mu_);
    if (finished_ || stopping_) return;
    stopping_ = true;
    end_ec_ = ec;
    // An attempt or subscription in flight finishes the wait when it is answered.
    if (in_flight_ || subscribing_) return;
    lk.unlock();
    finish_now(ec, false);
  }

  std::uint64_t id = 0;  // in registry_'s waits_ (0: not registered); set before start()

 private:
  using lock = std::lock_guard<std::mutex>;

  // An attempt is begun under mu_ (in_flight_) and sent without it: a completion could
  // otherwise run inline and take mu_ again.
  void send_attempt() {
    spec_.attempt([self = shared_from_this()](const attempt_outcome& o) { self->on_attempt(o); });
  }

  void on_attempt(const attempt_outcome& o) {
    std::unique_lock lk(mu_);
    in_flight_ = false;
    const bool again = std::exchange(again_, false);
    if (finished_ || stopping_) {
      // Ended while this attempt was out: nothing it did may stay.
      lk.unlock();
      undo_or_spend(o, o.success || o.ec);
      finish_now(end_ec_, false);
      return;
    }
    if (o.ec) {
      std::string detail = o.detail;
      bool backing_off = false;
      if (o.ec == errc::replication_not_confirmed) {
        // Taken on the master, not confirmed by the replicas, and undone below: tried again
        // after a back-off, as Redisson does (replica_sync.hpp), or the wait ends with it.
        detail = after_tries(o.detail, ++unconfirmed_tries_);
        backing_off = back_off_locked(detail);
      }
      lk.unlock();
      undo_or_spend(o, true);
      if (!backing_off) finish_now(o.ec, false, detail);
      return;
    }
    if (o.success || clock::now() >= spec_.deadline) {
      lk.unlock();
      undo_or_spend(o, false);
      finish_now({}, o.success);
      return;
    }
    // Not met: the attempt's key is spent (a callback that only hands it on, never back here).
    if (o.spent) o.spent();
    retry_in_ = bounded_by_recheck(o.retry_in);
    if (!subscribed_) {
      subscribing_ = true;
      lk.unlock();
      subscribe();
      return;
    }
    if (again) {
      in_flight_ = true;
      lk.unlock();
      send_attempt();
      return;
    }
    arm_timer_locked();
    arm_retry_locked();
  }

  // Schedules the next try of a take the replicas did not confirm (its undo about to be sent),
  // if config::replica_sync_tries and the deadline allow; meanwhile messages start no attempt, and
  // a stop request or shutdown ends the wait at once. `detail`: the error's text, should the
  // wait end during the back-off. Under mu_, with no attempt in flight.
  bool back_off_locked(const std::string& detail) {
    const auto now = clock::now();
    const auto in = next_unconfirmed_try_in(core_->cfg(), unconfirmed_tries_, now, spec_.deadline);
    if (!in) return false;
    backing_off_ = true;
    unconfirmed_detail_ = detail;
    ++retry_serial_;  // a retry armed earlier does not go during the back-off
    retry_timer_.expires_at(now + *in);
    retry_timer_.async_wait([weak = weak_from_this(), serial = retry_serial_](std::error_code ec) {
      if (ec) return;
      if (auto self = weak.lock()) self->on_backed_off(serial);
    });
    return true;
  }

  void on_backed_off(std::uint64_t serial) {
    {
      lock lk(mu_);
      if (serial != retry_serial_ || !backing_off_) return;
      backing_off_ = false;
      if (finished_ || stopping_) return;
      in_flight_ = true;
    }
    send_attempt();
  }

  // Runs the attempt's undo when `undo` says so and it has one; otherwise its spent callback.
  static void undo_or_spend(const attempt_outcome& o, bool undo) {
    if (undo && o.undo) {
      o.undo();
    } else if (o.spent) {
      o.spent();
    }
  }

  // `retry_in`, but never later than the recheck (config::wait_recheck_interval, equal jitter:
  // waiters of one object do not look again all at once).
  std::optional<clock::duration> bounded_by_recheck(std::optional<clock::duration> retry_in) {
    const std::chrono::milliseconds every = core_->cfg().wait_recheck_interval;
    if (every.count() <= 0) return retry_in;
    const clock::duration recheck = equal_jitter(every, every).delay(0, thread_rng());
    return retry_in ? std::min(*retry_in, recheck) : recheck;
  }

  // The attempt named a time after which the condition may hold unannounced (a lock's TTL):
  // try again then, unless the deadline comes first. A message before then tries at once.
  void arm_retry_locked() {
    if (!retry_in_) return;
    const auto now = clock::now();
    const auto at = *retry_in_ >= spec_.deadline - now ? spec_.deadline : now + *retry_in_;
    if (at >= spec_.deadline) return;
    ++retry_serial_;
    retry_timer_.expires_at(at);
    retry_timer_.async_wait([weak = weak_from_this(), serial = retry_serial_](std::error_code ec) {
      if (ec) return;
      if (auto self = weak.lock()) self->on_retry(serial);
    });
  }

  void on_retry(std::uint64_t serial) {
    {
      lock lk(mu_);
      if (serial != retry_serial_) return;  // a later attempt re-armed it
      if (finished_ || stopping_ || subscribing_ || !subscribed_ || in_flight_ || backing_off_) {
        return;
      }
      in_flight_ = true;
    }
    send_attempt();
  }

  // Bounded by the wait's deadline and by config::subscription_timeout, as a lock's wait is: a
  // subscription the server never confirms (the pub/sub connection cannot be set up: the
  // server at maxclients, a proxy that passes commands only) ends the wait with an error
  // instead of holding a wait without a deadline for good.
  void subscribe() {
    std::weak_ptr<wait_op> weak = weak_from_this();
    const auto now = clock::now();
    const clock::duration limit = core_->cfg().subscription_timeout;
    const auto until = spec_.deadline - now > limit ? now + limit : spec_.deadline;
    core_->subscribe(
        channel_kind::classic, spec_.channel, spec_.route_key,
        [weak](const pubsub_event&) {
          // A message, or the subscription restored after a reconnect, when messages may have
          // been missed (resubscribed): attempt again either way.
          if (auto self = weak.lock()) self->on_event();
        },
        until,
        [weak](std::error_code ec, subscription s) {
          if (auto self = weak.lock()) self->on_subscribed(ec, std::move(s));
        });
  }

  void on_subscribed(std::error_code ec, subscription s) {
    std::unique_lock lk(mu_);
    subscribing_ = false;
    if (finished_) return;  // `s` unsubscribes as it goes
    if (stopping_) {
      lk.unlock();
      finish_now(end_ec_, false);
      return;
    }
    if (ec) {
      lk.unlock();
      if (ec != errc::subscription_timeout) {
        finish_now(ec, false);
      } else if (clock::now() >= spec_.deadline) {
        finish_now({}, false);  // the wait's deadline passed while subscribing: not met
      } else {
        finish_now(
            ec, false,
            core_->subscription_timeout_detail(spec_.channel, spec_.channel, spec_.route_key));
      }
      return;
    }
    sub_ = std::move(s);
    subscribed_ = true;
    // What was published between the last attempt and the subscription was not heard.
    in_flight_ = true;
    lk.unlock();
    send_attempt();
  }

  void on_event() {
    {
      lock lk(mu_);
      if (finished_ || stopping_ || subscribing_ || !subscribed_ || backing_off_) return;
      if (in_flight_) {
        again_ = true;
        return;
      }
      in_flight_ = true;
    }
    send_attempt();
  }

  void arm_timer_locked() {
    if (timer_armed_ || spec_.deadline == clock::time_point::max()) return;
    timer_armed_ = true;
    timer_.expires_at(spec_.deadline);
    timer_.async_wait([weak = weak_from_this()](std::error_code ec) {
      if (ec) return;
      if (auto self = weak.lock()) self->on_deadline();
    });
  }

  void on_deadline() {
    std::unique_lock lk(mu_);
    // An attempt in flight decides (it sees the deadline passed when it is answered).
    if (finished_ || in_flight_ || subscribing_) return;
    if (backing_off_) {
      // (A back-off ends before the deadline; should the timer fire first, the last try's
      // error stands: the wait did not just run out.)
      const std::string detail = unconfirmed_detail_;
      lk.unlock();
      finish_now(make_error_code(errc::replication_not_confirmed), false, detail);
      return;
    }
    lk.unlock();
    finish_now({}, false);
  }

  // Completes the wait once; called without mu_.
  void finish_now(std::error_code ec, bool success, const std::string& detail = {}) {
    std::function<void(std::error_code, bool, const std::string&)> done;
    subscription sub;
    std::unique_ptr<std::stop_callback<std::function<void()>>> stop;
    std::shared_ptr<wait_op> keep;
    {
      lock lk(mu_);
      if (finished_) return;
      finished_ = true;
      done = std::move(spec_.done);
      sub = std::move(sub_);
      stop = std::move(stop_);
      keep = std::move(self_);
      timer_.cancel();
      retry_timer_.cancel();
    }
    sub.reset();
    stop.reset();
    if (auto r = registry_.lock(); r && id != 0) r->forget(id);
    if (done) done(ec, success, detail);
  }

  std::weak_ptr<wait_registry> registry_;
  std::shared_ptr<core> core_;
  wait_spec spec_;
  std::mutex mu_;
  asio::steady_timer timer_;
  asio::steady_timer retry_timer_;
  std::optional<clock::duration> retry_in_;  // of the last attempt that was not met
  std::uint64_t retry_serial_ = 0;
  std::unique_ptr<std::stop_callback<std::function<void()>>> stop_;
  subscription sub_;
  std::shared_ptr<wait_op> self_;
  bool in_flight_ = false;
  bool again_ = false;  // a message came while an attempt was in flight
  bool subscribing_ = false;
  bool subscribed_ = false;
  bool stopping_ = false;  // end() was called: end_ec_ once nothing is in flight
  std::error_code end_ec_;
  bool finished_ = false;
  bool timer_armed_ = false;
  // Takes the replicas did not confirm, and the wait for the next try (back_off_locked).
  int unconfirmed_tries_ = 0;
  bool backing_off_ = false;
  std::string unconfirmed_detail_;
};

void wait_registry::start(wait_spec spec, std::stop_token stop) {
  auto op = std::make_shared<wait_op>(shared_from_this(), std::move(spec));
  bool closed = false;
  {
    std::lock_guard lk(mu_);
    closed = closed_;
    if (!closed) {
      op->id = ++next_id_;
      waits_.emplace(op->id, op);
    }
  }
  if (closed) {
    op->refuse(make_error_code(errc::shutdown), "the client was shut down");
    return;
  }
  op->start(std::move(stop));
}

void wait_registry::forget(std::uint64_t id) {
  std::lock_guard lk(mu_);
  waits_.erase(id);
}

void wait_registry::shutdown() {
  std::vector<std::shared_ptr<wait_op>> ops;
  {
    std::lock_guard lk(mu_);
    closed_ = true;
    for (const auto& [id, weak] : waits_) {
      if (auto op = weak.lock()) ops.push_back(std::move(op));
    }
  }
  for (const auto& op : ops) op->end(make_error_code(errc::shutdown));
}

}  // namespace rlock::detail
