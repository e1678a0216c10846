#include "detail/watchdog.hpp"

#include <string_view>
#include <vector>

#include "detail/core.hpp"
#include "detail/lock_replies.hpp"
#include "detail/lock_scripts.hpp"

namespace rlock::detail {

watchdog::watchdog(const std::shared_ptr<core>& c, std::chrono::milliseconds timeout,
                   int batch_size)
    : core_(c),
      timeout_(timeout),
      batch_size_(static_cast<std::size_t>(std::max(1, batch_size))),
      round_timer_(c->io()),
      expiry_timer_(c->io()) {}

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
  h.valid_until = sent_at + lease;
  if (h.renew) schedule_round_locked(sent_at + std::min(lease, timeout_) / 3);
  // The expiry timer only ever needs to move earlier; a firing that finds nothing expired
  // re-arms itself at the then-earliest deadline. This keeps activation O(1).
  if (h.valid_until < expiry_at_) arm_at_locked(h.valid_until);
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
  asio::post(round_timer_.get_executor(), [self = shared_from_this()] {
    self->round_timer_.cancel();
    self->expiry_timer_.cancel();
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

void watchdog::schedule_round_locked(clock::time_point at) {
  if (round_armed_ && round_at_ <= at) return;
  round_armed_ = true;
  round_at_ = at;
  asio::post(round_timer_.get_executor(), [self = shared_from_this(), at] {
    std::lock_guard lk(self->mu_);
    if (self->round_at_ != at || self->stopped_) return;
    self->round_timer_.expires_at(at);
    self->round_timer_.async_wait([self, at](std::error_code ec) {
      if (ec) return;
      {
        std::lock_guard lk2(self->mu_);
        if (self->round_at_ != at) return;
        self->round_armed_ = false;
        self->round_at_ = clock::time_point::max();
      }
      self->run_round();
    });
  });
}

void watchdog::run_round() {
  std::vector<std::vector<std::uint64_t>> batches;
  {
    std::lock_guard lk(mu_);
    if (stopped_) return;
    const auto now = clock::now();
    std::vector<std::uint64_t> cur;
    bool any = false;
    for (auto& [id, h] : holds_) {
      if (!h.active || !h.renew) continue;
      any = true;
      // Every round renews every held lock: each is renewed at least once per period, and the
      // batches stay full (ceil(n / batch_size) scripts per period).
      if (h.in_flight) continue;
      h.in_flight = true;
      cur.push_back(id);
      if (cur.size() == batch_size_) {
        batches.push_back(std::move(cur));
        cur.clear();
      }
    }
    if (!cur.empty()) batches.push_back(std::move(cur));
    if (any) schedule_round_locked(now + timeout_ / 3);
  }
  for (auto& b : batches) send_batch(std::move(b));
}

void watchdog::send_batch(std::vector<std::uint64_t> ids) {
  auto c = core_.lock();
  if (!c) return;
  std::vector<std::string> keys;
  std::vector<std::string> args;
  {
    std::lock_guard lk(mu_);
    args.push_back(std::to_string(timeout_.count()));
    std::vector<std::uint64_t> live;
    for (auto id : ids) {
      auto it = holds_.find(id);
      if (it == holds_.end()) continue;  // unlocked meanwhile
      keys.push_back(it->second.key);
      args.push_back(it->second.owner);
      live.push_back(id);
    }
    ids.swap(live);
    if (ids.empty()) return;
    ++scripts_sent_;
  }
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
  o.deadline = sent_at + timeout_ / 3;
  c->eval(lock_renew_script(), kv, av, o,
          [self = shared_from_this(), ids = std::move(ids), sent_at](exec_result res) mutable {
            self->on_batch(std::move(ids), sent_at, std::move(res));
          });
}

void watchdog::on_batch(std::vector<std::uint64_t> ids, clock::time_point sent_at,
                        exec_result res) {
  std::vector<loss_callback> lost;
  std::error_code why = make_error_code(errc::lock_lost);
  {
    std::lock_guard lk(mu_);
    if (stopped_) return;
    const auto renewed = decode_renew(res, ids.size());
    const bool ok = renewed.has_value();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      auto it = holds_.find(ids[i]);
      if (it == holds_.end()) continue;
      hold& h = it->second;
      h.in_flight = false;
      if (!ok) continue;
      if ((*renewed)[i]) {
        h.valid_until = sent_at + timeout_;
      } else {
        lost.push_back(std::move(h.on_loss));
        holds_.erase(it);
      }
    }
    if (!ok) {
      // Retry soon rather than a whole period later; expiry is checked by its own timer.
      schedule_round_locked(clock::now() + std::min<clock::duration>(timeout_ / 10, 1s));
    }
  }
  for (auto& cb : lost) {
    if (cb) cb(why);
  }
}

void watchdog::arm_expiry_locked() {
  auto earliest = clock::time_point::max();
  for (const auto& [id, h] : holds_) {
    if (h.active) earliest = std::min(earliest, h.valid_until);
  }
  if (earliest == clock::time_point::max() || earliest == expiry_at_) return;
  arm_at_locked(earliest);
}

void watchdog::arm_at_locked(clock::time_point earliest) {
  expiry_at_ = earliest;
  asio::post(expiry_timer_.get_executor(), [self = shared_from_this(), earliest] {
    std::lock_guard lk(self->mu_);
    if (self->expiry_at_ != earliest || self->stopped_) return;
    self->expiry_timer_.expires_at(earliest);
    self->expiry_timer_.async_wait([self](std::error_code ec) {
      if (!ec) self->on_expiry();
    });
  });
}

void watchdog::on_expiry() {
  std::vector<loss_callback> lost;
  {
    std::lock_guard lk(mu_);
    if (stopped_) return;
    const auto now = clock::now();
    for (auto it = holds_.begin(); it != holds_.end();) {
      if (it->second.active && it->second.valid_until <= now) {
        lost.push_back(std::move(it->second.on_loss));
        it = holds_.erase(it);
      } else {
        ++it;
      }
    }
    expiry_at_ = clock::time_point::max();
    arm_expiry_locked();
  }
  for (auto& cb : lost) {
    if (cb) cb(make_error_code(errc::lock_lost));
  }
}

}  // namespace rlock::detail
