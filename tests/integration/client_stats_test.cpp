// client::stats() against a real server: requests and attempts as the server saw them
// (MONITOR), failures by kind, connections set up and dropped, a flushed script cache, pub/sub
// messages and channels, renewals, failed renewals and lost holds, and what stays after
// shutdown.
#include "rlock/client_stats.hpp"

#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>
#include <utility>

#include "common.hpp"
#include "support/server_monitor.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

/// A client's two connections (one command connection, one pub/sub) are set up.
bool both_connected(const client& c) {
  return c.stats().connects == 2;
}

/// No request of `c` is waiting for its reply.
bool settled(const client& c) {
  return c.stats().requests_in_flight == 0;
}

TEST(client_stats, requests_are_what_the_server_saw_and_attempts_what_retrying_added) {
  redis_server server;
  client c(config_for(server));
  ASSERT_TRUE(wait_until([&] { return both_connected(c); }, 10s)) << c.stats().connect_failures;
  ASSERT_TRUE(wait_until([&] { return settled(c); }, 10s));
  server_monitor monitor(server);
  const client_stats before = c.stats();
  EXPECT_EQ(before.requests_failed, 0U);
  EXPECT_EQ(before.attempts, before.requests);
  for (int i = 0; i < 10; ++i) {
    auto l = c.get_lock("stats-lock-" + std::to_string(i));
    l.lock();
    l.unlock_or_throw();
  }
  EXPECT_EQ(c.execute({"PING"}).str(), "PONG");
  // A script of the caller's: NOSCRIPT the first time, sent again with its text (one request,
  // two attempts), and not a reload of a library script.
  const script own{"return 'own'"};
  EXPECT_EQ(c.eval(own, {}, {}).str(), "own");
  ASSERT_TRUE(wait_until([&] { return settled(c); }, 10s));
  // Every request the client counted reached the server once per attempt, including those it
  // makes itself (the deletes of spent unlock latches, batched after the unlocks): the server's
  // commands from clients (not from scripts), read until they match or 10 s pass.
  std::uint64_t seen = 0;
  const auto attempts = [&] { return c.stats().attempts - before.attempts; };
  while (seen < attempts()) {
    if (!monitor.next([](const monitored& m) { return !m.from_script; }, 10s)) break;
    ++seen;
  }
  const client_stats after = c.stats();
  EXPECT_EQ(seen, after.attempts - before.attempts);
  EXPECT_GE(after.requests - before.requests, 10U * 2 + 2) << "acquires, unlocks, PING, eval";
  EXPECT_EQ(after.attempts - after.requests, (before.attempts - before.requests) + 1)
      << "the caller's script sent again by EVAL";
  EXPECT_EQ(after.requests_failed, 0U);
  EXPECT_EQ(after.scripts_reloaded, 0U);
  EXPECT_EQ(after.requests_in_flight, 0U);
  EXPECT_EQ(after.holds_watched, 0U);
}

TEST(client_stats, failures_are_counted_by_kind) {
  redis_server server;
  config cfg = config_for(server);
  cfg.timeout = 300ms;
  cfg.client_name = "stats-failures";
  client c(cfg);
  ASSERT_TRUE(wait_until([&] { return both_connected(c); }, 10s));
  // An error reply: a failure, neither a timeout nor of unknown outcome.
  server.cli({"SET", "stats-string", "x"});
  auto wrong = c.get_lock("stats-string");
  EXPECT_THROW(wrong.lock(), error);
  client_stats s = c.stats();
  EXPECT_GE(s.requests_failed, 1U);
  EXPECT_EQ(s.requests_timed_out, 0U);
  EXPECT_EQ(s.requests_unknown, 0U);
  // A paused server: no reply within the timeout.
  ASSERT_TRUE(wait_until([&] { return settled(c); }, 10s));
  server.pause();
  try {
    c.execute({"PING"});
    ADD_FAILURE() << "a paused server answered";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::timeout) << e.what();
  }
  server.resume();
  s = c.stats();
  EXPECT_EQ(s.requests_timed_out, 1U);
  EXPECT_GE(s.requests_failed, 2U);
  // A connection lost under a written request (a BLPOP the server holds): its outcome is
  // unknown, and a command that is not idempotent is not sent again.
  ASSERT_TRUE(wait_until([&] { return settled(c); }, 10s));
  auto blocked = std::async(std::launch::async, [&] {
    try {
      c.execute({"BLPOP", "stats-list", "10"});
      return std::error_code{};
    } catch (const error& e) {
      return e.code();
    }
  });
  ASSERT_TRUE(wait_until(
      [&] {
        const std::string info = server.cli({"INFO", "clients"});
        return info.find("blocked_clients:1") != std::string::npos;
      },
      10s));
  server.cli({"CLIENT", "KILL", "TYPE", "normal"});
  ASSERT_EQ(blocked.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(blocked.get(), errc::connection_lost);
  s = c.stats();
  EXPECT_EQ(s.requests_unknown, 1U);
  EXPECT_EQ(s.requests_timed_out, 1U);
  EXPECT_GE(s.disconnects, 1U);
}

TEST(client_stats, drops_reconnects_and_a_flushed_script_cache_are_counted) {
  redis_server server;
  client c(config_for(server));
  ASSERT_TRUE(wait_until([&] { return both_connected(c); }, 10s));
  EXPECT_EQ(c.stats().disconnects, 0U);
  EXPECT_EQ(c.stats().connect_failures, 0U);
  // Both connections are "normal" on the server (the pub/sub one has no channel now).
  server.cli({"CLIENT", "KILL", "TYPE", "normal"});
  ASSERT_TRUE(wait_until([&] { return c.stats().connects == 4; }, 10s)) << c.stats().connects;
  EXPECT_EQ(c.stats().disconnects, 2U);
  // Down: each try to connect again fails and is counted.
  server.stop();
  ASSERT_TRUE(wait_until([&] { return c.stats().connect_failures >= 2; }, 10s));
  EXPECT_EQ(c.stats().disconnects, 4U);
  server.restart();
  ASSERT_TRUE(wait_until([&] { return c.stats().connects == 6; }, 10s)) << c.stats().connects;
  // The restarted server loaded the scripts anew; flushed, the next acquire reloads its own.
  server.cli({"SCRIPT", "FLUSH"});
  const client_stats before = c.stats();
  auto l = c.get_lock("stats-reload");
  l.lock();
  client_stats s = c.stats();
  EXPECT_EQ(s.scripts_reloaded, 1U);
  EXPECT_EQ(s.attempts - before.attempts, s.requests - before.requests + 1);
  l.unlock_or_throw();
}

TEST(client_stats, a_waiter_is_woken_by_a_message_on_a_channel_it_subscribed) {
  redis_server server;
  client c(config_for(server));
  auto holder = c.get_lock("stats-channel");
  holder.lock();
  EXPECT_EQ(c.stats().holds_watched, 1U);
  std::promise<void> acquired;
  std::promise<void> release;
  std::thread waiter([&] {
    auto l = c.get_lock("stats-channel");
    l.lock();
    acquired.set_value();
    release.get_future().wait();
    l.unlock_or_throw();
  });
  // The waiter's subscription to the lock's channel is confirmed (external: the server's).
  ASSERT_TRUE(wait_until([&] { return c.stats().channels == 1; }, 10s));
  EXPECT_EQ(c.stats().messages, 0U);
  EXPECT_EQ(c.stats().subscribes, 1U);
  EXPECT_EQ(c.stats().unsubscribes, 0U);
  holder.unlock_or_throw();
  auto got = acquired.get_future();
  ASSERT_EQ(got.wait_for(10s), std::future_status::ready);
  EXPECT_GE(c.stats().messages, 1U);
  EXPECT_EQ(c.stats().holds_watched, 1U);
  release.set_value();
  waiter.join();
  EXPECT_EQ(c.stats().holds_watched, 0U);
}

TEST(client_stats, renewals_failed_renewals_and_lost_holds) {
  redis_server server;
  config cfg = config_for(server);
  cfg.lock_watchdog_timeout = 600ms;
  cfg.timeout = 150ms;
  client c(cfg);
  auto l = c.get_lock("stats-renewed");
  l.lock();
  // Renewed every third of the watchdog timeout.
  ASSERT_TRUE(wait_until([&] { return c.stats().renewals >= 2; }, 10s));
  EXPECT_EQ(c.stats().renewals_failed, 0U);
  EXPECT_EQ(c.stats().holds_lost, 0U);
  // Found gone by a renewal.
  server.cli({"DEL", "stats-renewed"});
  ASSERT_TRUE(wait_until([&] { return c.stats().holds_lost == 1; }, 10s));
  EXPECT_TRUE(l.loss_token().stop_requested());
  EXPECT_EQ(c.stats().holds_watched, 0U);
  EXPECT_EQ(c.stats().renewals_failed, 0U);
  // A paused server: renewals fail until the lease ends, and the hold is lost.
  auto paused = c.get_lock("stats-paused");
  paused.lock();
  server.pause();
  const bool lost = wait_until([&] { return c.stats().holds_lost == 2; }, 10s);
  server.resume();
  ASSERT_TRUE(lost);
  EXPECT_TRUE(paused.loss_token().stop_requested());
  EXPECT_GE(c.stats().renewals_failed, 1U);
}

TEST(client_stats, the_counts_stay_after_shutdown_and_the_gauges_are_zero) {
  redis_server server;
  client c(config_for(server));
  auto l = c.get_lock("stats-shutdown");
  l.lock();
  // Both connections set up (the command one and the pub/sub one, which the lock did not
  // wait for): the counts taken now are final.
  ASSERT_TRUE(wait_until([&] { return both_connected(c); }, 10s));
  const client_stats held = c.stats();
  EXPECT_EQ(held.holds_watched, 1U);
  EXPECT_GE(held.requests, 1U);
  c.shutdown();
  const client_stats after = c.stats();
  EXPECT_EQ(c.stats().connects, after.connects);
  EXPECT_GE(after.requests, held.requests);
  EXPECT_EQ(after.connects, held.connects);
  EXPECT_EQ(after.holds_watched, 0U);
  EXPECT_EQ(after.requests_in_flight, 0U);
  EXPECT_EQ(after.channels, 0U);
  // Shutdown closed the connections itself: no drop.
  EXPECT_EQ(after.disconnects, 0U);
  client moved(std::move(c));
  EXPECT_EQ(c.stats().requests, 0U);  // NOLINT(bugprone-use-after-move): a moved-from client
  EXPECT_EQ(moved.stats().requests, after.requests);
}

}  // namespace
}  // namespace rlock::test
