// A master and a replica that replicates through a fault_proxy, for tests of what a client
// asking for replica acknowledgement (config::replica_sync) does when the replication stream
// stops at a given write (fault_proxy::hang_on).
#pragma once

#include <chrono>
#include <future>
#include <optional>
#include <rlock/client.hpp>
#include <rlock/config.hpp>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "faults/fault_proxy.hpp"
#include "support/event_recorder.hpp"
#include "support/fast_config.hpp"
#include "support/redis_server.hpp"
#include "support/server_monitor.hpp"

namespace rlock::faults {

struct proxied_replica {
  test::redis_server master{
      test::server_options{.extra_args = {"--repl-diskless-sync-delay", "0"}}};
  fault_proxy proxy{master.port()};
  test::redis_server replica{test::server_options{
      .extra_args = {"--replicaof", "127.0.0.1", std::to_string(proxy.port())}}};

  /// A client of the master that waits up to 300 ms for the replica's acknowledgement, and
  /// tries `tries` times (config::replica_sync_tries).
  config client_config(int tries) const {
    using namespace std::chrono_literals;
    config cfg = test::fast_config(master.url());
    cfg.replica_sync = 1;
    cfg.replica_sync_timeout = 300ms;
    cfg.replica_sync_tries = tries;
    return cfg;
  }
};

/// A proxied_replica and a client of its master, trying `tries` times, that records its events.
struct recorded_replica {
  explicit recorded_replica(int tries) : c(recorded(tries)) {}

  proxied_replica p;
  test::event_recorder rec;
  client c;

 private:
  config recorded(int tries) {
    config cfg = p.client_config(tries);
    cfg.on_event = rec.handler();
    return cfg;
  }
};

/// A script run by a client (EVALSHA or EVAL, not a command inside a script).
inline bool client_script(const test::monitored& m) {
  return !m.from_script && !m.args.empty() && (m.args[0] == "EVALSHA" || m.args[0] == "EVAL");
}

/// What watch_one_resend() saw: the first send of a client's script, the send after it,
/// and whether the replication stream was still stopped then.
struct resend_seen {
  std::optional<test::monitored> first;
  std::optional<test::monitored> again;
  bool hung = false;
};

/// Watches `monitor` from another thread (a lock's unlock must come from its holder's thread)
/// for a client's script and the send after it (sent again once the first one's WAIT ran out),
/// then lets the replica catch up (p.proxy in pass), so that the resend after it is confirmed.
inline std::future<resend_seen> watch_one_resend(proxied_replica& p,
                                                 test::server_monitor& monitor) {
  return std::async(std::launch::async, [&p, &monitor] {
    using namespace std::chrono_literals;
    resend_seen out;
    out.first = monitor.next(client_script, 10s);
    out.again = monitor.next(client_script, 10s);
    out.hung = p.proxy.mode() == proxy_mode::hang;
    p.proxy.set_mode(proxy_mode::pass);
    return out;
  });
}

/// The first argument of `m` that starts with `prefix` (a request latch's, such as
/// "redisson_unlock_latch:"), or "" if none.
inline std::string latch_of(const test::monitored& m, std::string_view prefix) {
  for (const auto& a : m.args) {
    if (a.starts_with(prefix)) return a;
  }
  return {};
}

/// The sends of a client's scripts that `monitor` sees until none comes for 500 ms, and the
/// latches (latch_of `prefix`) they name.
inline std::pair<int, std::set<std::string>> sends_seen(test::server_monitor& monitor,
                                                        std::string_view prefix) {
  using namespace std::chrono_literals;
  int scripts = 0;
  std::set<std::string> latches;
  while (const auto m = monitor.next(client_script, 500ms)) {
    ++scripts;
    latches.insert(latch_of(*m, prefix));
  }
  return {scripts, latches};
}

}  // namespace rlock::faults
