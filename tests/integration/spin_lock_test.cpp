// The spin lock (client::get_spin_lock, Redisson's RSpinLock) against a real server: exclusion
// across processes without any pub/sub, its waits (backoff, TTL, local release), the shared
// hash with reentrant_lock, and Redisson peers on the same name.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "common.hpp"
#include "support/process.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

TEST(spin_lock, mutual_exclusion_across_three_processes_with_no_pubsub_at_all) {
  redis_server server;
  std::vector<child_process> workers;
  workers.reserve(3);
  for (int p = 0; p < 3; ++p) {
    // 3 processes x 3 threads x 100 = 900 acquisitions
    workers.emplace_back(RLOCK_LOCK_WORKER,
                         std::vector<std::string>{"spin-count", server.url(), "sx", "3", "100"});
  }
  for (auto& w : workers) {
    auto status = w.wait_for(120s);
    ASSERT_TRUE(status.has_value()) << "worker did not finish";
    EXPECT_EQ(*status, 0) << w.output();
    EXPECT_NE(w.output().find("acquisitions=300 overlaps=0"), std::string::npos) << w.output();
  }
  EXPECT_EQ(server.cli({"GET", "sx:counter"}), "900");  // no lost update
  EXPECT_EQ(server.cli({"EXISTS", "sx"}), "0");
  // Nothing published, nothing subscribed: not by a release, not by a waiter.
  EXPECT_EQ(calls_of(server, "publish"), 0);
  EXPECT_EQ(calls_of(server, "subscribe"), 0);
  EXPECT_EQ(calls_of(server, "ssubscribe"), 0);
}

TEST(spin_lock, the_same_hash_as_a_reentrant_lock_and_reentrant_through_either) {
  redis_server server;
  client c(config_for(server));
  auto spin = c.get_spin_lock("both");
  auto plain = c.get_lock("both");
  ASSERT_TRUE(spin.spin().has_value());
  EXPECT_FALSE(plain.spin().has_value());
  spin.lock();
  const std::string field = c.id() + ":" + std::to_string(this_thread_owner_id());
  EXPECT_EQ(server.cli({"HGET", "both", field}), "1");
  EXPECT_GT(server.cli_reply({"PTTL", "both"}).integer, 20000);  // the watchdog's lease
  plain.lock();                                                  // a re-entry of the same hold
  spin.lock();
  EXPECT_EQ(server.cli({"HGET", "both", field}), "3");
  spin.unlock_or_throw();
  plain.unlock_or_throw();
  EXPECT_EQ(server.cli({"HGET", "both", field}), "1");
  EXPECT_TRUE(plain.is_held_by_current_thread());
  spin.unlock_or_throw();
  EXPECT_EQ(server.cli({"EXISTS", "both"}), "0");
  EXPECT_EQ(code_of([&] { spin.unlock_or_throw(); }), make_error_code(errc::not_owner));
}

TEST(spin_lock, a_waiter_polls_with_the_backoff_and_gives_up_at_its_wait) {
  redis_server server;
  client holder(config_for(server));
  client waiter(config_for(server));
  auto h = holder.get_lock("polled");
  h.lock();
  auto s = waiter.get_spin_lock("polled");
  const long before = evalsha_calls(server);
  const auto t0 = steady::now();
  EXPECT_FALSE(s.try_lock(1000ms));
  const long long waited = ms_since(t0);
  const long attempts = evalsha_calls(server) - before;
  EXPECT_GE(waited, 1000);
  EXPECT_LT(waited, 1500);
  // 1, 2, 4, ... 128 ms (about 255 ms in 8 attempts), then 128 ms each: about 14 in 1 s.
  // Without the backoff it would try once (a subscriber) or thousands of times (a busy loop).
  EXPECT_GE(attempts, 5) << "attempts " << attempts;
  EXPECT_LE(attempts, 20) << "attempts " << attempts;
  h.unlock_or_throw();
  EXPECT_TRUE(s.try_lock(1000ms));
  s.unlock_or_throw();
}

TEST(spin_lock, a_sleep_ends_when_the_holders_lease_does) {
  redis_server server;
  client holder(config_for(server));
  client waiter(config_for(server));
  holder.get_lock("leased").lock(400ms);  // never released: expires after 400 ms
  // Each sleep would be 10 s: only the TTL the failed try saw can wake it within the wait.
  auto s = waiter.get_spin_lock("leased", spin_backoff::constant(10s));
  const auto t0 = steady::now();
  ASSERT_TRUE(s.try_lock(3000ms));
  EXPECT_GE(ms_since(t0), 300);
  s.unlock_or_throw();
}

TEST(spin_lock, a_release_in_the_same_client_wakes_its_waiter_at_once) {
  redis_server server;
  client c(config_for(server));
  auto s = c.get_spin_lock("local", spin_backoff::constant(10s));
  s.lock();
  std::promise<void> trying;
  auto waiter = std::async(std::launch::async, [&] {
    auto mine = c.get_spin_lock("local", spin_backoff::constant(10s));
    trying.set_value();
    const bool ok = mine.try_lock(3000ms);
    if (ok) mine.unlock_or_throw();
    return ok;
  });
  trying.get_future().wait();
  // The holder's acquire and the waiter's first try, which failed: it sleeps 10 s now.
  ASSERT_TRUE(wait_until([&] { return evalsha_calls(server) >= 2; }, 2s));
  s.unlock_or_throw();
  EXPECT_TRUE(waiter.get()) << "not woken by the release of its own client";
}

TEST(spin_lock, a_redisson_holder_blocks_it_and_it_blocks_redisson) {
  redis_server server;
  client c(config_for(server));
  auto s = c.get_spin_lock("java", spin_backoff{1ms, 20ms, 2});
  // A Java peer's hold: v4 client uuid, thread 1, count 1, the watchdog's lease.
  const std::string java = "8f14e45f-ceea-467a-9575-7d0e3c2a6b8e:1";
  server.cli({"HSET", "java", java, "1"});
  server.cli({"PEXPIRE", "java", "30000"});
  EXPECT_FALSE(s.try_lock(100ms));
  auto taken = std::async(std::launch::async, [&] {
    const bool ok = s.try_lock(5000ms);
    if (ok) s.unlock_or_throw();
    return ok;
  });
  // Redisson's spin unlock: delete without publishing. The waiter finds it free by polling.
  server.cli({"DEL", "java"});
  EXPECT_TRUE(taken.get());
  // And a hold of ours makes Redisson's acquire script answer with the TTL.
  s.lock(20s);
  const auto ttl = server.cli_reply(
      {"EVAL",
       "if (redis.call('exists', KEYS[1]) == 0) then redis.call('hincrby', KEYS[1], ARGV[2], 1); "
       "redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; "
       "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then "
       "redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); "
       "return nil; end; return redis.call('pttl', KEYS[1]);",
       "1", "java", "30000", java});
  EXPECT_GT(ttl.integer, 10000);
  s.unlock_or_throw();
}

TEST(spin_lock, the_watchdog_renews_it_and_loss_is_reported) {
  redis_server server;
  config cfg = config_for(server);
  cfg.lock_watchdog_timeout = 600ms;  // renewed every 200 ms
  client c(cfg);
  auto s = c.get_spin_lock("renewed");
  s.lock();
  const auto first = s.valid_until();
  ASSERT_TRUE(wait_until([&] { return s.valid_until() > first + 500ms; }, 3s)) << "not renewed";
  EXPECT_EQ(server.cli({"EXISTS", "renewed"}), "1");
  std::promise<void> lost;
  std::stop_callback on_loss(s.loss_token(), [&] { lost.set_value(); });
  server.cli({"DEL", "renewed"});
  EXPECT_EQ(lost.get_future().wait_for(3s), std::future_status::ready);
  std::error_code ec;
  s.unlock(ec);
  EXPECT_EQ(ec, make_error_code(errc::not_owner));
}

TEST(spin_lock, a_stop_request_ends_the_wait_and_leaves_nothing_held) {
  redis_server server;
  client holder(config_for(server));
  client waiter(config_for(server));
  auto h = holder.get_lock("stopped");
  h.lock();
  auto s = waiter.get_spin_lock("stopped");
  std::stop_source stop;
  auto waiting =
      std::async(std::launch::async, [&] { return code_of([&] { s.lock(stop.get_token()); }); });
  ASSERT_TRUE(wait_until([&] { return evalsha_calls(server) >= 3; }, 2s));
  stop.request_stop();
  EXPECT_EQ(waiting.get(), make_error_code(errc::stopped));
  h.unlock_or_throw();
  EXPECT_EQ(server.cli({"EXISTS", "stopped"}), "0");
}

TEST(spin_lock, an_invalid_backoff_is_refused) {
  redis_server server;
  client c(config_for(server));
  const auto refused = [&](spin_backoff b) {
    return code_of([&] { (void)c.get_spin_lock("b", b); });
  };
  const auto invalid = make_error_code(errc::invalid_argument);
  EXPECT_EQ(refused({0ms, 10ms, 2}), invalid);
  EXPECT_EQ(refused({-5ms, 10ms, 2}), invalid);
  EXPECT_EQ(refused({20ms, 10ms, 2}), invalid);
  EXPECT_EQ(refused({1ms, 10ms, 0}), invalid);
  EXPECT_EQ(refused({1ms, 10ms, 1}), std::error_code{});
  EXPECT_EQ(code_of([&] { (void)c.get_spin_lock(""); }), invalid);
}

}  // namespace
}  // namespace rlock::test
