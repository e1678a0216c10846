#include "exec_acquire.hpp"

#include <poll.h>

#include <memory>
#include <mutex>
#include <stop_token>

#include "duration.hpp"
#include "event_flag.hpp"
#include "holder_probe.hpp"
#include "lock_release.hpp"

namespace rlock::cli {
namespace {

using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct completion {
  std::mutex mu;
  bool done = false;
  std::error_code ec;
  bool acquired = false;
  std::optional<rlock::fencing_token> token;
  std::string error_detail;  // written by the library before the handler runs
  event_flag flag;

  void finish(std::error_code e, bool got, std::optional<rlock::fencing_token> t) {
    std::lock_guard lk(mu);
    done = true;
    ec = e;
    acquired = got;
    token = t;
    flag.raise();
  }
};

milliseconds since(clock::time_point t0) {
  return std::chrono::duration_cast<milliseconds>(clock::now() - t0);
}

}  // namespace

acquire_result acquire_for_exec(rlock::client& client, const exec_lock& lock,
                                const acquire_request& request, signal_channel& signals,
                                status_line& line) {
  const auto t0 = clock::now();
  auto result = std::make_shared<completion>();
  std::stop_source stop;
  rlock::acquire_options opts;
  opts.wait = request.wait;
  opts.lease = request.lease;
  opts.stop = stop.get_token();
  opts.error_detail = &result->error_detail;
  lock.acquire(request.owner, opts,
               [result](std::error_code ec, bool acquired, std::optional<rlock::fencing_token> t) {
                 result->finish(ec, acquired, t);
               });

  // A lock's hash is read for its holder; a semaphore for the permits taken.
  holder_probe probe(
      client, lock.key, [result] { result->flag.raise(); },
      lock.lock_hash ? holder_probe::target::lock : holder_probe::target::permits);
  probe.refresh();  // answered by the first tick; tells an application's hash at once
  const milliseconds period =
      line.mode() == progress_mode::log ? milliseconds(5000) : milliseconds(250);
  auto next_tick = t0 + milliseconds(250);
  int interrupted_by = 0;
  bool not_a_lock = false;
  for (;;) {
    // Read before not_a_lock(): one reply sets both, so a probe seen settled here has its verdict
    // read below. Read after it, a reply landing in between would end the wait on a settled probe
    // whose verdict was never looked at (an application's hash reported as held, 75, not 65).
    const bool probe_settled = probe.settled();
    if (!not_a_lock && interrupted_by == 0 && probe.not_a_lock()) {
      not_a_lock = true;
      stop.request_stop();  // the acquire completes with errc::stopped, nothing held
    }
    {
      // A lock found held is reported once the key's first read has told whether it is a lock
      // at all (an application's hash is exit 65, not 75).
      std::lock_guard lk(result->mu);
      if (result->done &&
          (result->ec || result->acquired || not_a_lock || interrupted_by != 0 || probe_settled)) {
        break;
      }
    }
    int timeout_ms = -1;
    if (line.mode() != progress_mode::off) {
      const auto left = std::chrono::ceil<milliseconds>(next_tick - clock::now());
      timeout_ms = static_cast<int>(std::max<long long>(0, left.count()));
    }
    pollfd fds[2] = {{result->flag.fd(), POLLIN, 0}, {signals.fd(), POLLIN, 0}};
    ::poll(fds, 2, timeout_ms);
    result->flag.clear();
    while (auto info = signals.next()) {
      const int sig = static_cast<int>(info->ssi_signo);
      if ((sig == SIGINT || sig == SIGTERM || sig == SIGHUP) && interrupted_by == 0) {
        interrupted_by = sig;
        stop.request_stop();  // the acquire completes with errc::stopped, nothing held
      }
    }
    if (line.mode() != progress_mode::off && clock::now() >= next_tick && interrupted_by == 0 &&
        !not_a_lock) {
      probe.refresh();
      std::string text = "rlock: waiting " + format_duration(since(t0)) + " for " +
                         (lock.lock_hash ? "'" : "a permit of '") + lock.name + "'";
      if (request.wait && request.wait->count() == 0) {
        text += " (one attempt)";  // --wait 0s: a single try, bounded by --timeout
      } else if (request.wait) {
        text += " (of " + format_duration(*request.wait) + ")";
      }
      if (const std::string holder = probe.describe(); !holder.empty()) text += ": " + holder;
      line.update(text);
      next_tick += period;
    }
  }
  line.clear();

  acquire_result out;
  out.waited = since(t0);
  std::lock_guard lk(result->mu);
  if (interrupted_by != 0 || not_a_lock) {
    if (!result->ec && result->acquired) {
      // Acquired just before the stop took effect: give it back before reporting.
      // If this fails the hold ends with its lease anyway.
      [[maybe_unused]] const std::error_code ec =
          release_hold(lock, request.owner, 2 * client.get_config().timeout, signals);
    }
    out.outcome = interrupted_by != 0 ? acquire_outcome::interrupted : acquire_outcome::not_a_lock;
    out.signal = interrupted_by;
    return out;
  }
  if (result->ec) {
    out.outcome = acquire_outcome::failed;
    out.error = result->ec;
    out.error_detail = result->error_detail;
    return out;
  }
  out.outcome = result->acquired ? acquire_outcome::acquired : acquire_outcome::not_acquired;
  out.token = result->token;
  return out;
}

}  // namespace rlock::cli
