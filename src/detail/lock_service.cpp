#include "detail/lock_service.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <initializer_list>
#include <random>
#include <span>
#include <string_view>

#include "detail/closed_completion.hpp"
#include "detail/lock_keys.hpp"
#include "detail/lock_replies.hpp"
#include "detail/lock_scripts.hpp"

namespace rlock::detail {
namespace {

// How long a lock channel stays subscribed after its last local waiter left, so that a busy
// lock does not pay SUBSCRIBE/UNSUBSCRIBE for every hand-off.
constexpr std::chrono::seconds subscription_linger{10};

// How much of a lease must be left when an acquire's reply arrives for the acquire to count:
// a tenth of the lease, at most one second.
clock::duration stale_margin(std::chrono::milliseconds lease) {
  return std::min<clock::duration>(lease / 10, std::chrono::seconds(1));
}

// A script's keys followed by the spent unlock latches it deletes (spent_latches.hpp).
std::vector<std::string_view> with_spent(std::initializer_list<std::string_view> keys,
                                         const std::vector<std::string>& spent) {
  std::vector<std::string_view> out(keys);
  out.insert(out.end(), spent.begin(), spent.end());
  return out;
}

}  // namespace

std::string random_request_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
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
  bool last_written = false;
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
};

lock_service::lock_service(std::shared_ptr<core> c)
    : core_(std::move(c)),
      watchdog_(std::make_shared<watchdog>(core_, core_->cfg().lock_watchdog_timeout,
                                           core_->cfg().lock_watchdog_batch_size)) {}

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
      if (f.attempting()) op->last_written = true;
      a.release = true;
      return a;
    });
  }
  // Latches of answered unlocks would wait for the lock's next unlock script, which a client
  // that closes never sends: it deletes them now (one DEL per lock, in the lock's slot), instead
  // of leaving them to expire with their TTL. Best effort, briefly: a client closing while its
  // server is unreachable should not wait long for it.
  const auto now = clock::now();
  const auto deadline = now + core_->cfg().timeout;
  const auto latch_deadline =
      now + std::min<clock::duration>(core_->cfg().timeout, std::chrono::milliseconds(250));
  for (auto& [name, latches] : spent_latches_.take_all()) {
    if (latches.empty()) continue;
    std::vector<std::string_view> args = {"DEL"};
    args.insert(args.end(), latches.begin(), latches.end());
    exec_options opts;
    opts.idempotent = true;
    opts.deadline = latch_deadline;
    opts.route_key = name;
    {
      std::lock_guard lk(mu_);
      ++latch_dels_;
    }
    core_->exec(args, opts, [self = shared_from_this()](exec_result) {
      std::lock_guard lk(self->mu_);
      if (--self->latch_dels_ == 0) self->cleanup_done_.notify_all();
    });
  }
  // Their leave scripts are queued now; on one of the client's I/O threads their replies could
  // not be read while this one waits.
  if (!core_->io().get_executor().running_in_this_thread()) {
    std::unique_lock lk(mu_);
    cleanup_done_.wait_until(lk, latch_deadline,
                             [this] { return undo_in_flight_.empty() && latch_dels_ == 0; });
    cleanup_done_.wait_until(lk, deadline, [this] { return undo_in_flight_.empty(); });
  }
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
  auto o = std::make_shared<op>(core_->io(), std::move(req), p);
  o->done = std::move(done);
  o->owner = owner_field(o->req.owner_id);
  o->channel = lock_channel(o->req.raw_name);
  o->renew = !o->req.lease.has_value();
  o->lease = o->req.lease.value_or(core_->cfg().lock_watchdog_timeout);
  o->token = std::to_string(next_token_.fetch_add(1, std::memory_order_relaxed) + 1);

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
  {
    std::lock_guard lk(mu_);
    auto it = after_undo_.find(std::make_pair(o->req.raw_name, o->req.owner_id));
    if (it == after_undo_.end()) return;
    const auto n = std::erase(it->second, o);
    if (it->second.empty()) after_undo_.erase(it);
    if (n == 0) return;  // started meanwhile: its state machine has the deadline now
  }
  o->timer.cancel();
  o->stop_cb.reset();
  auto done = std::move(o->done);
  if (done) done(make_error_code(why), false);
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
    subscribed = e.level;
    // Re-entry and single attempts do not queue: the owner already holds the lock, or the
    // caller asked for exactly one try.
    if (o->prior_count == 0 && !o->req.single_attempt) {
      // Queued mode: every waiter joins the Redis queue on arrival (its position is its
      // arrival order), so all of them send their first script. Otherwise only the local head
      // contends.
      head = core_->cfg().lock_queue || e.queue.empty();
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

template <class Event>
void lock_service::step(const std::shared_ptr<op>& o, Event&& ev) {
  std::unique_lock lk(o->mu);
  if (o->finished) return;
  run(o, ev(o->fsm), lk);
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
  o->sent_at = clock::now();
  if (o->first_sent_at == clock::time_point{}) o->first_sent_at = o->sent_at;
  auto on_reply = [self = shared_from_this(), o](exec_result res) {
    long long server_ms = -1;
    const acquire_fsm::reply r = decode_acquire(res, server_ms);
    if (!r.acquired && !r.ec && o->enqueued) {
      // Queued in Redis: from now on its entry needs refreshing. (An acquire that succeeds at
      // once, the uncontended case, never arms the refresh timer.)
      std::lock_guard svc_lk(self->mu_);
      auto it = self->entries_.find(o->req.raw_name);
      if (it != self->entries_.end()) self->arm_refresh_locked(o->req.raw_name, it->second);
    }
    const bool written = res.written;
    const auto sent_at = res.sent_at;
    std::string detail = r.ec ? std::move(res.detail) : std::string();
    std::vector<server_client> unknown_on = std::move(res.unknown_on);
    self->step(o, [&self, o, r, written, server_ms, sent_at, &detail, &unknown_on](acquire_fsm& f) {
      add_unique(o->unknown_on, std::move(unknown_on));
      acquire_fsm::reply answer = r;
      if (!r.acquired && !r.ec && o->prior_count > 0) {
        self->reentry_found_lock_gone(o);
        answer.hold_gone = true;
      }
      o->last_written = written;
      if (r.ec) {
        o->last_error = r.ec;
        o->last_error_detail = std::move(detail);
      }
      // Another cluster node serves the lock's slot: this attempt did not run, and a leave or
      // undo sent here would be redirected as well (see acquire_fsm::on_reply).
      if (r.ec == errc::cluster_redirect) o->enqueued = false;
      // A resent attempt's lease starts at its own send time, not the first attempt's.
      if (sent_at != clock::time_point{}) o->sent_at = sent_at;
      if (server_ms >= 0) {
        o->enqueue_sent_at = o->sent_at;
        o->enqueue_server_ms = server_ms;
      }
      return f.on_reply(clock::now(), answer);
    });
  };
  if (core_->cfg().lock_queue) {
    const std::string queue = queue_key(o->req.raw_name);
    // A re-entry is never queued: refused, it becomes a fresh acquire, which may be.
    const bool may_queue = !o->req.single_attempt && o->prior_count == 0;
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

std::uint64_t lock_service::register_hold(const std::string& raw_name, std::uint64_t owner_id,
                                          const std::string& owner) {
  std::weak_ptr<lock_service> svc = weak_from_this();
  auto id_holder = std::make_shared<std::uint64_t>(0);
  const std::uint64_t id =
      watchdog_->add(raw_name, owner, [svc, raw_name, owner_id, id_holder](std::error_code) {
        if (auto s = svc.lock()) s->on_lost(raw_name, owner_id, *id_holder);
      });
  *id_holder = id;
  return id;
}

void lock_service::ensure_subscribed(const std::shared_ptr<op>& o, clock::time_point until,
                                     channels level) {
  const bool queued = core_->cfg().lock_queue;
  // Without the queue there is no hand-off channel: the Redisson channel is all there is.
  if (!queued) level = channels::all;
  bool want_zero = false;
  bool want_handoff = false;
  bool ready = false;
  channels have = channels::none;
  std::uint64_t gen = 0;
  {
    std::lock_guard lk(mu_);
    entry& e = entries_[o->req.raw_name];
    have = e.level;
    if (e.level >= level) {
      ready = true;
    } else if (!e.subscribing) {
      e.subscribing = true;
      gen = ++e.sub_generation;
      want_zero = level == channels::all;
      want_handoff = queued && e.level == channels::none;
    }
  }
  if (ready) {
    step(o, [have](acquire_fsm& f) { return f.on_subscribed(clock::now(), {}, have); });
    return;
  }
  if (!want_zero && !want_handoff) {
    // Another waiter's subscribe is in flight; this one is told when it completes (and asks
    // for more then, if that was not enough). Its own deadline still bounds it through a timer.
    std::lock_guard lk(o->mu);
    // Between the service's mutex and this one, the in-flight subscribe may have completed and
    // moved the machine on (to an attempt, or a wait whose timer this must not replace).
    if (o->finished || !o->fsm.subscribing()) return;
    o->timer.cancel();
    o->timer.expires_at(until);
    o->timer.async_wait([self = shared_from_this(), o](std::error_code ec) {
      if (ec) return;
      channels now_have = channels::none;
      {
        std::lock_guard svc_lk(self->mu_);
        auto it = self->entries_.find(o->req.raw_name);
        if (it != self->entries_.end()) now_have = it->second.level;
      }
      self->step(o, [now_have](acquire_fsm& f) {
        return f.on_subscribed(clock::now(), make_error_code(errc::subscription_timeout), now_have);
      });
    });
    return;
  }
  const std::string name = o->req.raw_name;
  std::weak_ptr<lock_service> weak = weak_from_this();
  const channels target = level;
  // Every subscription started here (the Redisson channel, this process's hand-off channel)
  // must be confirmed before the waiters are told; the join collects them.
  struct join {
    std::mutex mu;
    int remaining = 0;
    std::error_code ec;
    subscription zero;
    subscription handoff;
  };
  auto j = std::make_shared<join>();
  j->remaining = (want_zero ? 1 : 0) + (want_handoff ? 1 : 0);
  // The op that asked is told too, should it not be in the entry's queue.
  auto complete = [weak, name, gen, j, target, requester = std::weak_ptr<op>(o)] {
    auto self = weak.lock();
    if (!self) return;
    std::vector<std::shared_ptr<op>> told;
    const std::error_code ec = j->ec;
    channels have_now = channels::none;
    {
      std::lock_guard lk(self->mu_);
      auto it = self->entries_.find(name);
      if (it == self->entries_.end() || it->second.sub_generation != gen || self->closed_) {
        return;  // superseded; the subscriptions unsubscribe as they go
      }
      entry& e = it->second;
      e.subscribing = false;
      if (!ec) {
        e.level = target;
        if (j->zero) e.sub_handle = std::move(j->zero);
        if (j->handoff) e.handoff_handle = std::move(j->handoff);
      }
      have_now = e.level;
      told.assign(e.queue.begin(), e.queue.end());
      if (auto r = requester.lock(); r && std::find(told.begin(), told.end(), r) == told.end()) {
        told.push_back(std::move(r));
      }
      self->maybe_linger_locked(name, e);
    }
    for (auto& w : told) {
      self->step(w, [ec, have_now](acquire_fsm& f) {
        return f.on_subscribed(clock::now(), ec, have_now);
      });
    }
  };
  auto arrive = [j, complete](std::error_code ec, subscription sub, bool is_handoff) {
    bool last = false;
    {
      std::lock_guard lk(j->mu);
      if (ec && !j->ec) j->ec = ec;
      (is_handoff ? j->handoff : j->zero) = std::move(sub);
      last = --j->remaining == 0;
    }
    if (last) complete();
  };
  if (want_zero) {
    core_->subscribe(
        channel_kind::classic, o->channel, name,
        [weak, name](const pubsub_event& ev) {
          // An unlock message (any payload) or a resubscription: the head re-checks.
          if (auto s = weak.lock()) {
            s->on_message(name, ev.what == pubsub_event::kind::resubscribed);
          }
        },
        until,
        [arrive](std::error_code ec, subscription sub) { arrive(ec, std::move(sub), false); });
  }
  if (want_handoff) {
    core_->subscribe(
        channel_kind::classic, process_handoff_channel(name, core_->id()), name,
        [weak, name](const pubsub_event& ev) {
          auto s = weak.lock();
          if (!s) return;
          if (ev.what == pubsub_event::kind::message) {
            s->on_handoff(name, ev.payload);
          } else {
            s->on_message(name, true);  // resubscribed: a hand-off may have been missed
          }
        },
        until,
        [arrive](std::error_code ec, subscription sub) { arrive(ec, std::move(sub), true); });
  }
}

void lock_service::on_message(const std::string& raw_name, bool resubscribed) {
  std::shared_ptr<op> head;
  {
    std::lock_guard lk(mu_);
    auto it = entries_.find(raw_name);
    if (it == entries_.end()) return;
    if (resubscribed) {
      // Messages may have been lost while the channel was down, the "0" expected below too.
      it->second.handoff_then_zero = false;
    } else if (it->second.handoff_then_zero) {
      // This "0" follows an rlock hand-off to this process (published by the same script,
      // delivered in order on the same connection): the lock is not free, nobody needs to look.
      it->second.handoff_then_zero = false;
      return;
    }
    if (it->second.queue.empty()) return;
    head = it->second.queue.front();
  }
  // Only the head of the local queue is woken: at most one acquire per process per message.
  step(head, [](acquire_fsm& f) { return f.on_wake(clock::now()); });
}

void lock_service::on_handoff(const std::string& raw_name, std::string_view payload) {
  // "<owner field> <server ms> <1 if a '0' on the Redisson channel follows, else 0> <token>"
  const auto sp1 = payload.find(' ');
  const auto sp2 = payload.find(' ', sp1 == std::string_view::npos ? sp1 : sp1 + 1);
  const auto sp3 = payload.find(' ', sp2 == std::string_view::npos ? sp2 : sp2 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
      sp3 == std::string_view::npos) {
    return;
  }
  const std::string_view owner = payload.substr(0, sp1);
  const std::string_view ms_text = payload.substr(sp1 + 1, sp2 - sp1 - 1);
  long long server_ms = -1;
  std::from_chars(ms_text.data(), ms_text.data() + ms_text.size(), server_ms);
  const bool zero_follows = payload.substr(sp2 + 1, sp3 - sp2 - 1) == "1";
  const std::string_view token = payload.substr(sp3 + 1);
  std::shared_ptr<op> target;
  {
    std::lock_guard lk(mu_);
    auto it = entries_.find(raw_name);
    if (it == entries_.end()) return;
    entry& e = it->second;
    // The "0" that follows reaches this process only if it listens on the Redisson channel.
    if (zero_follows && e.level == channels::all) e.handoff_then_zero = true;
    const std::string& me = core_->id();
    if (owner.size() <= me.size() + 1 || !owner.starts_with(me) || owner[me.size()] != ':') return;
    std::uint64_t owner_id = 0;
    const auto id_text = owner.substr(me.size() + 1);
    std::from_chars(id_text.data(), id_text.data() + id_text.size(), owner_id);
    // Only the acquire that queued the entry: a late message for an earlier acquire of the
    // same owner (which learned it held the lock another way, and has unlocked since) must not
    // make a later one believe it holds a lock that is someone else's.
    for (auto& q : e.queue) {
      if (q->req.owner_id == owner_id && q->token == token) {
        target = q;
        break;
      }
    }
  }
  if (!target) return;
  step(target, [o = target.get(), server_ms,
                liveness = core_->cfg().lock_queue_liveness](acquire_fsm& f) {
    // The lease started at server time `server_ms`. The latest "still queued" reply carried
    // server time T for a request sent at local time S, so local(server_ms) >= S +
    // (server_ms - T): a lower bound of the lease's start on our clock. Without such a reply
    // (the message came first) the first attempt's send time is one: it queued the entry.
    const auto now = clock::now();
    if (o->enqueue_server_ms >= 0 && server_ms >= o->enqueue_server_ms) {
      o->lease_from = std::min(
          now, o->enqueue_sent_at + std::chrono::milliseconds(server_ms - o->enqueue_server_ms));
    } else {
      o->lease_from = o->first_sent_at;
    }
    o->handed_end = o->handed_deadline(liveness);
    return f.on_handed(now);
  });
}

void lock_service::arm_refresh_locked(const std::string& raw_name, entry& e) {
  if (e.refresh_armed || closed_) return;
  if (!e.refresh) e.refresh = std::make_unique<asio::steady_timer>(core_->io());
  e.refresh_armed = true;
  e.refresh->expires_after(core_->cfg().lock_queue_liveness / 3);
  e.refresh->async_wait([weak = weak_from_this(), raw_name](std::error_code ec) {
    if (ec) return;
    if (auto self = weak.lock()) self->refresh(raw_name);
  });
}

void lock_service::refresh(const std::string& raw_name) {
  std::vector<std::shared_ptr<op>> waiting;
  {
    std::lock_guard lk(mu_);
    auto it = entries_.find(raw_name);
    if (it == entries_.end()) return;
    entry& e = it->second;
    e.refresh_armed = false;
    for (auto& q : e.queue) {
      if (q->enqueued) waiting.push_back(q);
    }
    if (e.queue.empty()) return;
    arm_refresh_locked(raw_name, e);
  }
  if (waiting.empty()) return;
  const std::string queue = queue_key(raw_name);
  const std::string liveness = std::to_string(core_->cfg().lock_queue_liveness.count());
  std::vector<std::string_view> args = {liveness};
  for (auto& w : waiting) args.emplace_back(w->owner);
  const std::string_view keys[] = {raw_name, queue};
  exec_options opts;
  opts.idempotent = true;
  const auto sent = clock::now();
  opts.deadline = sent + core_->cfg().lock_queue_liveness / 3;
  core_->eval(lock_queue_refresh_script(), keys, args, opts,
              [self = shared_from_this(), waiting, sent, raw_name,
               liveness = core_->cfg().lock_queue_liveness](exec_result res) {
                const auto outcome = decode_refresh(res, waiting.size());
                if (!outcome) {
                  return;  // the next refresh tries again; entries live for the full liveness
                }
                // Listening on the Redisson channel: no need to look again behind a holder
                // that does not hand over.
                bool hear_zero = false;
                {
                  std::lock_guard svc_lk(self->mu_);
                  auto it = self->entries_.find(raw_name);
                  hear_zero = it != self->entries_.end() && it->second.level == channels::all;
                }
                // The answering attempt's send time (a resend's own).
                const auto asked = res.sent_at != clock::time_point{} ? res.sent_at : sent;
                for (std::size_t i = 0; i < waiting.size(); ++i) {
                  const int status = outcome->status[i];
                  auto& w = waiting[i];
                  if (status == 1) {
                    // Handed over, and the message did not arrive (yet): the lease started
                    // after the latest request that found this waiter still queued was sent
                    // (this refresh was sent before the hand-off only if it found it).
                    self->step(w, [o = w.get(), liveness](acquire_fsm& f) {
                      o->lease_from =
                          o->enqueue_server_ms >= 0 ? o->enqueue_sent_at : o->first_sent_at;
                      o->handed_end = o->handed_deadline(liveness);
                      return f.on_handed(clock::now());
                    });
                  } else if (status == 2 || status == 3) {
                    // Still queued at server time T for a request sent at `asked`: a later
                    // hand-off's lease starts after it.
                    {
                      std::lock_guard op_lk(w->mu);
                      if (!w->finished && asked >= w->enqueue_sent_at) {
                        w->enqueue_sent_at = asked;
                        w->enqueue_server_ms = outcome->server_ms;
                      }
                    }
                    if (status == 3 && !hear_zero) {
                      // A holder that does not hand over (a Java Redisson client) took the
                      // lock since the waiter queued behind one that does: its unlock is
                      // announced only on the Redisson channel. The waiter looks again; the
                      // reply makes it subscribe there.
                      self->step(w, [](acquire_fsm& f) { return f.on_wake(clock::now()); });
                    }
                  } else if (status == 0) {
                    // Dropped as stale (this process was paused or cut off): queue again.
                    self->step(w, [](acquire_fsm& f) { return f.on_wake(clock::now()); });
                  }
                }
              });
}

void lock_service::finish(const std::shared_ptr<op>& o, const acquire_fsm::action& a,
                          std::unique_lock<std::mutex>& lk) {
  o->finished = true;
  o->timer.cancel();
  lk.unlock();
  if (o->lost_hold.stop_possible()) o->lost_hold.request_stop();
  bool keep = a.acquired && !a.release;
  // A first acquire whose reply came after its lease could have run out (the lease is counted
  // from the send time of the answering attempt: the server may have applied it at once) is not
  // returned as held: nobody can tell whether the lock is still this owner's. It is undone like
  // an abandoned acquire and, if the caller's wait allows, tried again (behind the undo).
  // A hand-off's TTL may end sooner, at the queue entry's deadline (a waiter that died since
  // its last refresh holds the lock no longer); it is extended to the lease below.
  const auto lease_from = o->lease_from.value_or(o->sent_at);
  auto lease_end = lease_from + o->lease;
  if (o->handed_end && *o->handed_end < lease_end) lease_end = *o->handed_end;
  const auto granted =
      std::max(std::chrono::duration_cast<std::chrono::milliseconds>(lease_end - lease_from),
               std::chrono::milliseconds(0));
  const bool stale =
      keep && o->prior_count == 0 && lease_end - stale_margin(granted) <= clock::now();
  if (stale) keep = false;
  // A re-entry of a hold that was reported lost while the re-entry was in flight (on_lost
  // cleared the hold's registration): its success must not be added to that hold, which nobody
  // renews and whose loss signal has fired. It is undone and, within the caller's wait, tried
  // again as a first acquire (start() drops the lost hold).
  bool lost_reentry = false;
  if (keep && o->prior_count > 0 && !o->watchdog_added_here) {
    std::lock_guard svc_lk(mu_);
    if (entries_.contains(o->req.raw_name)) {
      const hold* h = find_hold_locked(o->req.raw_name, o->req.owner_id);
      lost_reentry = h == nullptr || h->watchdog_id != o->watchdog_id || h->lost.stop_requested();
    }
  }
  if (lost_reentry) keep = false;
  const bool may_hold = stale || lost_reentry || (a.release && (a.acquired || o->last_written));
  if (may_hold || (!keep && o->enqueued)) release_or_leave(o);
  std::shared_ptr<op> next;
  std::shared_ptr<op> same_owner_next;  // a parked acquire of this owner, free to start now
  std::vector<std::function<void(bool)>> unlocks;  // parked behind this re-entry
  std::optional<clock::time_point> held_until;
  channels next_subscribed = channels::none;
  std::stop_source shut_out(std::nostopstate);
  {
    std::lock_guard svc_lk(mu_);
    const auto key = std::make_pair(o->req.raw_name, o->req.owner_id);
    acquiring_.erase(key);
    same_owner_next = next_parked_locked(key);  // after this op's count is in `holds`, below
    if (undo_in_flight_.count(key) == 0) unlocks = take_parked_unlocks_locked(key);
    entry& e = entries_[o->req.raw_name];
    if (keep) {
      hold& h = e.holds[o->req.owner_id];
      ++h.count;
      h.watchdog_id = o->watchdog_id;
      h.lease = o->lease;
      h.renew = h.renew || o->renew;
      // Completed after shutdown() began: never renewed, as lost as the holds it stopped.
      if (closed_) shut_out = h.lost;
    } else if (o->watchdog_added_here) {
      watchdog_->remove(o->watchdog_id);
    }
    if (o->queued) {
      const bool was_head = !e.queue.empty() && e.queue.front() == o;
      std::erase(e.queue, o);
      if (was_head && !e.queue.empty()) {
        next = e.queue.front();
        if (keep) held_until = clock::now() + o->lease;
        next_subscribed = e.level;
      }
    }
    maybe_linger_locked(o->req.raw_name, e);
  }
  // A re-entry too: its script reset the TTL to its own lease.
  if (keep) {
    // A renewed hold's first renewal round comes within a third of `granted` (its script at
    // most halfway from there to the deadline); an explicit lease cut short by a hand-off is
    // extended to its end at once.
    watchdog_->activate(o->watchdog_id, lease_from, granted, o->renew);
    if (granted < o->lease && !o->renew) {
      extend_handed(o->req.raw_name, o->owner, o->watchdog_id, lease_from + o->lease);
    }
  }
  if (shut_out.stop_possible()) shut_out.request_stop();
  if (next) {
    step(next, [held_until, next_subscribed](acquire_fsm& f) {
      return f.on_turn(clock::now(), held_until, next_subscribed);
    });
  }
  // In call order: a parked unlock goes before a parked acquire (which then sees its result).
  for (auto& f : unlocks) f(true);
  if (same_owner_next) resume_parked(same_owner_next);
  auto done = std::move(o->done);
  if ((stale || lost_reentry) && !o->req.single_attempt && clock::now() < o->req.deadline &&
      !o->req.stop.stop_requested()) {
    // A copy: a reply or timer of this op may still be running on another I/O thread and read
    // o->req (its name) before it sees that the op has finished.
    acquire(o->req, std::move(done));  // starts once the undo has landed
    return;
  }
  if (!keep && a.ec && a.ec == o->last_error && o->req.error_detail != nullptr) {
    *o->req.error_detail = o->last_error_detail;
  }
  if (done) done(keep ? std::error_code{} : a.ec, keep);
}

void lock_service::extend_handed(const std::string& raw_name, const std::string& owner,
                                 std::uint64_t watchdog_id, clock::time_point lease_end) {
  const auto sent = clock::now();
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(lease_end - sent);
  if (left <= std::chrono::milliseconds(0)) return;
  const std::string left_s = std::to_string(left.count());
  const std::string_view keys[] = {raw_name};
  const std::string_view args[] = {left_s, owner};
  exec_options opts;
  // One attempt, as renewals (watchdog.cpp): a resend could come after the owner's unlock and
  // extend its next hold. Until the reply, the hold counts on the hand-off's TTL only.
  opts.idempotent = false;
  opts.max_attempts = 1;
  opts.deadline = std::min(sent + core_->cfg().timeout, watchdog_->valid_until(watchdog_id));
  core_->eval(lock_renew_script(), keys, args, opts,
              [weak = weak_from_this(), watchdog_id, sent, left](exec_result res) {
                auto self = weak.lock();
                if (!self) return;
                const auto renewed = decode_renew(res, 1);
                if (renewed && (*renewed)[0]) {
                  self->watchdog_->activate(watchdog_id, sent, left, false);
                }
              });
}

void lock_service::resume_parked(const std::shared_ptr<op>& o) {
  o->timer.cancel();  // the parking deadline; the state machine arms its own
  start(o);
}

void lock_service::release_or_leave(const std::shared_ptr<op>& o) {
  // The acquire may have been applied (reply lost, handed over, or it came after a stop
  // request): undo it only if the owner's count shows exactly that acquire, then let waiters
  // know. In queued mode the same script removes the waiter from the queue.
  // Until this clean-up has landed, the same owner's next acquire waits: its count check could
  // otherwise match (and release) that later acquire.
  auto u = std::make_shared<undo>();
  u->key = std::make_pair(o->req.raw_name, o->req.owner_id);
  u->channel = o->channel;
  u->owner = o->owner;
  u->lease = o->lease;
  u->expected = std::to_string(o->prior_count + 1);
  u->latch = unlock_latch(o->req.raw_name, random_request_id());
  // Every attempt of the acquire was sent before now; a hold it left (or a hand-off to it) ends
  // within its lease (the queue entry's liveness) from then.
  u->hold_gone_by = clock::now() + std::max(o->lease, core_->cfg().lock_queue_liveness);
  {
    std::lock_guard lk(o->mu);
    u->fence = o->unknown_on;
  }
  {
    std::lock_guard lk(mu_);
    ++undo_in_flight_[u->key];
  }
  send_undo(u);
}

void lock_service::send_unlock(unlock_request r, exec_callback done) {
  const std::string latch =
      r.latch.empty() ? unlock_latch(r.raw_name, random_request_id()) : std::move(r.latch);
  const std::string lease_s = std::to_string(r.lease.count());
  const auto& cfg = core_->cfg();
  const std::string latch_ttl =
      std::to_string((cfg.timeout + cfg.retry_delay_max).count() * cfg.retry_attempts);
  exec_options opts;
  opts.idempotent = true;  // the latch returns the first result to any later attempt
  // And a resend closes the connections an earlier attempt may still run on (the latch is the
  // protection where the server refuses that).
  opts.close_unknown = true;
  opts.fence = std::move(r.fence);
  opts.completes_on_caller = r.completes_on_caller;
  const bool queued = cfg.lock_queue;
  const std::string queue = queued ? queue_key(r.raw_name) : std::string();
  const std::vector<std::string> spent = spent_latches_.take(r.raw_name);
  const auto keys = queued ? with_spent({r.raw_name, r.channel, latch, queue}, spent)
                           : with_spent({r.raw_name, r.channel, latch}, spent);
  // ARGV[4], the expected count, only when there is one (any count without it).
  const std::string_view args_all[] = {lease_s, r.owner, latch_ttl, r.expected};
  const std::span<const std::string_view> args(args_all, r.expected.empty() ? 3 : 4);
  core_->eval(queued ? lock_unlock_queued_script() : lock_unlock_script(), keys, args, opts,
              [self = shared_from_this(), raw_name = r.raw_name, latch,
               sent_before = r.latch_sent_before, done = std::move(done)](exec_result res) {
                // Answered, and no earlier attempt can still run: nothing will read the latch
                // again.
                if (!res.ec && !res.earlier_attempt_may_have_run && !sent_before) {
                  self->spent_latches_.put(raw_name, latch);
                }
                done(std::move(res));
              });
}

void lock_service::maybe_linger_locked(const std::string& raw_name, entry& e) {
  if (!e.queue.empty() || closed_ || e.subscribing) return;
  if (e.level == channels::none) {
    if (e.holds.empty()) entries_.erase(raw_name);
    return;
  }
  if (!e.linger) e.linger = std::make_unique<asio::steady_timer>(core_->io());
  e.linger->expires_after(subscription_linger);
  e.linger->async_wait([weak = weak_from_this(), raw_name](std::error_code ec) {
    if (ec) return;
    auto self = weak.lock();
    if (!self) return;
    subscription gone;  // both unsubscribe outside the lock
    subscription gone_handoff;
    {
      std::lock_guard lk(self->mu_);
      auto it = self->entries_.find(raw_name);
      if (it == self->entries_.end() || !it->second.queue.empty()) return;
      gone = std::move(it->second.sub_handle);
      gone_handoff = std::move(it->second.handoff_handle);
      it->second.level = channels::none;
      // A subscribe still in flight (an upgrade asked for by a waiter that has left since) is
      // superseded: its completion is ignored, so it must not leave the entry "subscribing".
      it->second.subscribing = false;
      ++it->second.sub_generation;
      if (it->second.holds.empty()) {
        // The timer being run belongs to this entry: keep it alive until this handler returns.
        auto keep = std::move(it->second.linger);
        self->entries_.erase(it);
        asio::post(self->core_->io(),
                   [k = std::shared_ptr<asio::steady_timer>(std::move(keep))] {});
      }
    }
  });
}

// ---- holds, loss, unlock ----

std::vector<std::function<void(bool)>> lock_service::take_parked_unlocks_locked(
    const std::pair<std::string, std::uint64_t>& key) {
  std::vector<std::function<void(bool)>> out;
  if (auto u = unlocks_after_undo_.find(key); u != unlocks_after_undo_.end()) {
    out = std::move(u->second);
    unlocks_after_undo_.erase(u);
  }
  return out;
}

void lock_service::on_lost(const std::string& raw_name, std::uint64_t owner_id,
                           std::uint64_t wd_id) {
  std::stop_source src;
  {
    std::lock_guard lk(mu_);
    hold* h = find_hold_locked(raw_name, owner_id);
    if (h == nullptr || h->watchdog_id != wd_id) return;
    src = h->lost;
    // Keep the hold record (count) so that unlock() reaches the server and reports not_owner;
    // the watchdog has already dropped it.
    h->watchdog_id = 0;
  }
  src.request_stop();
}

lock_service::hold* lock_service::find_hold_locked(const std::string& raw_name,
                                                   std::uint64_t owner_id) {
  const auto it = entries_.find(raw_name);
  if (it == entries_.end()) return nullptr;
  const auto h = it->second.holds.find(owner_id);
  return h == it->second.holds.end() ? nullptr : &h->second;
}

std::stop_token lock_service::loss_token(const std::string& raw_name, std::uint64_t owner_id) {
  std::lock_guard lk(mu_);
  if (const hold* h = find_hold_locked(raw_name, owner_id)) return h->lost.get_token();
  std::stop_source not_held;
  not_held.request_stop();
  return not_held.get_token();
}

clock::time_point lock_service::valid_until(const std::string& raw_name, std::uint64_t owner_id) {
  std::uint64_t id = 0;
  {
    std::lock_guard lk(mu_);
    const hold* h = find_hold_locked(raw_name, owner_id);
    if (h == nullptr) return clock::time_point::min();
    id = h->watchdog_id;
  }
  return id == 0 ? clock::time_point::min() : watchdog_->valid_until(id);
}

void lock_service::unlock(const std::string& raw_name, std::uint64_t owner_id, unlock_callback done,
                          std::string* error_detail, bool completes_on_caller, bool was_parked) {
  std::chrono::milliseconds lease = core_->cfg().lock_watchdog_timeout;
  // Set when this unlock cancelled the hold's renewal.
  bool renewal_cancelled = false;
  {
    std::lock_guard lk(mu_);
    const auto key = std::make_pair(raw_name, owner_id);
    // A re-entry of this owner in flight (the async API lets one owner call async_lock and
    // async_unlock at once): the unlock goes after it. Sent at once, its reply could be
    // handled before the re-entry's although the server ran it after (a pool's other
    // connection), and the re-entry would be counted on a hold the unlock had just ended.
    const bool reentry_in_flight = !was_parked && acquiring_.count(key) != 0 &&
                                   find_hold_locked(raw_name, owner_id) != nullptr;
    if (undo_in_flight_.count(key) != 0 || reentry_in_flight) {
      // After the undo of this owner's acquire that gave up, or after its re-entry: see
      // unlocks_after_undo_. Bounded by the undo's own retries, or the re-entry's (which is
      // never queued; refused, it drops the hold and lets the unlock go: not_owner). After
      // shutdown() by the client's close, which completes every request.
      unlocks_after_undo_[key].push_back([self = shared_from_this(), raw_name, owner_id,
                                          error_detail, done = std::move(done)](bool send) mutable {
        if (send) {
          self->unlock(raw_name, owner_id, std::move(done), error_detail, false, true);
        } else {
          done(make_error_code(errc::shutdown));
        }
      });
      hurry_undos_locked(key);
      return;
    }
    if (hold* h = find_hold_locked(raw_name, owner_id)) {
      // The TTL left behind when holds remain: a renewed hold keeps the watchdog's lease (an
      // explicit lease of an inner hold must not cut it short), otherwise the last acquire's
      // lease (Redisson's internalLockLeaseTime).
      if (!h->renew) lease = h->lease;
      if (h->count <= 1) {
        // The final unlock. Renewal is cancelled before it is sent: no renewal can outlive it
        // (Redisson #7272).
        renewal_cancelled = true;
        if (h->watchdog_id != 0) watchdog_->remove(h->watchdog_id);
        h->watchdog_id = 0;
      }
    }
  }
  const auto sent_at = clock::now();
  unlock_request r;
  r.raw_name = raw_name;
  r.channel = lock_channel(raw_name);
  r.owner = owner_field(owner_id);
  r.lease = lease;
  r.completes_on_caller = completes_on_caller;
  send_unlock(
      std::move(r), [self = shared_from_this(), raw_name, owner_id, renewal_cancelled, error_detail,
                     lease, sent_at, done = std::move(done)](exec_result res) {
        const unlock_outcome outcome = decode_unlock(res);
        std::error_code ec = outcome.ec;
        if (ec && error_detail != nullptr) *error_detail = res.detail;
        const bool not_owner = !ec && outcome.result == unlock_result::not_owner;
        const bool released = !ec && outcome.result == unlock_result::released;
        std::stop_source lost;
        bool signal_loss = false;
        bool again = false;
        {
          std::lock_guard lk(self->mu_);
          auto it = self->entries_.find(raw_name);
          if (it != self->entries_.end()) {
            entry& e = it->second;
            auto h = e.holds.find(owner_id);
            if (h != e.holds.end() && ec && !renewal_cancelled) {
              // A partial unlock that failed, whether or not it ran (an unknown outcome, or
              // refused: OOM, NOPERM, READONLY...): counted as run, since its caller is told it
              // failed and should not repeat it (unlock() does not even say so). The final
              // unlock then releases whatever is left; see hold::unsure.
              if (h->second.count > 1) --h->second.count;
              ++h->second.unsure;
            } else if (h != e.holds.end() && ec && renewal_cancelled) {
              // The final unlock failed, its outcome possibly unknown, and renewal was
              // cancelled before it was sent. The hold is reported lost: it is no
              // longer renewed, so its lease runs out on the server unless the unlock
              // was applied. (Renewing it again would keep a lock whose owner believes
              // it released alive for as long as the client runs.) The owner's next
              // acquire starts afresh.
              lost = h->second.lost;
              signal_loss = true;
            } else if (h != e.holds.end() && !ec) {
              if (not_owner) {
                // The lock was already gone: the holder is told, if it was not yet.
                lost = h->second.lost;
                signal_loss = true;
              }
              if (!released && !not_owner && renewal_cancelled && h->second.unsure > 0) {
                // The final unlock left holds: a partial unlock before it had not run.
                --h->second.unsure;
                again = true;
              } else if (released || not_owner || --h->second.count <= 0) {
                if (h->second.watchdog_id != 0) self->watchdog_->remove(h->second.watchdog_id);
                e.holds.erase(h);
              } else if (h->second.watchdog_id != 0) {
                // Holds remain and the script reset the TTL to `lease`: the local deadline
                // follows (a later send's reply, such as a renewal's, comes after this one).
                // From the first send: a resent unlock's latch may return an earlier attempt's
                // result, applied before the resend.
                self->watchdog_->activate(h->second.watchdog_id, sent_at, lease, h->second.renew);
              }
            }
            self->maybe_linger_locked(raw_name, e);
          }
        }
        if (signal_loss) lost.request_stop();
        if (again) {
          // A copy: `done` is const in this lambda.
          self->unlock(raw_name, owner_id, done, error_detail, false);
          return;
        }
        if (not_owner) ec = make_error_code(errc::not_owner);
        done(ec);
      });
}

void lock_service::force_unlock(const std::string& raw_name,
                                std::function<void(std::error_code, bool)> done,
                                std::string* error_detail) {
  const std::string channel = lock_channel(raw_name);
  const bool queued = core_->cfg().lock_queue;
  const std::string queue = queued ? queue_key(raw_name) : std::string();
  const std::string_view keys_plain[] = {raw_name, channel};
  // Queued mode: the lock goes to the first live waiter, like on an unlock (its waiters listen
  // only on their hand-off channels while an rlock client holds the lock).
  const std::string_view keys_queued[] = {raw_name, channel, queue};
  const std::span<const std::string_view> keys =
      queued ? std::span<const std::string_view>(keys_queued) : keys_plain;
  const std::string_view args[] = {"0"};
  exec_options opts;
  // Never resent: a resend whose first copy ran (reply lost) would delete the lock the first
  // copy just handed to the first waiter and hand it to the next one (two holders), or delete
  // the lock of whoever took it in between. An unknown outcome is reported as such.
  opts.idempotent = false;
  // The local holds a forced unlock takes away: those that exist when it is sent. A hold made
  // later (a waiter of this process handed the lock by this very script) keeps its lock.
  std::vector<std::stop_source> victims;
  {
    std::lock_guard lk(mu_);
    auto it = entries_.find(raw_name);
    if (it != entries_.end()) {
      for (const auto& [owner, h] : it->second.holds) victims.push_back(h.lost);
    }
  }
  core_->eval(queued ? lock_force_unlock_queued_script() : lock_force_unlock_script(), keys, args,
              opts,
              [self = shared_from_this(), raw_name, error_detail, victims = std::move(victims),
               done = std::move(done)](exec_result res) {
                std::error_code ec;
                const bool existed = decode_force_unlock(res, ec).value_or(false);
                if (ec && error_detail != nullptr) *error_detail = res.detail;
                std::vector<std::stop_source> lost;
                if (existed) {
                  // Local holders lost the lock: stop renewing and tell them now.
                  std::lock_guard lk(self->mu_);
                  auto it = self->entries_.find(raw_name);
                  if (it != self->entries_.end()) {
                    for (auto& [owner, h] : it->second.holds) {
                      if (std::find(victims.begin(), victims.end(), h.lost) == victims.end())
                        continue;
                      if (h.watchdog_id != 0) self->watchdog_->remove(h.watchdog_id);
                      h.watchdog_id = 0;
                      lost.push_back(h.lost);
                    }
                  }
                }
                for (auto& s : lost) s.request_stop();
                done(ec, existed);
              });
}

}  // namespace rlock::detail
