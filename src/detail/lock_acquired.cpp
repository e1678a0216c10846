// The end of an acquire: the hold registered with the watchdog, a reply that came too late for
// its lease undone, the caller told; and the lease of a lock handed over by an unlock extended
// to the watchdog's.
#include <algorithm>
#include <string_view>

#include "detail/lock_keys.hpp"
#include "detail/lock_replies.hpp"
#include "detail/lock_scripts.hpp"
#include "detail/lock_service.hpp"
#include "detail/lock_service_op.hpp"
#include "detail/replica_sync.hpp"

namespace rlock::detail {
namespace {

// How much of a lease must be left when an acquire's reply arrives for the acquire to count:
// a tenth of the lease, at most one second.
clock::duration stale_margin(std::chrono::milliseconds lease) {
  return std::min<clock::duration>(lease / 10, std::chrono::seconds(1));
}

}  // namespace

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

void lock_service::finish(const std::shared_ptr<op>& o, const acquire_fsm::action& a,
                          std::unique_lock<std::mutex>& lk) {
  o->finished = true;
  const int attempts = o->fsm.attempts();
  o->timer.cancel();
  // A fair waiter's channel: unsubscribed as this goes out of scope, after the lock is released.
  const subscription own_sub = std::move(o->own_sub);
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
  const bool may_hold =
      stale || lost_reentry || (a.release && (a.acquired || o->last_may_have_run));
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
  const bool unconfirmed = !keep && a.ec == errc::replication_not_confirmed;
  if (unconfirmed && !o->req.single_attempt && !o->req.stop.stop_requested()) {
    // Taken on the master, not confirmed by the replicas, and being undone: tried again, as
    // Redisson does, behind the undo (acquire() parks it until the undo has landed, so that
    // its count check cannot match the hold being undone), after retry_delay's back-off.
    const auto& cfg = core_->cfg();
    const auto now = clock::now();
    const int tries = o->req.unconfirmed_tries + 1;
    if (const auto in = next_unconfirmed_try_in(cfg, tries, now, o->req.deadline)) {
      acquire_request again = o->req;
      again.unconfirmed_tries = tries;
      again.unconfirmed_detail = o->last_error_detail;
      again.not_before = now + *in;
      acquire(std::move(again), std::move(done));
      return;
    }
  }
  if (!keep && a.ec && o->req.error_detail != nullptr) {
    const int tries = o->req.unconfirmed_tries + (attempts > 0 ? 1 : 0);
    if (a.ec == o->last_error) {
      *o->req.error_detail =
          unconfirmed ? after_tries(o->last_error_detail, tries) : o->last_error_detail;
    } else if (unconfirmed && o->req.unconfirmed_tries > 0) {
      // The deadline came before this try's attempt, or cut its reply off: the error of the try
      // before it stands.
      *o->req.error_detail = after_tries(o->req.unconfirmed_detail, tries);
    }
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

}  // namespace rlock::detail
