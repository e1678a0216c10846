// Shared helpers for integration tests.
#pragma once

#include <chrono>
#include <future>
#include <string>

#include "rlock/client.hpp"
#include "rlock/lock.hpp"
#include "support/fast_config.hpp"
#include "support/redis_server.hpp"

namespace rlock::test {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

/// A config pointing at `server`, with short retry delays so failure tests stay quick.
inline config config_for(const redis_server& server) {
  return fast_config(server.url());
}

/// A waiter on its own thread: try_lock(wait) on `l`, unlocking at once if it got the lock. The
/// future says whether it did. `l` must outlive the future.
inline std::future<bool> try_lock_then_unlock_async(lock& l, std::chrono::milliseconds wait) {
  return std::async(std::launch::async, [&l, wait] {
    const bool ok = l.try_lock(wait);
    if (ok) l.unlock_or_throw();
    return ok;
  });
}

/// Milliseconds from `from` to `to`.
inline long long ms_between(steady::time_point from, steady::time_point to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

/// Milliseconds elapsed since `t0`.
inline long long ms_since(steady::time_point t0) {
  return ms_between(t0, steady::now());
}

/// The server's clock in epoch ms (TIME).
inline long long server_ms(const redis_server& server) {
  const auto t = server.cli_reply({"TIME"});
  return std::stoll(t.elements.at(0).str) * 1000 + std::stoll(t.elements.at(1).str) / 1000;
}

/// Calls of `command` (lower case) the server has counted (INFO commandstats; those run inside
/// scripts too).
inline long calls_of(const redis_server& server, const std::string& command) {
  const auto info = server.cli({"INFO", "commandstats"});
  const auto line = info.find("cmdstat_" + command + ":calls=");
  if (line == std::string::npos) return 0;
  return std::stol(info.substr(line + command.size() + 15));
}

/// EVALSHA calls the server has counted (INFO commandstats), rejected ones included (refused
/// before they ran, as with MISCONF; a script refused inside counts as a call).
inline long evalsha_calls(const redis_server& server) {
  const auto info = server.cli({"INFO", "commandstats"});
  const auto line = info.find("cmdstat_evalsha:");
  if (line == std::string::npos) return 0;
  const auto end = info.find('\n', line);
  const auto field = [&](const std::string& name) {
    const auto at = info.find(name, line);
    return at == std::string::npos || at > end ? 0L : std::stol(info.substr(at + name.size()));
  };
  return field("calls=") + field("rejected_calls=");
}

/// Whether `key` exists on `server` (a master, or a replica a test reads from).
inline bool exists_on(const redis_server& server, const std::string& key) {
  return server.cli_reply({"EXISTS", key}).integer == 1;
}

/// Members of the sorted set `key` (a lock's wait queue: rlock_queue:{<name>}).
inline long long zcard(const redis_server& server, const std::string& key) {
  return server.cli_reply({"ZCARD", key}).integer;
}

/// Subscribers of a channel, as the server counts them (PUBSUB NUMSUB).
inline long long numsub_of(const redis_server& server, const std::string& channel) {
  return server.cli_reply({"PUBSUB", "NUMSUB", channel}).elements.at(1).integer;
}

/// The code of the rlock::error that `f` throws; {} when it throws none.
template <class F>
std::error_code code_of(F&& f) {
  try {
    f();
  } catch (const error& e) {
    return e.code();
  }
  return {};
}

/// The rlock::error that `f` throws: its code ({} when it throws none) and what().
struct thrown {
  std::error_code code;
  std::string what;
};
template <class F>
thrown thrown_by(F&& f) {
  try {
    f();
  } catch (const error& e) {
    return {e.code(), e.what()};
  }
  return {};
}

}  // namespace rlock::test
