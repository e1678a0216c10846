#include "detail/watchdog.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "detail/cluster_slots.hpp"
#include "detail/core.hpp"
#include "detail/lock_replies.hpp"
#include "detail/lock_scripts.hpp"

namespace rlock::detail {
namespace {

// The watchdog's two timing rules, each in one place (the header states why they hold).

/// A round must come within a third of a lease: its batch then goes at most halfway from there
/// to the deadline, and a failed renewal still has a retry before the TTL ends.
clock::time_point round_within(clock::time_point from, clock::duration lease) {
  return from + lease / 3;
}

/// A renewal (a batch, a first retry) goes out at the latest halfway from `now` to `deadline`,
/// but no sooner than `least` after `now`.
clock::time_point halfway_to(clock::time_point now, clock::time_point deadline,
                             clock::duration least) {
  return now + std::max<clock::duration>((deadline - now) / 2, least);
}

}  // namespace

watchdog::watchdog(const std::shared_ptr<core>& c, std::chrono::milliseconds timeout,
                   int batch_size, const script& renew_script)
    : core_(c),
      counters_(c->counters()),
      renew_script_(&renew_script),
      timeout_(timeout),
      ordered_(c->cfg().connection_pool_size == 1),
      by_slot_(c->cluster_mode()),
      batch_size_(static_cast<std::size_t>(std::max(1, batch_size))),
      retry_delay_(std::clamp<std::chrono::milliseconds>(timeout / 10, 1ms, 1s)),
      round_(c->io()),
      retry_(c->io()),
      expiry_(c->io()),
      send_(c->io()) {}

std::uint64_t watchdog::add(std::string key, std::string owner, loss_callback on_loss) {
  std::lock_guard lk(mu_);
  const auto id = next_id_++;
  hold h;
  h.key = std::move(key);
  h.owner = std::move(owner);
  h.on_loss = std::move(on_loss);
  holds_.emplace(id, std::move(h));
  return id;
}

void watchdog::activate(std::uint64_t id, clock::time_point sent_at,
                        std::chrono::milliseconds lease, bool renew) {
  std::lock_guard lk(mu_);
  auto it = holds_.find(id);
  if (it == holds_.end() || stopped_) return;
  hold& h = it->second;
  h.active = true;
  h.renew = h.renew || renew;
  h.activation_seen_at = clock::now();
  if (sent_at >= h.activated_at) {
    h.valid_until = sent_at + lease;
    h.activated_at = sent_at;
  } else {
    // A reply that comes after that of a script sent later: either may have run last.
    h.valid_until = std::min(h.valid_until, sent_at + lease);
  }
  if (h.renew) {
    arm_locked(round_, round_within(sent_at, std::min<clock::duration>(lease, timeout_)),
               &watchdog::run_round);
  }
  // The expiry timer only ever needs to move earlier; a firing that finds nothing expired
  // re-arms itself at the then-earliest deadline. This keeps activation O(1).
  arm_locked(expiry_, h.valid_until, &watchdog::on_expiry);
}

void watchdog::remove(std::uint64_t id) {
  std::lock_guard lk(mu_);
  holds_.erase(id);
}

clock::time_point watchdog::valid_until(std::uint64_t id) const {
  std::lock_guard lk(mu_);
  auto it = holds_.find(id);
  return it == holds_.end() ? clock::time_point::min() : it->second.valid_until;
}

void watchdog::stop() {
  std::lock_guard lk(mu_);
  stopped_ = true;
  holds_.clear();
  queue_.clear();
  asio::post(round_.timer.get_executor(), [self = shared_from_this()] {
    self->round_.timer.cancel();
    self->retry_.timer.cancel();
    self->expiry_.timer.cancel();
    self->send_.timer.cancel();
  });
}

std::uint64_t watchdog::scripts_sent() const {
  std::lock_guard lk(mu_);
  return scripts_sent_;
}

std::size_t watchdog::active() const {
  std::lock_guard lk(mu_);
  std::size_t n = 0;
  for (const auto& [id, h] : holds_) n += h.active ? 1 : 0;
  return n;
}

void watchdog::arm_locked(alarm& a, clock::time_point at, void (watchdog::*fire)()) {
  if (a.at <= at) return;
  a.at = at;
  asio::post(a.timer.get_executor(), [self = shared_from_this(), &a, at, fire] {
    std::lock_guard lk(self->mu_);
    if (a.at != at || self->stopped_) return;
    a.timer.expires_at(at);
    a.timer.async_wait([self, &a, at, fire](std::error_code ec) {
      if (ec) return;
      {
        std::lock_guard lk2(self->mu_);
        if (a.at != at) return;
        a.at = clock::time_point::max();
      }
      ((*self).*fire)();
    });
  });
}

void watchdog::run_round() {
  {
    std::lock_guard lk(mu_);
    if (stopped_) return;
    const auto now = clock::now();
    // Every hold still queued is queued again below, by its deadline now: the old batches
    // would send nothing, and early rounds would pile them up.
    queue_.clear();
    std::vector<due_hold> due;
    due.reserve(holds_.size());
    bool any = false;
    for (auto& [id, h] : holds_) {
      if (!h.active || !h.renew) continue;
      any = true;
      // Every round renews every held lock: each is renewed at least once per period, and the
      // batches stay full (ceil(n / batch_size) scripts per period while rounds come on time).
      // A retry due later is covered by this round. A hold in flight is not sent again: if
      // it succeeds, its reply brings the next round forward when a re-entry sent meanwhile
      // needs it (on_batch); if it fails, the first retry comes halfway to the deadline.
      if (h.in_flight) continue;
      h.retry_at = clock::time_point::max();
      due.push_back({h.valid_until, id, &h});
    }
    if (any) arm_locked(round_, round_within(now, timeout_), &watchdog::run_round);
    schedule_locked(std::move(due), now, timeout_ / 6);
  }
  send_due();
}

void watchdog::run_retries() {
  {
    std::lock_guard lk(mu_);
    if (stopped_) return;
    const auto now = clock::now();
    std::vector<due_hold> due;
    for (auto& [id, h] : holds_) {
      if (!h.active || !h.renew || h.in_flight || h.queued_in != 0 || h.retry_at > now) continue;
      h.retry_at = clock::time_point::max();
      due.push_back({h.valid_until, id, &h});
    }
    arm_retry_locked();
    schedule_locked(std::move(due), now, retry_delay_ / 2);
  }
  send_due();
}

void watchdog::schedule_locked(std::vector<due_hold> due, clock::time_point now,
                               clock::duration spread) {
  if (due.empty()) return;
  // Most urgent first; ids break ties, so the batches do not depend on the table's order.
  std::sort(due.begin(), due.end(), [](const due_hold& a, const due_hold& b) {
    return std::tie(a.valid_until, a.id) < std::tie(b.valid_until, b.id);
  });
  // Each batch lists indexes into `due`, most urgent first, and the batches are in the order of
  // their most urgent hold. In Cluster mode one script's keys must share a slot: a batch then
  // takes the most urgent holds of one slot.
  std::vector<std::vector<std::size_t>> cuts;
  std::unordered_map<std::uint16_t, std::size_t> open;  // slot -> its batch being filled
  for (std::size_t j = 0; j < due.size(); ++j) {
    // Outside Cluster mode every hold counts as slot 0: batches of batch_size_ in order.
    const std::uint16_t slot = by_slot_ ? key_slot(due[j].h->key) : 0;
    auto it = open.find(slot);
    if (it == open.end() || cuts[it->second].size() >= batch_size_) {
      cuts.emplace_back();
      it = open.insert_or_assign(slot, cuts.size() - 1).first;
    }
    cuts[it->second].push_back(j);
  }
  const std::size_t batches = cuts.size();
  const auto step = spread / static_cast<clock::rep>(batches);
  for (std::size_t i = 0; i < batches; ++i) {
    batch b;
    b.serial = next_batch_++;
    b.ids.reserve(cuts[i].size());
    for (const std::size_t j : cuts[i]) {
      b.ids.push_back(due[j].id);
      due[j].h->queued_in = b.serial;
    }
    // Halfway to the batch's most urgent deadline at the latest (now, if that has passed).
    const auto latest = halfway_to(now, due[cuts[i].front()].valid_until, {});
    queue_.emplace(std::min(now + step * static_cast<clock::rep>(i), latest), std::move(b));
  }
  arm_locked(send_, queue_.begin()->first, &watchdog::send_due);
}

void watchdog::send_due() {
  std::vector<batch> due;
  {
    std::lock_guard lk(mu_);
    if (stopped_) return;
    const auto now = clock::now();
    while (!queue_.empty() && queue_.begin()->first <= now) {
      due.push_back(std::move(queue_.begin()->second));
      queue_.erase(queue_.begin());
    }
    if (!queue_.empty()) arm_locked(send_, queue_.begin()->first, &watchdog::send_due);
  }
  for (const auto& b : due) send_batch(b);
}

void watchdog::send_batch(const batch& b) {
  auto c = core_.lock();
  if (!c) return;
  std::vector<std::string> keys;
  std::vector<std::string> args;
  std::vector<std::uint64_t> ids;
  keys.reserve(b.ids.size());
  args.reserve(b.ids.size() + 1);
  ids.reserve(b.ids.size());
  {
    std::lock_guard lk(mu_);
    args.push_back(std::to_string(timeout_.count()));
    for (auto id : b.ids) {
      auto it = holds_.find(id);
      // Unlocked meanwhile, or queued again since in a batch of its own.
      if (it == holds_.end() || it->second.queued_in != b.serial) continue;
      hold& h = it->second;
      h.queued_in = 0;
      h.in_flight = true;
      keys.push_back(h.key);
      args.push_back(h.owner);
      ids.push_back(id);
    }
    if (ids.empty()) return;
    ++scripts_sent_;
  }
  client_counters::add(counters_->renewals);
  std::vector<std::string_view> kv(keys.begin(), keys.end());
  std::vector<std::string_view> av(args.begin(), args.end());
  const auto sent_at = clock::now();
  exec_options o;
  // One attempt: a resend (of an attempt whose outcome is unknown, or of one that was never
  // written because the connection was down) goes out after whatever the owners did meanwhile,
  // and may find an owner's next hold (taken after its final unlock) and extend a lease that
  // must not be renewed. on_batch retries the current holds soon instead.
  o.idempotent = false;
  o.max_attempts = 1;
  o.deadline = round_within(sent_at, timeout_);  // answered before the next round is due
  c->eval(*renew_script_, kv, av, o,
          [self = shared_from_this(), ids = std::move(ids), sent_at](exec_result res) mutable {
            self->on_batch(std::move(ids), sent_at, std::move(res));
          });
}

void watchdog::on_batch(std::vector<std::uint64_t> ids, clock::time_point sent_at,
                        exec_result res) {
  std::vector<loss_callback> lost;
  std::vector<std::string> lost_keys;
  std::error_code why = make_error_code(errc::lock_lost);
  auto retry_at = clock::time_point::max();
  {
    std::lock_guard lk(mu_);
    if (stopped_) return;
    const auto now = clock::now();
    const auto renewed = decode_renew(res, ids.size());
    const bool ok = renewed.has_value();
    if (!ok) client_counters::add(counters_->renewals_failed);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      auto it = holds_.find(ids[i]);
      if (it == holds_.end()) continue;
      hold& h = it->second;
      h.in_flight = false;
      if (!ok) {
        // Retried after retry_delay_, 2x, 4x, ... while that comes before the next round. The
        // first retry comes at most halfway to the hold's deadline (a short lease set by a
        // re-entry may end sooner than retry_delay_); later ones back off all the same, so a
        // server refusing renewals does not get a retry every few ms near the deadline.
        h.failures = std::min(h.failures + 1, 16);
        const auto backoff = now + retry_delay_ * (1 << (h.failures - 1));
        const auto halfway = halfway_to(now, h.valid_until, 1ms);
        const auto at = h.failures == 1 ? std::min(backoff, halfway) : backoff;
        if (at < round_.at) {
          h.retry_at = at;
          retry_at = std::min(retry_at, at);
        }
        continue;
      }
      h.failures = 0;
      if ((*renewed)[i]) {
        // An acquire sent after this renewal may have run before it (another connection of a
        // pool) or after it and set a shorter lease: then the earlier of the two counts. On one
        // connection a script sent before ran before, and the renewal never shortens a TTL:
        // a longer lease it set (an inner hold's) still holds. With a pool, a script sent
        // before but answered after this renewal was sent may also have run after it: the
        // earlier of the two counts then too (otherwise valid_until could pass the server's
        // expiry). Only one answered before this renewal was sent surely ran before it.
        const bool raced =
            h.activated_at > sent_at || (!ordered_ && h.activation_seen_at > sent_at);
        if (raced) {
          h.valid_until = std::min(h.valid_until, sent_at + timeout_);
        } else if (ordered_) {
          h.valid_until = std::max(h.valid_until, sent_at + timeout_);
        } else {
          h.valid_until = sent_at + timeout_;
        }
        // A round that came while this renewal was in flight skipped the hold. If a re-entry
        // sent meanwhile set a shorter lease, its deadline can come before the next round:
        // bring that round forward, as activate() does (a third of what is left). Only then:
        // a renewal that was merely slow must not make rounds come more often.
        if (h.renew && raced && h.valid_until > now) {
          arm_locked(round_, round_within(now, h.valid_until - now), &watchdog::run_round);
        }
      } else {
        lost.push_back(std::move(h.on_loss));
        lost_keys.push_back(std::move(h.key));
        holds_.erase(it);
      }
    }
    // Expiry is checked by its own timer, retries or not.
    if (retry_at != clock::time_point::max()) {
      arm_locked(retry_, retry_at, &watchdog::run_retries);
    }
  }
  for (auto& cb : lost) {
    if (cb) cb(why);
  }
  report_lost(lost_keys, "a renewal found it no longer held by this owner");
}

void watchdog::arm_retry_locked() {
  auto earliest = clock::time_point::max();
  for (const auto& [id, h] : holds_) earliest = std::min(earliest, h.retry_at);
  if (earliest != clock::time_point::max()) arm_locked(retry_, earliest, &watchdog::run_retries);
}

void watchdog::arm_expiry_locked() {
  auto earliest = clock::time_point::max();
  for (const auto& [id, h] : holds_) {
    if (h.active) earliest = std::min(earliest, h.valid_until);
  }
  if (earliest != clock::time_point::max()) arm_locked(expiry_, earliest, &watchdog::on_expiry);
}

void watchdog::on_expiry() {
  std::vector<loss_callback> lost;
  std::vector<std::string> unrenewed;  // renewed by the watchdog, but not in time
  std::vector<std::string> ran_out;    // a lease given explicitly, ended while held
  {
    std::lock_guard lk(mu_);
    if (stopped_) return;
    const auto now = clock::now();
    for (auto it = holds_.begin(); it != holds_.end();) {
      if (it->second.active && it->second.valid_until <= now) {
        lost.push_back(std::move(it->second.on_loss));
        (it->second.renew ? unrenewed : ran_out).push_back(std::move(it->second.key));
        it = holds_.erase(it);
      } else {
        ++it;
      }
    }
    arm_expiry_locked();
  }
  for (auto& cb : lost) {
    if (cb) cb(make_error_code(errc::lock_lost));
  }
  report_lost(unrenewed, "its lease ended with no successful renewal");
  report_lost(ran_out, "its lease ran out while it was held");
}

void watchdog::report_lost(const std::vector<std::string>& keys, const std::string& how) const {
  if (keys.empty()) return;
  client_counters::add(counters_->holds_lost, keys.size());
  const auto c = core_.lock();
  if (!c || !c->events().wanted()) return;
  for (const std::string& key : keys) {
    c->events().emit({.kind = client_event_kind::lock_lost,
                      .server = {},
                      .object = key,
                      .error = make_error_code(errc::lock_lost),
                      .detail = how});
  }
}

}  // namespace rlock::detail
