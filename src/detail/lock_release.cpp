// Holds and their release (lock_service): the unlock script, the local view of a hold (loss
// token, lease deadline), a lost hold, unlock and force_unlock.
#include <algorithm>
#include <initializer_list>
#include <span>
#include <string_view>

#include "detail/lock_keys.hpp"
#include "detail/lock_replies.hpp"
#include "detail/lock_scripts.hpp"
#include "detail/lock_service.hpp"
#include "detail/lock_service_op.hpp"
#include "detail/once_request.hpp"
#include "detail/replica_sync.hpp"

namespace rlock::detail {
namespace {

// A script's keys followed by the spent unlock latches it deletes (spent_latches.hpp).
std::vector<std::string_view> with_spent(std::initializer_list<std::string_view> keys,
                                         const std::vector<std::string>& spent) {
  std::vector<std::string_view> out(keys);
  out.insert(out.end(), spent.begin(), spent.end());
  return out;
}

}  // namespace

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
  if (r.sync_replicas && r.confirm) {
    ask_replicas_until_confirmed(cfg, opts);
  } else if (r.sync_replicas) {
    ask_replicas(cfg, opts);
  }
  const bool spin = r.kind == lock_kind::spin;
  const bool fair = r.kind == lock_kind::fair;
  const bool queued = cfg.lock_queue && r.kind == lock_kind::reentrant;
  const std::string queue = queued ? queue_key(r.raw_name)
                            : fair ? fair_queue_key(r.raw_name)
                                   : std::string();
  const std::string timeouts = fair ? fair_timeout_key(r.raw_name) : std::string();
  const std::vector<std::string> spent = spent_latches_.take(r.raw_name);
  const auto keys = spin     ? with_spent({r.raw_name, latch}, spent)
                    : fair   ? with_spent({r.raw_name, queue, timeouts, r.channel, latch}, spent)
                    : queued ? with_spent({r.raw_name, r.channel, latch, queue}, spent)
                             : with_spent({r.raw_name, r.channel, latch}, spent);
  const script& s = spin     ? spin_lock_unlock_script()
                    : fair   ? fair_lock_unlock_script()
                    : queued ? lock_unlock_queued_script()
                             : lock_unlock_script();
  // ARGV[4], the expected count, only when there is one (any count without it); ARGV[5], a fair
  // lock's wait time, only with it (an undo, which leaves the fair queue).
  const std::string_view args_all[] = {lease_s, r.owner, latch_ttl, r.expected, r.fair_leave_wait};
  const std::size_t argc = r.expected.empty() ? 3 : r.fair_leave_wait.empty() ? 4 : 5;
  const std::span<const std::string_view> args(args_all, argc);
  core_->eval(s, keys, args, opts,
              [self = shared_from_this(), raw_name = r.raw_name, latch,
               sent_before = r.latch_sent_before, done = std::move(done)](exec_result res) {
                // Answered, and no earlier attempt can still run: nothing will read the latch
                // again.
                if (answered_once(res) && !sent_before) {
                  self->core_->spent().put(self->spent_latches_.put(raw_name, latch));
                }
                done(std::move(res));
              });
}

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

void lock_service::wake_local_head(const std::string& raw_name) {
  std::shared_ptr<op> head;
  {
    std::lock_guard lk(mu_);
    auto it = entries_.find(raw_name);
    if (it == entries_.end() || it->second.queue.empty()) return;
    head = it->second.queue.front();
  }
  step(head, [](acquire_fsm& f) { return f.on_wake(clock::now()); });
}

void lock_service::unlock(const std::string& raw_name, std::uint64_t owner_id, lock_kind kind,
                          unlock_callback done, std::string* error_detail, bool completes_on_caller,
                          bool was_parked, bool confirm) {
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
      unlocks_after_undo_[key].push_back([self = shared_from_this(), raw_name, owner_id, kind,
                                          error_detail, confirm,
                                          done = std::move(done)](bool send) mutable {
        if (send) {
          self->unlock(raw_name, owner_id, kind, std::move(done), error_detail, false, true,
                       confirm);
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
  r.kind = kind;
  r.sync_replicas = true;
  r.confirm = confirm;
  send_unlock(std::move(r), [self = shared_from_this(), raw_name, owner_id, kind, renewal_cancelled,
                             error_detail, lease, sent_at, confirm,
                             done = std::move(done)](exec_result res) {
    const unlock_outcome outcome = decode_unlock(res);
    std::error_code ec = outcome.ec;
    if (ec && error_detail != nullptr) *error_detail = res.detail;
    // Ran on the master (released, or holds left) without the replicas asked for: the
    // hold is updated as for any answered unlock, and the caller told afterwards.
    const bool unconfirmed = !ec && outcome.result != unlock_result::not_owner &&
                             !replicas_confirmed(self->core_->cfg(), res);
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
      self->unlock(raw_name, owner_id, kind, done, error_detail, false, false, confirm);
      return;
    }
    if (released && kind == lock_kind::spin) self->wake_local_head(raw_name);
    if (not_owner) ec = make_error_code(errc::not_owner);
    if (unconfirmed) {
      // A caller's unlock is reported as an event too: unlock() (a lock guard's) ignores errors.
      if (confirm) emit_not_confirmed(*self->core_, raw_name, res, "released");
      ec = make_error_code(errc::replication_not_confirmed);
      if (error_detail != nullptr) {
        *error_detail = after_tries(not_confirmed_detail(self->core_->cfg(), res, "released"),
                                    res.confirm_sends);
      }
    }
    done(ec);
  });
}

void lock_service::force_unlock(const std::string& raw_name, lock_kind kind,
                                std::function<void(std::error_code, bool)> done,
                                std::string* error_detail) {
  const std::string channel = lock_channel(raw_name);
  const bool fair = kind == lock_kind::fair;
  const bool queued = core_->cfg().lock_queue && !fair;
  const std::string queue = queued ? queue_key(raw_name)
                            : fair ? fair_queue_key(raw_name)
                                   : std::string();
  const std::string timeouts = fair ? fair_timeout_key(raw_name) : std::string();
  const std::string_view keys_plain[] = {raw_name, channel};
  // Queued mode: the lock goes to the first live waiter, like on an unlock (its waiters listen
  // only on their hand-off channels while an rlock client holds the lock).
  const std::string_view keys_queued[] = {raw_name, channel, queue};
  // A fair lock's: its queue's head is told on its own channel.
  const std::string_view keys_fair[] = {raw_name, queue, timeouts, channel};
  const std::span<const std::string_view> keys =
      fair     ? std::span<const std::string_view>(keys_fair)
      : queued ? std::span<const std::string_view>(keys_queued)
               : keys_plain;
  const script& forced = fair     ? fair_lock_force_unlock_script()
                         : queued ? lock_force_unlock_queued_script()
                                  : lock_force_unlock_script();
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
  core_->eval(forced, keys, fair ? std::span<const std::string_view>() : std::span(args), opts,
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
