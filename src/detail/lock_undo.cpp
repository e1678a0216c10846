// The undo of an acquire that may have been applied, in rounds until one lands
// (undo_policy.hpp); in queued mode the same script also leaves the wait queue.
#include <algorithm>
#include <random>

#include "detail/backoff.hpp"
#include "detail/lock_keys.hpp"
#include "detail/lock_service.hpp"
#include "detail/lock_service_op.hpp"
#include "detail/thread_rng.hpp"
#include "detail/undo_policy.hpp"

namespace rlock::detail {

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
  u->kind = o->req.kind;
  if (o->req.kind == lock_kind::fair && o->enqueued) u->fair_wait = o->req.fair_wait;
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

void lock_service::send_undo(const std::shared_ptr<undo>& u) {
  unlock_request r;
  r.raw_name = u->key.first;
  r.channel = u->channel;
  r.owner = u->owner;
  r.lease = u->lease;
  r.expected = u->expected;
  r.latch = u->latch;
  r.latch_sent_before = u->rounds > 0;
  r.fence = u->fence;
  r.kind = u->kind;
  if (u->fair_wait.count() > 0) r.fair_leave_wait = std::to_string(u->fair_wait.count());
  ++u->rounds;
  send_unlock(std::move(r), [self = shared_from_this(), u](exec_result res) {
    self->undo_answered(u, std::move(res));
  });
}

void lock_service::undo_answered(const std::shared_ptr<undo>& u, exec_result res) {
  std::shared_ptr<op> ready;
  std::vector<std::function<void(bool)>> unlocks;
  {
    std::lock_guard lk(mu_);
    const auto& key = u->key;
    if (res.ec) {
      const auto& cfg = core_->cfg();
      const auto delay =
          equal_jitter(cfg.retry_delay_base, cfg.retry_delay_max).delay(u->rounds, thread_rng());
      const auto parked = after_undo_.find(key);
      const auto parked_unlocks = unlocks_after_undo_.find(key);
      undo_round_failure f;
      f.ec = res.ec;
      f.closing = closed_;
      f.others_waiting =
          (parked != after_undo_.end() && !parked->second.empty()) ||
          (parked_unlocks != unlocks_after_undo_.end() && !parked_unlocks->second.empty());
      f.next_round = clock::now() + delay;
      f.hold_gone_by = u->hold_gone_by;
      if (undo_again(f)) {
        add_unique(u->fence, res.unknown_on);
        auto t = std::make_shared<asio::steady_timer>(core_->io(), delay);
        undo_waits_[key].push_back(t);
        // Waited on with mu_ held, as it is cancelled (hurry_undos_locked, shutdown()).
        t->async_wait([self = shared_from_this(), u, t](std::error_code) {
          {
            std::lock_guard waits_lk(self->mu_);
            auto it = self->undo_waits_.find(u->key);
            if (it != self->undo_waits_.end()) {
              std::erase(it->second, t);
              if (it->second.empty()) self->undo_waits_.erase(it);
            }
          }
          self->send_undo(u);
        });
        return;
      }
      // The undo may not have run (or run only in part): the owner's hold count on the server
      // may be one more than its local one. Its final unlock then finds holds left and releases
      // them too.
      if (hold* h = find_hold_locked(key.first, key.second)) ++h->unsure;
    }
    auto it = undo_in_flight_.find(key);
    if (it != undo_in_flight_.end() && --it->second <= 0) {
      undo_in_flight_.erase(it);
      // Unless a re-entry of the owner is in flight (unlocks parked behind it go when it
      // completes).
      const bool reentry_in_flight = acquiring_.count(key) != 0;
      ready = next_parked_locked(key);
      if (!reentry_in_flight) unlocks = take_parked_unlocks_locked(key);
      if (undo_in_flight_.empty()) cleanup_done_.notify_all();
    }
  }
  for (auto& f : unlocks) f(true);
  if (ready) resume_parked(ready);
  // A spin lock's undo that released the lock announced it to nobody.
  if (u->kind == lock_kind::spin && !res.ec && res.value.is_integer() && res.value.integer() == 1) {
    wake_local_head(u->key.first);
  }
}

void lock_service::hurry_undos_locked(const std::pair<std::string, std::uint64_t>& key) {
  if (auto it = undo_waits_.find(key); it != undo_waits_.end()) {
    for (auto& t : it->second) t->cancel();
  }
}

}  // namespace rlock::detail
