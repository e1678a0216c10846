// What a renewal whose reply is lost may do afterwards, reduced to deterministic tests (public
// API and the fault proxy only).
#include <gtest/gtest.h>

#include <rlock/client.hpp>
#include <string>
#include <thread>

#include "faults/connections_settled.hpp"
#include "faults/fault_proxy.hpp"
#include "support/fast_config.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace rlock::faults {
namespace {

using namespace std::chrono_literals;

// A renewal whose reply was lost must not reach the server again after its owner's final
// unlock. A resend (renewal was marked idempotent) was written after the owner's unlock and
// re-acquire with a 10 s lease, found the owner field, and cut the new hold's TTL to the
// watchdog's 3 s: another client could take the lock 3 s later while its holder counted on
// 10 s, and no loss was reported.
TEST(fault_renewal_outcome, a_renewal_whose_reply_is_lost_does_not_cut_the_owners_next_hold) {
  test::redis_server server;
  fault_proxy proxy(server.port());
  config cfg = test::fast_config(proxy.url());
  cfg.client_name = "renewer";
  cfg.timeout = 1000ms;
  cfg.connect_timeout = 1000ms;
  // A renewal every second, each with a deadline of a second: a resend, if any, goes out 500 to
  // 1000 ms after its attempt failed, after the unlock and re-acquire below, which wait for the
  // reconnect (10-100 ms) and are not retried.
  cfg.lock_watchdog_timeout = 3000ms;
  cfg.retry_delay_base = 1000ms;
  cfg.retry_delay_max = 1000ms;
  client c(cfg);
  rlock::lock l = c.get_lock("renewed");
  l.lock();
  c.execute({"PING"});
  ASSERT_TRUE(
      test::wait_until([&server] { return connections_settled(server, "renewer", 2); }, 10s));
  // The proxy relays what is ready in order: once this reply is through, so is every reply
  // written before it, and the next reply is a renewal's.
  ASSERT_EQ(c.execute({"PING"}).str(), "PONG");
  proxy.set_mode(proxy_mode::drop_one_reply);
  ASSERT_TRUE(test::wait_until([&proxy] { return proxy.stats().replies_dropped == 1; }, 10s));
  // The command connection, closed with the reply it lost, is back.
  ASSERT_TRUE(
      test::wait_until([&server] { return connections_settled(server, "renewer", 2); }, 10s));
  l.unlock_or_throw();
  ASSERT_TRUE(l.try_lock(0ms, 10000ms));
  // The window in which a resend of the lost renewal would have reached the server: its
  // duration, not a wait for an outcome.
  std::this_thread::sleep_for(1200ms);
  const long long pttl = std::stoll(server.cli({"PTTL", "renewed"}));
  EXPECT_GT(pttl, 5000) << "a stale renewal cut the 10 s lease of the owner's next hold";
  EXPECT_FALSE(l.loss_token().stop_requested());
  l.unlock_or_throw();
}

// A renewal that fails is retried after min(watchdog timeout / 10, 1 s), later than the end of
// a short lease a re-entry set meanwhile (Redisson's script sets the re-entry's lease as the
// TTL). The retry must come before that deadline, not after it: here the renewal that a 1.2 s
// re-entry brings forward (400 ms after it) loses its reply, and a retry 1 s later would find
// the hold already reported lost, with the server healthy and the lock still held.
TEST(fault_renewal_outcome, a_failed_renewal_of_a_short_lease_is_retried_before_it_ends) {
  test::redis_server server;
  fault_proxy proxy(server.port());
  config cfg = test::fast_config(proxy.url());
  cfg.client_name = "short";  // the default 30 s watchdog: a failed renewal is retried after 1 s
  client c(cfg);
  rlock::lock l = c.get_lock("short");
  l.lock();
  c.execute({"PING"});
  ASSERT_TRUE(test::wait_until([&server] { return connections_settled(server, "short", 2); }, 10s));
  const auto lost = l.loss_token();
  l.lock(1200ms);  // TTL 1.2 s; the next round comes 400 ms after this was sent
  // The next reply is that round's renewal's (its script runs, the reply is lost).
  proxy.set_mode(proxy_mode::drop_one_reply);
  ASSERT_TRUE(test::wait_until([&proxy] { return proxy.stats().replies_dropped == 1; }, 5s));
  EXPECT_TRUE(test::wait_until(
      [&l] { return l.valid_until() > std::chrono::steady_clock::now() + 5s; }, 3s))
      << "not renewed before the re-entry's lease ended";
  EXPECT_FALSE(lost.stop_requested()) << "reported lost with the server healthy";
  l.unlock_or_throw();
  l.unlock_or_throw();
}

}  // namespace
}  // namespace rlock::faults
