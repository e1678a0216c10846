// Helpers of the hostile-server tests (hostile_*_test.cpp): run one blocking call with a hard
// limit and record its error and duration; read one INFO field.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "common.hpp"
#include "support/sanitizer_slowdown.hpp"

namespace rlock::test {

/// What a blocking call did: its result (false when it threw), its error, how long it took.
struct outcome {
  bool value = false;
  std::error_code ec{};
  std::string what{};
  long long took = 0;  // ms
};

/// Far beyond any deadline these tests configure: a call still running then has hung.
inline constexpr std::chrono::seconds hang_limit{30};

/// Added to every bound derived from a config: timer and thread scheduling on a loaded machine,
/// and the CPU work that no deadline can cut short (building a command of 1 or 32 MiB, copying
/// it into fresh memory). A sanitizer build slows that work by its documented factor:
/// RLOCK_SANITIZER_SLOWDOWN, set by cmake/sanitizers.cmake (5 under ThreadSanitizer, whose
/// shadow memory is updated and faulted in for every large copy; 1 otherwise). The normal and
/// AddressSanitizer builds check these bounds at factor 1.
inline constexpr std::chrono::milliseconds slack{500 * RLOCK_SANITIZER_SLOWDOWN};

/// The longest a request that never reaches the server may take: every attempt waits at most
/// min(timeout, connect_timeout) (its own deadline, or the connect attempt it waits for), and
/// at most retry_delay_max passes between attempts.
inline std::chrono::milliseconds retry_budget(const config& cfg) {
  return cfg.retry_attempts * (std::min(cfg.timeout, cfg.connect_timeout) + cfg.retry_delay_max) +
         slack;
}

/// Runs `f` (returning bool) on the calling thread (so lock ownership is the caller's) while a
/// watchdog thread waits at most hang_limit for it. A call that does not return by then is a
/// hang: the test process aborts with a message rather than blocking ctest until its timeout.
template <class F>
outcome run_bounded(F f) {
  std::promise<void> finished;
  std::thread watchdog([done = finished.get_future()] {
    if (done.wait_for(hang_limit) != std::future_status::ready) {
      std::fprintf(stderr, "hostile test: a blocking call did not return within %lld s\n",
                   static_cast<long long>(hang_limit.count()));
      std::abort();
    }
  });
  outcome o;
  const auto t0 = steady::now();
  try {
    o.value = f();
  } catch (const error& e) {
    o.ec = e.code();
    o.what = e.what();
  }
  o.took = ms_since(t0);
  finished.set_value();
  watchdog.join();
  return o;
}

/// A config for a loopback_listener at `url` (not Redis): the given request timeout, a 1 s
/// connect timeout and short retry and reconnect delays, so every bound stays small.
inline config config_for_listener(const std::string& url, std::chrono::milliseconds timeout) {
  config c;
  c.address = url;
  c.timeout = timeout;
  c.connect_timeout = std::chrono::seconds(1);
  c.retry_delay_base = std::chrono::milliseconds(50);
  c.retry_delay_max = std::chrono::milliseconds(100);
  c.reconnect_delay_min = std::chrono::milliseconds(10);
  c.reconnect_delay_max = std::chrono::milliseconds(100);
  return c;
}

/// Checks the outcome of a wait of `wait` that met a server refusing it throughout with a reply
/// that proves nothing ran (BUSY, LOADING, NOREPLICAS): not met, errc::server_busy with `reply`
/// in what() (when not empty), and over by its deadline after using its time (a retry halfway
/// to the deadline) and no more. `what` names the call in failure messages.
inline void expect_busy_until_deadline(const std::string& what, const outcome& o,
                                       std::chrono::milliseconds wait,
                                       const std::string& reply = {}) {
  EXPECT_FALSE(o.value) << what;
  EXPECT_EQ(o.ec, errc::server_busy) << what << ": " << o.what;
  if (!reply.empty()) {
    EXPECT_NE(o.what.find(reply), std::string::npos) << what << ": " << o.what;
  }
  EXPECT_GE(o.took, (wait / 2).count()) << what;
  EXPECT_LT(o.took, (wait + slack).count()) << what;
}

/// A config for `server` with Redisson's retry delays (rlock's defaults, 1-2 s between
/// attempts) instead of the tests' short ones.
inline config redisson_delays(const redis_server& server) {
  config cfg = config_for(server);
  cfg.retry_delay_base = config{}.retry_delay_base;
  cfg.retry_delay_max = config{}.retry_delay_max;
  return cfg;
}

/// The integer value of `field` in INFO `section` (for example memory / used_memory).
inline long long info_field(const redis_server& server, const std::string& section,
                            const std::string& field) {
  const std::string info = server.cli({"INFO", section});
  const auto at = info.find(field + ":");
  if (at == std::string::npos) throw std::runtime_error("INFO has no " + field);
  return std::stoll(info.substr(at + field.size() + 1));
}

}  // namespace rlock::test
