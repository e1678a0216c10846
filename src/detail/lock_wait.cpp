// Waiting for a lock held elsewhere (lock_service): the lock's channel subscriptions and their
// linger, Redisson's unlock messages, queued mode's hand-off messages, and the liveness refresh
// of this process's queued waiters.
#include <algorithm>
#include <charconv>
#include <string>
#include <string_view>

#include "detail/lock_keys.hpp"
#include "detail/lock_replies.hpp"
#include "detail/lock_scripts.hpp"
#include "detail/lock_service.hpp"
#include "detail/lock_service_op.hpp"

namespace rlock::detail {
namespace {

// How long a lock channel stays subscribed after its last local waiter left, so that a busy
// lock does not pay SUBSCRIBE/UNSUBSCRIBE for every hand-off.
constexpr std::chrono::seconds subscription_linger{10};

}  // namespace

void lock_service::subscribe_fair_waiter(const std::shared_ptr<op>& o, clock::time_point until) {
  std::weak_ptr<op> weak = o;
  std::weak_ptr<lock_service> svc = weak_from_this();
  core_->subscribe(
      channel_kind::classic, fair_waiter_channel(o->req.raw_name, o->owner), o->req.raw_name,
      [weak, svc](const pubsub_event&) {
        // "0": the lock is free and this waiter the head; or the channel was subscribed again
        // after a reconnection, when that message may have been missed. Look either way.
        auto op_ptr = weak.lock();
        auto s = svc.lock();
        if (op_ptr && s) s->step(op_ptr, [](acquire_fsm& f) { return f.on_wake(clock::now()); });
      },
      until,
      [weak, svc](std::error_code ec, subscription sub) {
        auto op_ptr = weak.lock();
        auto s = svc.lock();
        if (!op_ptr || !s) return;  // `sub` unsubscribes as it goes
        {
          std::lock_guard lk(op_ptr->mu);
          if (op_ptr->finished) return;
          if (!ec) op_ptr->own_sub = std::move(sub);
        }
        const std::string why = s->subscribe_failure_detail(*op_ptr, ec);
        s->step(op_ptr, [&op_ptr, ec, &why](acquire_fsm& f) {
          note_subscribe_failure(*op_ptr, ec, why);
          return f.on_subscribed(clock::now(), ec, ec ? channels::none : channels::all);
        });
      });
}

std::string lock_service::subscribe_failure_detail(const op& o, std::error_code ec) const {
  if (ec != errc::subscription_timeout) return {};  // the others' codes say why themselves
  return core_->subscription_timeout_detail("the lock's channels", o.channel, o.req.raw_name);
}

void lock_service::note_subscribe_failure(op& o, std::error_code ec, const std::string& why) {
  if (why.empty()) return;
  o.last_error = ec;
  o.last_error_detail = why;
}

void lock_service::ensure_subscribed(const std::shared_ptr<op>& o, clock::time_point until,
                                     channels level) {
  if (o->req.kind == lock_kind::fair) {
    subscribe_fair_waiter(o, until);
    return;
  }
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
      const std::error_code timed_out = make_error_code(errc::subscription_timeout);
      const std::string why = self->subscribe_failure_detail(*o, timed_out);
      self->step(o, [&o, timed_out, &why, now_have](acquire_fsm& f) {
        note_subscribe_failure(*o, timed_out, why);
        return f.on_subscribed(clock::now(), timed_out, now_have);
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
      // A fair waiter listens on its own channel (subscribe_fair_waiter).
      if (w->req.kind == lock_kind::fair) continue;
      const std::string why = self->subscribe_failure_detail(*w, ec);
      self->step(w, [&w, ec, &why, have_now](acquire_fsm& f) {
        note_subscribe_failure(*w, ec, why);
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

}  // namespace rlock::detail
