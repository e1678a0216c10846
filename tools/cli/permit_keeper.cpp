#include "permit_keeper.hpp"

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <system_error>
#include <utility>

namespace rlock::cli {
namespace {

using std::chrono::milliseconds;

/// One renewal's answer, shared with its handler (which may run after the keeper is gone).
struct renewal_answer {
  std::mutex mu;
  std::condition_variable_any cv;
  bool done = false;
  std::error_code ec;
  bool held = false;
};

}  // namespace

permit_keeper::permit_keeper(rlock::permit_expirable_semaphore semaphore, std::string id,
                             milliseconds lease, clock::time_point valid_until, bool renew)
    : semaphore_(std::move(semaphore)),
      id_(std::move(id)),
      lease_(lease),
      valid_until_(valid_until),
      renew_(renew),
      thread_([this](const std::stop_token& stop) { run(stop); }) {}

permit_keeper::~permit_keeper() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

void permit_keeper::run(const std::stop_token& stop) {
  std::mutex mu;
  std::condition_variable_any idle;
  auto sleep_until = [&](clock::time_point t) {  // false when stopped
    std::unique_lock lk(mu);
    idle.wait_until(lk, stop, t, [] { return false; });  // woken by the stop only
    return !stop.stop_requested();
  };
  clock::time_point valid = valid_until_;
  if (!renew_) {
    if (sleep_until(valid)) lost_.request_stop();
    return;
  }
  const milliseconds retry = std::min(std::max(lease_ / 10, milliseconds(1)), milliseconds(1000));
  clock::time_point next = valid - lease_ + lease_ / 3;
  for (;;) {
    if (!sleep_until(std::min(next, valid))) return;
    const clock::time_point sent = clock::now();
    if (sent >= valid) break;
    auto answer = std::make_shared<renewal_answer>();
    semaphore_.async_update_lease_time(id_, lease_, [answer](std::error_code ec, bool held) {
      const std::lock_guard lk(answer->mu);
      answer->done = true;
      answer->ec = ec;
      answer->held = held;
      answer->cv.notify_all();
    });
    std::unique_lock lk(answer->mu);
    answer->cv.wait_until(lk, stop, valid, [&answer] { return answer->done; });
    if (stop.stop_requested()) return;
    if (!answer->done) break;                         // no answer before the lease may have ended
    if (answer->ec == rlock::errc::shutdown) return;  // rlock is exiting
    if (answer->ec) {
      next = clock::now() + retry;
      continue;
    }
    if (!answer->held) break;
    valid = sent + lease_;
    next = sent + lease_ / 3;
  }
  lost_.request_stop();
}

}  // namespace rlock::cli
