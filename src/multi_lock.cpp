#include "rlock/multi_lock.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <utility>

#include "detail/blocking.hpp"
#include "detail/core.hpp"
#include "detail/lock_call.hpp"
#include "detail/lock_service.hpp"
#include "detail/multi_acquire_fsm.hpp"
#include "detail/stop_either.hpp"
#include "detail/thread_rng.hpp"
#include "rlock/detail/fallback_executor.hpp"
#include "rlock/error.hpp"

namespace rlock {
namespace detail {

// What the copies of one multi_lock share: its members and the holds of each owner.
struct multi_lock_state {
  using watcher = std::stop_callback<std::function<void()>>;
  struct hold {
    std::vector<std::vector<std::size_t>> taken;  // per multi hold, latest last: its members
    std::vector<int> member_holds;                // per member: holds this owner's multi holds took
    std::vector<bool> member_lost;                // per member: its loss token was stopped
    std::vector<std::unique_ptr<watcher>> watchers;  // per member with holds
    std::stop_source lost;
  };

  std::vector<reentrant_lock> members;
  std::size_t quorum = 0;
  std::mutex mu;
  std::map<std::uint64_t, hold> holds;

  /// Members held and not lost; mu held.
  std::size_t live_locked(const hold& h) const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (h.member_holds[i] > 0 && !h.member_lost[i]) ++n;
    }
    return n;
  }

  void on_member_lost(std::uint64_t owner, std::size_t i) {
    std::stop_source lost;
    {
      std::lock_guard lk(mu);
      auto it = holds.find(owner);
      if (it == holds.end() || it->second.member_holds[i] == 0) return;
      it->second.member_lost[i] = true;
      if (live_locked(it->second) >= quorum) return;
      lost = it->second.lost;
    }
    lost.request_stop();
  }

  /// Records an acquire that holds `taken` for `owner`.
  void add_hold(const std::shared_ptr<multi_lock_state>& self, std::uint64_t owner,
                const std::vector<std::size_t>& taken) {
    std::vector<std::size_t> watch;
    {
      std::lock_guard lk(mu);
      hold& h = holds[owner];
      if (h.member_holds.empty()) {
        h.member_holds.assign(members.size(), 0);
        h.member_lost.assign(members.size(), false);
        h.watchers.resize(members.size());
      }
      h.taken.push_back(taken);
      for (std::size_t i : taken) {
        if (h.member_holds[i]++ == 0) {
          h.member_lost[i] = false;
          watch.push_back(i);
        }
      }
    }
    // Made without mu: a token already stopped runs its callback at once, which takes mu.
    std::vector<std::pair<std::size_t, std::unique_ptr<watcher>>> made;
    made.reserve(watch.size());
    for (std::size_t i : watch) {
      std::weak_ptr<multi_lock_state> weak = self;
      made.emplace_back(i, std::make_unique<watcher>(members[i].loss_token(owner),
                                                     std::function<void()>([weak, owner, i] {
                                                       if (auto s = weak.lock()) {
                                                         s->on_member_lost(owner, i);
                                                       }
                                                     })));
    }
    std::vector<std::unique_ptr<watcher>> stale;
    {
      std::lock_guard lk(mu);
      auto it = holds.find(owner);
      for (auto& [i, w] : made) {
        if (it != holds.end() && it->second.member_holds[i] > 0) {
          stale.push_back(std::exchange(it->second.watchers[i], std::move(w)));
        } else {
          stale.push_back(std::move(w));
        }
      }
    }
  }
};

namespace {

using fsm = multi_acquire_fsm;

// One acquire: carries out the state machine's actions. Its events arrive on the members'
// clients' threads and on the pause timer's; mu_ orders them.
class multi_acquire_op : public std::enable_shared_from_this<multi_acquire_op> {
 public:
  multi_acquire_op(std::shared_ptr<multi_lock_state> st, std::uint64_t owner,
                   const acquire_options& o, std::stop_token stop, fsm::params p,
                   std::function<void(std::error_code, bool)> done)
      : st_(std::move(st)),
        owner_(owner),
        fsm_(p),
        done_(std::move(done)),
        timer_(fallback_executor()) {
    if (o.lease && o.lease->count() > 0) lease_ = o.lease;
    stop_ = std::move(stop);
  }

  void start() {
    fsm::action a;
    {
      std::lock_guard lk(mu_);
      a = fsm_.start(fsm::clock::now());
    }
    run(a);
  }

 private:
  void run(const fsm::action& a) {
    switch (a.kind) {
      case fsm::action_kind::acquire:
        return try_member(a.member, a.until);
      case fsm::action_kind::release:
        return release(a.members);
      case fsm::action_kind::pause:
        return pause(a.until);
      case fsm::action_kind::done:
        if (a.acquired) st_->add_hold(st_, owner_, a.members);
        return done_(a.ec, a.acquired);
    }
  }

  void try_member(std::size_t i, fsm::time_point until) {
    acquire_options o;
    const auto now = fsm::clock::now();
    o.wait = until <= now ? std::chrono::milliseconds(0)
                          : std::chrono::ceil<std::chrono::milliseconds>(until - now);
    o.lease = lease_;
    o.stop = stop_;
    st_->members[i].async_acquire(owner_, std::move(o),
                                  [self = shared_from_this()](std::error_code ec, bool held) {
                                    const auto r = ec     ? fsm::member_result::failed
                                                   : held ? fsm::member_result::held
                                                          : fsm::member_result::busy;
                                    fsm::action next;
                                    {
                                      std::lock_guard lk(self->mu_);
                                      next = self->fsm_.on_member(r, ec, fsm::clock::now());
                                    }
                                    self->run(next);
                                  });
  }

  void release(const std::vector<std::size_t>& members) {
    if (members.empty()) return released();
    auto left = std::make_shared<std::atomic<std::size_t>>(members.size());
    for (std::size_t i : members) {
      st_->members[i].async_unlock(owner_, [self = shared_from_this(), left](std::error_code) {
        // Whatever its outcome: a release that failed leaves the member to its lease (its
        // watchdog stopped before the unlock was sent, lock.hpp).
        if (left->fetch_sub(1) == 1) self->released();
      });
    }
  }

  void released() {
    const auto pause =
        std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 50)(thread_rng()));
    fsm::action next;
    {
      std::lock_guard lk(mu_);
      next = fsm_.on_released(fsm::clock::now(), pause);
    }
    run(next);
  }

  void pause(fsm::time_point until) {
    timer_.expires_at(until);
    timer_.async_wait([self = shared_from_this()](std::error_code) {
      fsm::action next;
      {
        std::lock_guard lk(self->mu_);
        next = self->fsm_.on_paused(fsm::clock::now());
      }
      self->run(next);
    });
  }

  std::shared_ptr<multi_lock_state> st_;
  std::uint64_t owner_;
  std::optional<std::chrono::milliseconds> lease_;
  std::stop_token stop_;
  std::mutex mu_;
  fsm fsm_;
  std::function<void(std::error_code, bool)> done_;
  asio::steady_timer timer_;  // on the fallback context: members may be of several clients
};

}  // namespace
}  // namespace detail

multi_lock::multi_lock(std::vector<reentrant_lock> locks) : multi_lock(std::move(locks), false) {}

multi_lock multi_lock::red_lock(std::vector<reentrant_lock> locks) {
  return multi_lock(std::move(locks), true);
}

multi_lock::multi_lock(std::vector<reentrant_lock> locks, bool majority)
    : state_(std::make_shared<detail::multi_lock_state>()) {
  if (locks.empty()) {
    throw error(make_error_code(errc::invalid_argument), "multi_lock: no locks");
  }
  if (majority && locks.size() < 3) {
    throw error(make_error_code(errc::invalid_argument),
                "red_lock: at least 3 locks (on independent servers) make a majority that "
                "tolerates a failure, not " +
                    std::to_string(locks.size()));
  }
  for (std::size_t i = 0; i < locks.size(); ++i) {
    for (std::size_t j = i + 1; j < locks.size(); ++j) {
      if (locks[i].svc_ == locks[j].svc_ && locks[i].key() == locks[j].key()) {
        throw error(make_error_code(errc::invalid_argument),
                    "multi_lock: the lock '" + locks[i].key() + "' is given twice");
      }
    }
  }
  state_->quorum = majority ? locks.size() / 2 + 1 : locks.size();
  state_->members = std::move(locks);
}

std::size_t multi_lock::size() const {
  return state_->members.size();
}
std::size_t multi_lock::quorum() const {
  return state_->quorum;
}

asio::io_context::executor_type multi_lock::executor() const {
  return state_->members.front().executor();
}

void multi_lock::check_blocking_allowed() const {
  for (const auto& m : state_->members) m.check_blocking_allowed();
}

void multi_lock::start_acquire(std::uint64_t owner, const acquire_options& o, std::stop_token also,
                               std::function<void(std::error_code, bool)> cb) {
  detail::multi_acquire_fsm::params p;
  p.members = state_->members.size();
  p.quorum = state_->quorum;
  p.deadline = o.wait ? detail::deadline_after(*o.wait) : detail::clock::time_point::max();
  p.round_wait = std::chrono::milliseconds(1500) * static_cast<int>(p.members);
  std::shared_ptr<void> keep;
  std::stop_token stop = detail::stop_either(o.stop, std::move(also), keep);
  auto op = std::make_shared<detail::multi_acquire_op>(
      state_, owner, o, std::move(stop), p,
      [keep, cb = std::move(cb)](std::error_code ec, bool held) { cb(ec, held); });
  op->start();
}

void multi_lock::start_unlock(std::uint64_t owner, std::function<void(std::error_code)> cb) {
  auto st = state_;
  std::vector<std::size_t> release;
  std::vector<bool> was_lost;
  std::vector<std::unique_ptr<detail::multi_lock_state::watcher>> gone;
  std::stop_source lost;
  bool last = false;
  {
    std::lock_guard lk(st->mu);
    auto it = st->holds.find(owner);
    if (it != st->holds.end()) {
      auto& h = it->second;
      lost = h.lost;
      was_lost = h.member_lost;
      release = std::move(h.taken.back());
      h.taken.pop_back();
      for (std::size_t i : release) {
        if (--h.member_holds[i] == 0) gone.push_back(std::move(h.watchers[i]));
      }
      last = h.taken.empty();
      if (last) st->holds.erase(it);
    }
  }
  // Destroyed without mu: a watcher's callback running on another thread takes it.
  gone.clear();
  auto done = std::make_shared<std::function<void(std::error_code)>>(std::move(cb));
  if (release.empty()) {
    (*done)(make_error_code(errc::not_owner));
    return;
  }
  struct tally {
    std::mutex mu;
    std::size_t left = 0;
    std::size_t released = 0;
    std::error_code first_error;
  };
  auto t = std::make_shared<tally>();
  t->left = release.size();
  const std::size_t needed = std::min(st->quorum, release.size());
  for (std::size_t i : release) {
    st->members[i].async_unlock(
        owner, [t, needed, last, lost, done,
                member_lost = static_cast<bool>(was_lost[i])](std::error_code ec) mutable {
          std::error_code result;
          {
            std::lock_guard lk(t->mu);
            if (!ec) {
              ++t->released;
            } else if (!t->first_error || (t->first_error == errc::not_owner && !member_lost)) {
              // A member already known lost answers not_owner; another member's failure says more.
              t->first_error = ec;
            }
            if (--t->left != 0) return;
            if (t->released < needed) result = t->first_error;
          }
          // The hold was lost, or its final release's outcome is unknown: its holder is told.
          if (result == errc::not_owner || (result && last)) lost.request_stop();
          (*done)(result);
        });
  }
}

void multi_lock::unlock(std::error_code& ec) noexcept {
  ec.clear();
  try {
    check_blocking_allowed();
    detail::blocking_result<std::error_code> w;
    start_unlock(this_thread_owner_id(), [&w](std::error_code code) { w.set(code); });
    ec = w.take(state_->members.front().blocking_spin());
  } catch (const std::system_error& e) {
    ec = e.code();
  } catch (...) {
    ec = make_error_code(std::errc::not_enough_memory);
  }
}

void multi_lock::unlock() noexcept {
  std::error_code ec;
  unlock(ec);
}

bool multi_lock::acquire(const acquire_options& opts) {
  check_blocking_allowed();
  detail::blocking_result<detail::call_outcome<bool>> w;
  start_acquire(this_thread_owner_id(), opts, {}, [&w](std::error_code ec, bool held) {
    w.set({ec, held, {}});
  });
  auto r = w.take(state_->members.front().blocking_spin());
  throw_if(r.ec, "multi_lock of " + std::to_string(size()) + " locks");
  return r.value;
}

void multi_lock::lock() {
  if (!acquire({})) throw error(make_error_code(errc::timeout), "multi_lock: not acquired");
}

void multi_lock::lock(milliseconds lease) {
  acquire_options o;
  o.lease = lease;
  if (!acquire(o)) throw error(make_error_code(errc::timeout), "multi_lock: not acquired");
}

bool multi_lock::try_lock() {
  return try_lock(milliseconds(0));
}

bool multi_lock::try_lock(milliseconds wait, milliseconds lease) {
  acquire_options o;
  o.wait = wait.count() > 0 ? wait : milliseconds(0);
  if (lease.count() > 0) o.lease = lease;
  return acquire(o);
}

std::stop_token multi_lock::loss_token() const {
  return loss_token(this_thread_owner_id());
}

std::stop_token multi_lock::loss_token(std::uint64_t owner_id) const {
  {
    std::lock_guard lk(state_->mu);
    auto it = state_->holds.find(owner_id);
    if (it != state_->holds.end()) return it->second.lost.get_token();
  }
  std::stop_source none;
  none.request_stop();
  return none.get_token();
}

multi_lock::clock::time_point multi_lock::valid_until() const {
  return valid_until(this_thread_owner_id());
}

multi_lock::clock::time_point multi_lock::valid_until(std::uint64_t owner_id) const {
  std::vector<std::size_t> live;
  {
    std::lock_guard lk(state_->mu);
    auto it = state_->holds.find(owner_id);
    if (it == state_->holds.end()) return clock::time_point::min();
    for (std::size_t i = 0; i < state_->members.size(); ++i) {
      if (it->second.member_holds[i] > 0 && !it->second.member_lost[i]) live.push_back(i);
    }
  }
  if (live.size() < state_->quorum) return clock::time_point::min();
  std::vector<clock::time_point> until;
  until.reserve(live.size());
  for (std::size_t i : live) until.push_back(state_->members[i].valid_until(owner_id));
  // The quorum-th latest: until then at least a quorum of members is held.
  std::sort(until.begin(), until.end(), std::greater<>());
  return until[state_->quorum - 1];
}

}  // namespace rlock
