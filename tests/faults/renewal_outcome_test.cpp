// What a renewal whose reply is lost may do afterwards, reduced to deterministic tests (public
// API and the fault proxy only).
#include <gtest/gtest.h>

#include <future>
#include <rlock/client.hpp>
#include <string>
#include <thread>

#include "faults/connections_settled.hpp"
#include "faults/fault_proxy.hpp"
#include "support/blocked_pool.hpp"
#include "support/client_list.hpp"
#include "support/fast_config.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace rlock::faults {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

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

/// True once connection `id` has run everything it was sent and written every reply out.
bool drained(const test::redis_server& server, const std::string& id) {
  for (const test::client_fields& f : test::client_list(server)) {
    if (f.at("id") != id) continue;
    return f.at("flags").find('b') == std::string::npos && f.at("qbuf") == "0" &&
           f.at("obl") == "0" && f.at("oll") == "0";
  }
  return false;
}

// With a pool, a re-entry sent before a renewal can run after it (on the other connection) and
// be answered first. The server's TTL is then the re-entry's lease, and the renewal's reply
// must not move the holder's deadline past it: valid_until() beyond the server's expiry lets
// the holder work on after another client took the lock. The renewal must also come again
// before the re-entry's lease ends. Each connection is held by a BLPOP (CLIENT UNBLOCK orders
// the server's work); the proxy holds the renewal's reply back (hang, then delay).
TEST(fault_renewal_outcome, a_re_entry_run_after_a_renewal_sent_after_it_bounds_the_deadline) {
  test::redis_server server;
  fault_proxy proxy(server.port());
  config cfg = test::fast_config(proxy.url());
  cfg.client_name = "raced";
  cfg.connection_pool_size = 2;
  cfg.lock_watchdog_timeout = 18000ms;  // a round every 6 s
  cfg.timeout = 20000ms;                // the BLPOPs below wait up to about 8 s
  cfg.ping_connection_interval = 60000ms;
  test::blocked_pool blocks;  // before the client, whose shutdown may complete the BLPOPs
  std::promise<std::error_code> reentered;
  client c(cfg);
  rlock::lock l = c.get_lock("raced");
  l.lock();
  const auto lost = l.loss_token();
  ASSERT_TRUE(blocks.block(c, server, "raced"));
  // The re-entry (10 s lease) waits behind one BLPOP, the first round's renewal (6 s after the
  // acquire) behind the other.
  l.async_lock(rlock::this_thread_owner_id(), 10000ms,
               [&](std::error_code ec) { reentered.set_value(ec); });
  std::string reentry_conn;
  ASSERT_TRUE(test::wait_until(
      [&] { return !(reentry_conn = test::blocked_with_pending(server, "raced")).empty(); }, 5s));
  std::string renewal_conn;
  ASSERT_TRUE(test::wait_until(
      [&] {
        return !(renewal_conn = test::blocked_with_pending(server, "raced", reentry_conn)).empty();
      },
      10s))
      << "the renewal did not go to the other connection";
  // The renewal runs first; its reply stays in the proxy's socket (hang) until the proxy reads
  // it under a 1.5 s delay.
  proxy.set_mode(proxy_mode::hang);
  server.cli({"CLIENT", "UNBLOCK", renewal_conn});
  ASSERT_TRUE(test::wait_until([&] { return drained(server, renewal_conn); }, 5s));
  proxy.set_mode(proxy_mode::delay, 1500ms);
  proxy.set_mode(proxy_mode::pass);
  // The re-entry runs second (TTL 10 s from now) and is answered at once.
  server.cli({"CLIENT", "UNBLOCK", reentry_conn});
  auto reentry = reentered.get_future();
  ASSERT_EQ(reentry.wait_for(5s), std::future_status::ready);
  ASSERT_FALSE(reentry.get());
  // Once renewed again (the round the renewal's reply brings forward), the holder's deadline
  // must lie within the server's expiry. Against the bug it is at once: the renewal's reply
  // set it 18 s after the renewal was sent, 8 s past the re-entry's TTL.
  ASSERT_TRUE(test::wait_until([&] { return l.valid_until() > steady::now() + 12s; }, 10s))
      << "not renewed before the re-entry's lease ended; lost: " << lost.stop_requested();
  const auto valid_until = l.valid_until();
  const long long pttl = std::stoll(server.cli({"PTTL", "raced"}));
  const auto server_expiry = steady::now() + std::chrono::milliseconds(pttl);
  EXPECT_LE(valid_until, server_expiry + 20ms)
      << "the holder counts on "
      << std::chrono::duration_cast<std::chrono::milliseconds>(valid_until - server_expiry).count()
      << " ms past the server's expiry";
  EXPECT_FALSE(lost.stop_requested()) << "reported lost with the server healthy";
  blocks.wait();
  l.unlock_or_throw();
  l.unlock_or_throw();
}

}  // namespace
}  // namespace rlock::faults
