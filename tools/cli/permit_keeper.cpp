#include "permit_keeper.hpp"

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
      protocol_(lease, renew, valid_until),
      thread_([this](const std::stop_token& stop) { run(stop); }) {}

permit_keeper::~permit_keeper() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

void permit_keeper::run(const std::stop_token& stop) {
  std::mutex mu;
  std::condition_variable_any idle;
  permit_renewal::action a = protocol_.next(clock::now());
  for (;;) {
    switch (a.what) {
      case permit_renewal::step::lost:
        lost_.request_stop();
        return;
      case permit_renewal::step::wait: {
        std::unique_lock lk(mu);
        idle.wait_until(lk, stop, a.until, [] { return false; });  // woken by the stop only
        if (stop.stop_requested()) return;
        a = protocol_.next(clock::now());
        break;
      }
      case permit_renewal::step::renew: {
        auto answer = std::make_shared<renewal_answer>();
        semaphore_.async_update_lease_time(id_, lease_, [answer](std::error_code ec, bool held) {
          const std::lock_guard lk(answer->mu);
          answer->done = true;
          answer->ec = ec;
          answer->held = held;
          answer->cv.notify_all();
        });
        std::unique_lock lk(answer->mu);
        answer->cv.wait_until(lk, stop, a.until, [&answer] { return answer->done; });
        if (stop.stop_requested()) return;
        if (!answer->done) {
          a = protocol_.next(clock::now());  // no answer by the lease's end: lost
        } else if (answer->ec == rlock::errc::shutdown) {
          return;  // rlock is exiting
        } else {
          a = protocol_.on_reply(clock::now(), static_cast<bool>(answer->ec), answer->held);
        }
        break;
      }
    }
  }
}

}  // namespace rlock::cli
