#include "lock_release.hpp"

#include <poll.h>

#include <algorithm>
#include <memory>
#include <mutex>

#include "event_flag.hpp"

namespace rlock::cli {
namespace {

struct release_outcome {
  std::mutex mu;
  bool done = false;
  std::error_code ec;
  event_flag flag;
};

}  // namespace

std::error_code release_hold(const exec_lock& lock, std::uint64_t owner,
                             std::chrono::milliseconds bound, signal_channel& signals) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  // Shared with the handler: it may run after this function has given up.
  auto result = std::make_shared<release_outcome>();
  lock.unlock(owner, [result](std::error_code ec) {
    std::lock_guard lk(result->mu);
    result->done = true;
    result->ec = ec;
    result->flag.raise();
  });
  for (;;) {
    {
      std::lock_guard lk(result->mu);
      if (result->done) return result->ec;
    }
    while (const auto info = signals.next()) {
      const auto sig = static_cast<int>(info->ssi_signo);
      if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
        return make_error_code(rlock::errc::stopped);
      }
    }
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return make_error_code(rlock::errc::timeout);
    pollfd fds[2] = {{result->flag.fd(), POLLIN, 0}, {signals.fd(), POLLIN, 0}};
    ::poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 60'000)));
    result->flag.clear();
  }
}

}  // namespace rlock::cli
