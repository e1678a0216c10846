#include "bench_lock_set.hpp"

#include <condition_variable>
#include <mutex>

namespace rlock::cli {

struct bench_lock_set::shared_state {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<bool> held;
  std::size_t in_flight = 0;
  std::size_t released = 0;
  std::size_t failures = 0;
  std::string first_error;

  void failed(std::error_code ec) {
    ++failures;
    if (first_error.empty()) first_error = ec.message();
  }
};

bench_lock_set::bench_lock_set(const rlock::client& c, const std::string& prefix,
                               const std::string& tag, std::size_t count)
    : state_(std::make_shared<shared_state>()) {
  locks_.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    locks_.push_back(c.get_lock(prefix + tag + ":" + std::to_string(i)));
  }
  state_->held.assign(count, false);
}

std::size_t bench_lock_set::acquire_all(clock::time_point deadline,
                                        std::optional<std::chrono::milliseconds> lease,
                                        std::size_t window) {
  const auto s = state_;
  std::unique_lock lk(s->mu);
  for (std::size_t i = 0; i < locks_.size(); ++i) {
    if (!s->cv.wait_until(lk, deadline, [&] { return s->in_flight < window; })) break;
    ++s->in_flight;
    lk.unlock();
    const auto done = [s, i](std::error_code ec) {
      std::lock_guard g(s->mu);
      --s->in_flight;
      if (ec) {
        s->failed(ec);
      } else {
        s->held[i] = true;
      }
      s->cv.notify_all();
    };
    if (lease) {
      locks_[i].async_lock(owner_id, *lease, done);
    } else {
      locks_[i].async_lock(owner_id, done);
    }
    lk.lock();
  }
  s->cv.wait_until(lk, deadline, [&] { return s->in_flight == 0; });
  std::size_t held = 0;
  for (const bool h : s->held) held += h ? 1 : 0;
  return held;
}

std::size_t bench_lock_set::release_all(clock::time_point deadline, std::size_t window) {
  const auto s = state_;
  std::unique_lock lk(s->mu);
  s->released = 0;
  for (std::size_t i = 0; i < locks_.size(); ++i) {
    if (!s->held[i]) continue;
    if (!s->cv.wait_until(lk, deadline, [&] { return s->in_flight < window; })) break;
    ++s->in_flight;
    s->held[i] = false;
    lk.unlock();
    locks_[i].async_unlock(owner_id, [s](std::error_code ec) {
      std::lock_guard g(s->mu);
      --s->in_flight;
      if (ec) {
        s->failed(ec);
      } else {
        ++s->released;
      }
      s->cv.notify_all();
    });
    lk.lock();
  }
  s->cv.wait_until(lk, deadline, [&] { return s->in_flight == 0; });
  return s->released;
}

std::size_t bench_lock_set::failures() const {
  std::lock_guard g(state_->mu);
  return state_->failures;
}

std::string bench_lock_set::first_error() const {
  std::lock_guard g(state_->mu);
  return state_->first_error;
}

}  // namespace rlock::cli
