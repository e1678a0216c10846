#include "connect.hpp"

#include <poll.h>

#include <memory>
#include <mutex>
#include <thread>

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

/// rlock::error's text without the ": <code message>" std::system_error appends.
std::string own_text(const rlock::error& e) {
  std::string text = e.what();
  const std::string suffix = ": " + e.code().message();
  if (text.ends_with(suffix)) text.erase(text.size() - suffix.size());
  return text;
}

/// A hint when a failure looks like a client speaking the other protocol than the port: a TLS
/// port resets or closes a plaintext client right after its first command, and a plaintext port
/// answers a TLS handshake with an error line (OpenSSL: "wrong version number") or, Redis waiting
/// for the end of a command line that never comes, not at all: the handshake times out.
std::string scheme_hint(const rlock::server_address& address, const std::string& why) {
  using scheme = rlock::server_address::scheme;
  const auto says = [&why](const char* text) { return why.find(text) != std::string::npos; };
  // The close is reported as "server closed the connection" when the client's reader saw it
  // (the common case under load), as the socket's "End of file" when the setup's write did.
  if (address.kind == scheme::redis &&
      (says("reset by peer") || says("End of file") || says("end of file") ||
       says("server closed the connection"))) {
    return "; is this a TLS port? use rediss://";
  }
  if (address.kind == scheme::rediss &&
      (says("in the TLS handshake") || says("wrong version number") ||
       says("packet length too long") || says("record layer failure"))) {
    return "; is this a plaintext port? use redis://";
  }
  return "";
}

/// A hint when the port serves Redis Sentinel: it answers PING but knows no SCRIPT (nor EVALSHA),
/// and rlock does not follow Sentinel to the master. (A server with SCRIPT renamed away answers
/// the same; the hint asks rather than says.)
std::string sentinel_hint(const std::string& why) {
  if (why.find("SCRIPT LOAD failed during connection setup: ERR unknown command") ==
      std::string::npos) {
    return "";
  }
  return "; is this a Redis Sentinel port? use --sentinel URL --master-name NAME, or the "
         "master's own address";
}

/// Sentinel mode's "where": the master's name and the Sentinels asked for it.
std::string sentinel_master_name(const rlock::config& cfg) {
  std::string text = "master '" + cfg.master_name + "' via Sentinel";
  for (std::size_t i = 0; i < cfg.sentinel_addresses.size(); ++i) {
    text += (i == 0 ? " " : ", ") + rlock::parse_url(cfg.sentinel_addresses[i]).to_string();
  }
  return text;
}

/// Why the client could not connect, once its own connect timeout has had its chance to fire:
/// the CLI's deadline equals it, so the library's record may lag it by a moment (bounded).
rlock::connection_status failure_of(const rlock::client& client) {
  constexpr auto grace = std::chrono::milliseconds(200);
  const auto until = clock::now() + grace;
  for (;;) {
    rlock::connection_status st = client.status();
    if (st.error || st.connected || clock::now() >= until) return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

/// Cluster mode's "where": the seeds.
std::string cluster_seeds(const rlock::config& cfg) {
  std::string text = "the cluster of";
  for (std::size_t i = 0; i < cfg.cluster_addresses.size(); ++i) {
    text += (i == 0 ? " " : ", ") + rlock::parse_url(cfg.cluster_addresses[i]).to_string();
  }
  return text;
}

rlock::client connect_checked(const rlock::config& cfg, signal_channel* interrupt) {
  const bool cluster_mode = !cfg.cluster_addresses.empty();
  const bool sentinel_mode = !cfg.master_name.empty();
  const rlock::server_address address =
      rlock::parse_url(cluster_mode    ? cfg.cluster_addresses.front()
                       : sentinel_mode ? cfg.sentinel_addresses.front()
                                       : cfg.address);
  const std::string where = cluster_mode    ? cluster_seeds(cfg)
                            : sentinel_mode ? sentinel_master_name(cfg)
                                            : address.to_string();
  const bool password_given = cfg.password.has_value() || address.password.has_value();
  rlock::client client = [&] {
    try {
      return rlock::client(cfg);
    } catch (const rlock::error& e) {
      // The client loads its TLS files when it is created, before any I/O: a TLS failure here
      // is a local file (no certificate in it, a key that does not fit the certificate).
      if (e.code() == rlock::errc::tls_error) {
        throw command_error(exit_codes::no_input, own_text(e));
      }
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
      // The library's record names the step that did not finish ("in the TLS handshake",
      // "before the connection was accepted", ...): the hint only follows the steps it fits.
      const rlock::connection_status st = failure_of(client);
      std::string text = "no answer from " + where + " within " +
                         format_duration(cfg.connect_timeout) + " (--connect-timeout)";
      if (st.error && !st.detail.empty()) {
        // "connecting to <where> timed out in ...": the address is already said.
        const std::string prefix = "connecting to " + where + " ";
        text +=
            ": " + (st.detail.starts_with(prefix) ? st.detail.substr(prefix.size()) : st.detail);
      }
      throw command_error(
          exit_codes::unavailable,
          text + (sentinel_mode || cluster_mode ? "" : scheme_hint(address, st.detail)));
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
    if (!sentinel_mode && !cluster_mode) {
      text += scheme_hint(address, result->why) + sentinel_hint(result->why);
    }
    if (!password_given &&
        (result->ec == rlock::errc::auth_failed || result->ec == rlock::errc::auth_required)) {
      text += "; no password was given (--password-file, or one in $RLOCK_URL or $RLOCK_PASSWORD)";
    }
    throw command_error(code == exit_codes::software ? exit_codes::unavailable : code, text);
  }
  return client;
}

}  // namespace rlock::cli
