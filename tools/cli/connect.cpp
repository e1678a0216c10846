#include "connect.hpp"

#include <poll.h>

#include <memory>
#include <mutex>

#include "command_error.hpp"
#include "duration.hpp"
#include "event_flag.hpp"
#include "signal_channel.hpp"
#include "signal_names.hpp"

namespace rlock::cli {
namespace {

using clock = std::chrono::steady_clock;

struct ping_result {
  std::mutex mu;
  bool done = false;
  std::error_code ec;
  std::string why;  // the server's error text, or the client's description of the failure
  event_flag flag;
};

}  // namespace

rlock::client connect_checked(const rlock::config& cfg, signal_channel* interrupt) {
  const rlock::server_address address = rlock::parse_url(cfg.address);
  const std::string where = address.to_string();
  const bool password_given = cfg.password.has_value() || address.password.has_value();
  rlock::client client = [&] {
    try {
      return rlock::client(cfg);
    } catch (const rlock::error& e) {
      throw command_error(exit_code_for(e.code()), e.what());
    }
  }();
  auto result = std::make_shared<ping_result>();
  client.async_execute({"PING"}, [result](std::error_code ec, const rlock::reply& r) {
    std::lock_guard lk(result->mu);
    result->done = true;
    result->ec = ec;
    if (ec && r.is_error()) result->why = std::string(r.str());
    result->flag.raise();
  });
  const auto deadline = clock::now() + cfg.connect_timeout;
  for (;;) {
    {
      std::lock_guard lk(result->mu);
      if (result->done) break;
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() <= 0) {
      throw command_error(exit_codes::unavailable, "no answer from " + where + " within " +
                                                       format_duration(cfg.connect_timeout) +
                                                       " (--connect-timeout)");
    }
    pollfd fds[2] = {{result->flag.fd(), POLLIN, 0}, {-1, POLLIN, 0}};
    if (interrupt != nullptr) fds[1].fd = interrupt->fd();
    ::poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 60'000)));
    if (interrupt != nullptr) {
      while (auto info = interrupt->next()) {
        const int sig = static_cast<int>(info->ssi_signo);
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
          throw command_error(exit_codes::signal_base + sig,
                              "interrupted by " + signal_name(sig) + " while connecting");
        }
      }
    }
  }
  std::lock_guard lk(result->mu);
  // A server that cannot persist answers PING with MISCONF (so that health checks notice) but
  // serves reads: it is reachable. Writes then report MISCONF themselves.
  if (result->ec && !result->why.starts_with("MISCONF")) {
    const int code = exit_code_for(result->ec);
    std::string text = "cannot use " + where + ": " + result->ec.message();
    if (!result->why.empty()) text += "; " + result->why;
    if (!password_given &&
        (result->ec == rlock::errc::auth_failed || result->ec == rlock::errc::auth_required)) {
      text += "; no password was given (--password-file, or one in $RLOCK_URL or $RLOCK_PASSWORD)";
    }
    throw command_error(code == exit_codes::software ? exit_codes::unavailable : code, text);
  }
  return client;
}

}  // namespace rlock::cli
