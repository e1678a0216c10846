#include "detail/lock_service.hpp"

#include <algorithm>
#include <random>
#include <string_view>

#include "detail/closed_completion.hpp"
#include "detail/lock_keys.hpp"
#include "detail/lock_replies.hpp"
#include "detail/lock_scripts.hpp"
#include "detail/lock_service_op.hpp"
#include "detail/replica_sync.hpp"
#include "detail/thread_rng.hpp"

namespace rlock::detail {

std::string random_request_id() {
  std::mt19937_64& rng = thread_rng();
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (std::size_t half = 0; half < 2; ++half) {
    std::uint64_t v = rng();
    for (std::size_t i = 0; i < 16; ++i) {
      out[half * 16 + i] = hex[v & 0xf];
      v >>= 4;
    }
  }
  return out;
}

lock_service::lock_service(std::shared_ptr<core> c)
    : core_(std::move(c)),
      watchdog_(std::make_shared<watchdog>(core_, core_->cfg().lock_watchdog_timeout,
                                           core_->cfg().lock_watchdog_batch_size,
                                           lock_renew_script())) {}

lock_service::~lock_service() {
  shutdown();
}

void lock_service::shutdown() {
  std::vector<std::shared_ptr<op>> waiting;
  std::vector<std::shared_ptr<op>> parked;
  std::vector<std::stop_source> held;
  {
    std::lock_guard lk(mu_);
    if (closed_) return;
    closed_ = true;
    // Every started acquire: queued or not (a try_lock, a re-entry, any acquire with the
    // queue off), its script may be in flight.
    for (auto& [key, o] : acquiring_) waiting.push_back(o);
    for (auto& [name, e] : entries_) {
      for (auto& [owner, h] : e.holds) held.push_back(h.lost);
      e.sub_handle.reset();
      e.handoff_handle.reset();
      if (e.linger) e.linger->cancel();
      if (e.refresh) e.refresh->cancel();
    }
    for (auto& [key, ops] : after_undo_) parked.insert(parked.end(), ops.begin(), ops.end());
    after_undo_.clear();
    // Undos waiting for their next round send it now, as their last (waited for below).
    for (auto& [key, timers] : undo_waits_) {
      for (auto& t : timers) t->cancel();
    }
    // Unlocks parked behind an undo stay parked: they are sent when it lands (the wait below),
    // and refused after it.
  }
  watchdog_->stop();
  // Every hold is lost to its holder: no longer renewed, and never to be released by this
  // client (its locks stay on the server until their leases end). Told after the watchdog has
  // stopped, so that no renewal runs after a holder learnt of its loss.
  for (auto& src : held) src.request_stop();
  for (auto& o : parked) {
    o->timer.cancel();
    o->stop_cb.reset();
    auto done = std::move(o->done);
    if (done) done(make_error_code(errc::shutdown), false);
  }
  for (auto& o : waiting) {
    step(o, [op = o.get()](acquire_fsm& f) {
      acquire_fsm::action a;
      a.kind = acquire_fsm::action_kind::done;
      a.ec = make_error_code(errc::shutdown);
      // An attempt in flight, or one written whose reply said nothing sure, may still be
      // applied: undone (a queued one also leaves the queue) before the core closes (the wait
      // below), not left held for its lease.
      if (f.attempting()) op->last_may_have_run = true;
      a.release = true;
      return a;
    });
  }
  // Their leave scripts are queued now; on one of the client's I/O threads their replies could
  // not be read while this one waits.
  if (!core_->io().get_executor().running_in_this_thread()) {
    const auto deadline = clock::now() + core_->cfg().timeout;
    std::unique_lock lk(mu_);
    cleanup_done_.wait_until(lk, deadline, [this] { return undo_in_flight_.empty(); });
  }
  // Latches of answered unlocks (the undos' too) would wait for the lock's next unlock script,
  // which a client that closes never sends: they go to the client's spent keys, which
  // core::shutdown deletes (briefly), instead of being left to expire with their TTL.
  for (auto& [name, latches] : spent_latches_.take_all()) core_->spent().put(std::move(latches));
  // Unlocks whose undo has not landed by now are not sent: sent before it, each could take the
  // hold the undo is for (see unlocks_after_undo_).
  std::vector<std::function<void(bool)>> refused;
  {
    std::lock_guard lk(mu_);
    for (auto& [key, fs] : unlocks_after_undo_) {
      refused.insert(refused.end(), std::make_move_iterator(fs.begin()),
                     std::make_move_iterator(fs.end()));
    }
    unlocks_after_undo_.clear();
  }
  for (auto& f : refused) f(false);
}

std::string lock_service::owner_field(std::uint64_t owner_id) const {
  return detail::owner_field(core_->id(), owner_id);
}

// ---- acquire ----

void lock_service::acquire(acquire_request req, acquire_callback done) {
  acquire_fsm::params p;
  p.deadline = req.deadline;
  p.single_attempt = req.single_attempt;
  p.subscription_timeout = core_->cfg().subscription_timeout;
  p.spin = req.spin;
  p.not_before = req.not_before;
  if (req.unconfirmed_tries > 0) p.retry_of = make_error_code(errc::replication_not_confirmed);
  // A fair waiter's attempts keep its queue entry from being evicted as stale: at least three
  // per wait time.
  if (req.kind == lock_kind::fair) {
    p.max_wait = std::max(req.fair_wait / 3, std::chrono::milliseconds(1));
  }
  // Under replica_sync a lock handed over by the queue is confirmed by a synced attempt of
  // its own before the acquire returns (config.hpp).
  p.confirm_handoff =
      asks_replicas(core_->cfg()) && core_->cfg().lock_queue && req.kind == lock_kind::reentrant;
  const std::uint64_t token = next_token_.fetch_add(1, std::memory_order_relaxed) + 1;
  // Each acquire's jitter differs: waiters of one name in different processes draw their own.
  p.spin_seed = token ^ std::hash<std::string>{}(core_->id());
  auto o = std::make_shared<op>(core_->io(), std::move(req), p);
  o->done = std::move(done);
  o->owner = owner_field(o->req.owner_id);
  o->channel = lock_channel(o->req.raw_name);
  o->renew = !o->req.lease.has_value();
  o->lease = o->req.lease.value_or(core_->cfg().lock_watchdog_timeout);
  o->token = std::to_string(token);

  {
    std::lock_guard lk(mu_);
    const auto key = std::make_pair(o->req.raw_name, o->req.owner_id);
    if (!closed_) {  // else start() ends it at once
      if (undo_in_flight_.count(key) != 0 || acquiring_.count(key) != 0) {
        // Started when this owner's clean-up has landed and its acquire in flight has ended.
        after_undo_[key].push_back(o);
        park_locked(o);
        hurry_undos_locked(key);
        return;
      }
      acquiring_.emplace(key, o);
    }
  }
  start(o);
}

void lock_service::end_unstarted(const std::shared_ptr<op>& o) {
  std::unique_lock lk(o->mu);
  // shutdown() may have ended it already: it ends every acquire registered in acquiring_,
  // which this one joined before start() ran.
  if (o->finished) return;
  o->finished = true;
  auto done = std::move(o->done);
  lk.unlock();
  complete_closed([d = std::move(done)] {
    if (d) d(make_error_code(errc::shutdown), false);
  });
}

void lock_service::start(const std::shared_ptr<op>& o) {
  bool head = true;
  channels subscribed = channels::none;
  {
    std::unique_lock lk(mu_);
    if (closed_) {
      auto it = acquiring_.find(std::make_pair(o->req.raw_name, o->req.owner_id));
      if (it != acquiring_.end() && it->second == o) acquiring_.erase(it);
      lk.unlock();
      end_unstarted(o);
      return;
    }
    entry& e = entries_[o->req.raw_name];
    auto h = e.holds.find(o->req.owner_id);
    if (h != e.holds.end() && h->second.lost.stop_requested()) {
      // The owner's earlier hold was lost (and reported): this acquire starts afresh, with a
      // new loss signal. If the server still counts that hold (a lost reply), the acquire
      // script recognises it as this acquire's and does not count it twice.
      e.holds.erase(h);
      h = e.holds.end();
    }
    o->prior_count = h == e.holds.end() ? 0 : h->second.count;
    if (h != e.holds.end()) o->watchdog_id = h->second.watchdog_id;
    // A fair waiter listens on its own channel, whatever this process hears on the others.
    subscribed = o->req.kind == lock_kind::fair ? channels::none : e.level;
    // Re-entry and single attempts do not queue: the owner already holds the lock, or the
    // caller asked for exactly one try.
    if (o->prior_count == 0 && !o->req.single_attempt) {
      // Queued mode: every waiter joins the Redis queue on arrival (its position is its
      // arrival order), so all of them send their first script. Otherwise only the local head
      // contends.
      // A spin lock's waiter never joins the Redis queue: it contends only as the local head.
      // A fair lock's waiter queues in Redis on arrival, as queued mode's.
      head = (core_->cfg().lock_queue && o->req.kind == lock_kind::reentrant) ||
             o->req.kind == lock_kind::fair || e.queue.empty();
      e.queue.push_back(o);
      o->queued = true;
      if (e.linger) e.linger->cancel();
    }
  }
  if (o->req.stop.stop_possible()) {
    std::weak_ptr<op> weak = o;
    std::weak_ptr<lock_service> svc = weak_from_this();
    // Runs inline if a stop was already requested; the op is not started yet then, and the
    // first step finds it finished.
    o->stop_cb = std::make_unique<std::stop_callback<std::function<void()>>>(
        o->req.stop, std::function<void()>([weak, svc] {
          auto op_ptr = weak.lock();
          auto s = svc.lock();
          if (!op_ptr || !s) return;
          // Not inline: request_stop() may run on a thread that holds locks of its own.
          asio::post(s->core_->io(), [s, op_ptr] {
            s->step(op_ptr, [](acquire_fsm& f) { return f.on_stop(clock::now()); });
          });
        }));
  }
  step(o, [head, subscribed](acquire_fsm& f) { return f.start(clock::now(), head, subscribed); });
}

void lock_service::run(const std::shared_ptr<op>& o, acquire_fsm::action a,
                       std::unique_lock<std::mutex>& lk) {
  switch (a.kind) {
    case acquire_fsm::action_kind::none:
      return;
    case acquire_fsm::action_kind::send_acquire:
      send_acquire(o, lk);
      return;
    case acquire_fsm::action_kind::subscribe:
      lk.unlock();
      ensure_subscribed(o, a.until, a.level);
      return;
    case acquire_fsm::action_kind::wait:
      o->timer.cancel();
      if (a.until != clock::time_point::max()) {
        o->timer.expires_at(a.until);
        o->timer.async_wait([self = shared_from_this(), o](std::error_code ec) {
          if (ec) return;
          self->step(o, [](acquire_fsm& f) { return f.on_timer(clock::now()); });
        });
      }
      return;
    case acquire_fsm::action_kind::done:
      finish(o, a, lk);
      return;
  }
}

void lock_service::send_acquire(const std::shared_ptr<op>& o, std::unique_lock<std::mutex>& lk) {
  if (o->watchdog_id == 0) {
    // Registered before the acquire is sent; activated only if it succeeds. (A re-entry whose
    // hold lost its registration, after a failed unlock say, registers again.)
    o->watchdog_id = register_hold(o->req.raw_name, o->req.owner_id, o->owner);
    o->watchdog_added_here = true;
  }
  const std::string lease = std::to_string(o->lease.count());
  const std::string prior = std::to_string(o->prior_count);
  exec_options opts;
  opts.deadline = o->req.deadline;
  // Safe to resend: ARGV[3] makes a repeated acquire recognise that it was already applied.
  // An earlier attempt that would run after its resend (and after the owner's unlock) would
  // take the lock again, for nobody: the resend closes the connections it may still run on,
  // and so does this acquire's next request (after a wait, say) for its earlier requests'.
  opts.idempotent = true;
  opts.close_unknown = true;
  opts.fence = o->unknown_on;
  opts.completes_on_caller = o->req.completes_on_caller;
  ask_replicas(core_->cfg(), opts);
  o->sent_at = clock::now();
  if (o->first_sent_at == clock::time_point{}) o->first_sent_at = o->sent_at;
  auto on_reply = [self = shared_from_this(), o](exec_result res) {
    long long server_ms = -1;
    acquire_fsm::reply r = decode_acquire(res, server_ms);
    if (r.acquired && !replicas_confirmed(self->core_->cfg(), res)) {
      // Taken on the master only: as a failed attempt that was written, it is undone (the
      // state machine asks for the release) and the acquire fails with this error.
      r.acquired = false;
      r.ec = make_error_code(errc::replication_not_confirmed);
      res.detail = not_confirmed_detail(self->core_->cfg(), res, "acquired");
    }
    if (!r.acquired && !r.ec && o->enqueued && o->req.kind != lock_kind::fair) {
      // Queued in Redis: from now on its entry needs refreshing. (An acquire that succeeds at
      // once, the uncontended case, never arms the refresh timer.)
      std::lock_guard svc_lk(self->mu_);
      auto it = self->entries_.find(o->req.raw_name);
      if (it != self->entries_.end()) self->arm_refresh_locked(o->req.raw_name, it->second);
    }
    // Answered, or written with no reply that proves it did not run (BUSY does).
    const bool ran = !res.ec || outcome_unknown(res);
    const auto sent_at = res.sent_at;
    std::string detail = r.ec ? std::move(res.detail) : std::string();
    std::vector<server_client> unknown_on = std::move(res.unknown_on);
    self->step(o, [&self, o, r, ran, server_ms, sent_at, &detail, &unknown_on](acquire_fsm& f) {
      add_unique(o->unknown_on, std::move(unknown_on));
      acquire_fsm::reply answer = r;
      if (!r.acquired && !r.ec && o->prior_count > 0) {
        self->reentry_found_lock_gone(o);
        answer.hold_gone = true;
      }
      o->last_may_have_run = ran;
      if (ran) o->may_have_run = true;
      if (r.ec) {
        o->last_error = r.ec;
        o->last_error_detail = std::move(detail);
      }
      // Nothing to leave: another cluster node serves the lock's slot (this attempt did not
      // run, and a leave or undo sent here would be redirected as well, see
      // acquire_fsm::on_reply), or no attempt of this acquire may have run at all (each was
      // refused by a busy server, or never reached it).
      if (r.ec == errc::cluster_redirect || !o->may_have_run) o->enqueued = false;
      // A resent attempt's lease starts at its own send time, not the first attempt's.
      if (sent_at != clock::time_point{}) o->sent_at = sent_at;
      if (server_ms >= 0) {
        o->enqueue_sent_at = o->sent_at;
        o->enqueue_server_ms = server_ms;
      }
      return f.on_reply(clock::now(), answer);
    });
  };
  // A re-entry is never queued (refused, it becomes a fresh acquire, which may be), nor is a
  // single attempt.
  const bool may_queue = !o->req.single_attempt && o->prior_count == 0;
  if (o->req.kind == lock_kind::fair) {
    const std::string queue = fair_queue_key(o->req.raw_name);
    const std::string timeouts = fair_timeout_key(o->req.raw_name);
    // ARGV[4]: the wait time for an acquire that may queue, else "0".
    const std::string wait = may_queue ? std::to_string(o->req.fair_wait.count()) : "0";
    if (may_queue) o->enqueued = true;
    const std::string_view keys[] = {o->req.raw_name, queue, timeouts};
    const std::string_view args[] = {lease, o->owner, prior, wait};
    lk.unlock();
    core_->eval(fair_lock_acquire_script(), keys, args, opts, std::move(on_reply));
    return;
  }
  if (core_->cfg().lock_queue && o->req.kind == lock_kind::reentrant) {
    const std::string queue = queue_key(o->req.raw_name);
    // ARGV[4]: "<liveness>:<token>" for an acquire that may queue, else "0".
    std::string queue_entry = "0";
    if (may_queue) {
      queue_entry = std::to_string(core_->cfg().lock_queue_liveness.count());
      queue_entry += ':';
      queue_entry += o->token;
      o->enqueued = true;
    }
    const std::string_view keys[] = {o->req.raw_name, queue};
    const std::string_view args[] = {lease, o->owner, prior, queue_entry};
    lk.unlock();
    core_->eval(lock_acquire_queued_script(), keys, args, opts, std::move(on_reply));
    return;
  }
  const std::string_view keys[] = {o->req.raw_name};
  const std::string_view args[] = {lease, o->owner, prior};
  lk.unlock();
  core_->eval(lock_acquire_script(), keys, args, opts, std::move(on_reply));
}

void lock_service::reentry_found_lock_gone(const std::shared_ptr<op>& o) {
  // A re-entry was refused: its owner holds nothing on the server (the lock expired, was
  // deleted or force-unlocked, and is free or another's), although renewal has not found out
  // yet. That hold is lost, and its holder told; this acquire goes on as a fresh one (Redisson's
  // re-entry, which knows of no earlier hold, does the same), a waiter like any other. Left a
  // re-entry, no waiter would be told of its subscription, and taking a free lock as a
  // re-entry would count 1 on the server under a local N + 1.
  std::lock_guard lk(mu_);
  entry& e = entries_[o->req.raw_name];
  auto h = e.holds.find(o->req.owner_id);
  if (h != e.holds.end()) {
    if (h->second.watchdog_id != 0) watchdog_->remove(h->second.watchdog_id);
    // Told at once on an I/O thread (stop callbacks run user code, which must not run under
    // the op's mutex), and by the time this acquire completes at the latest (finish).
    o->lost_hold = h->second.lost;
    asio::post(core_->io(), [src = h->second.lost]() mutable { src.request_stop(); });
    e.holds.erase(h);
    // Unlocks parked behind this re-entry were for the lost hold: they go now, and find
    // nothing (not_owner), rather than wait for this acquire and release what it takes.
    if (undo_in_flight_.count({o->req.raw_name, o->req.owner_id}) == 0) {
      auto unlocks = take_parked_unlocks_locked({o->req.raw_name, o->req.owner_id});
      if (!unlocks.empty()) {
        asio::post(core_->io(), [unlocks = std::move(unlocks)]() mutable {
          for (auto& f : unlocks) f(true);
        });
      }
    }
  }
  o->prior_count = 0;
  if (!o->watchdog_added_here) o->watchdog_id = 0;  // the lost hold's: registered anew
  if (!o->req.single_attempt && !o->queued) {
    e.queue.push_back(o);
    o->queued = true;
    if (e.linger) e.linger->cancel();
  }
}

}  // namespace rlock::detail
