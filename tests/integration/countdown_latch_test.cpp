// rlock::countdown_latch against a real server: Redisson's layout (the count as a string key,
// "0" published on redisson_countdownlatch__channel__{<name>} when it reaches zero), waiting
// without polling, count downs counted once, and clear errors for bad input.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <string>
#include <vector>

#include "common.hpp"
#include "detail/countdown_latch_ops.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

TEST(countdown_latch, keeps_redissons_layout_and_counts_down_to_zero) {
  redis_server server;
  client c(config_for(server));
  countdown_latch l = c.get_countdown_latch("jobs");
  EXPECT_EQ(l.count(), 0);
  EXPECT_TRUE(l.try_set_count(2));
  EXPECT_FALSE(l.try_set_count(5)) << "set only once";
  EXPECT_EQ(server.cli({"GET", "jobs"}), "2");
  EXPECT_EQ(l.count(), 2);
  EXPECT_EQ(l.count_down(), 1);
  EXPECT_EQ(l.count_down(), 0);
  EXPECT_EQ(server.cli({"EXISTS", "jobs"}), "0") << "deleted at zero";
  EXPECT_EQ(l.count_down(), 0) << "no latch: nothing to count";
  EXPECT_EQ(server.cli({"EXISTS", "jobs"}), "0");
  EXPECT_TRUE(l.await_for(0ms));
}

TEST(countdown_latch, reaching_zero_publishes_0_on_redissons_channel) {
  redis_server server;
  client c(config_for(server));
  countdown_latch l = c.get_countdown_latch("pub");
  ASSERT_TRUE(l.try_set_count(1));
  std::promise<std::string> heard;
  std::promise<void> ready;
  detail::subscription held;
  c.core()->subscribe(
      detail::channel_kind::classic, "redisson_countdownlatch__channel__{pub}", "pub",
      [&](const detail::pubsub_event& e) {
        if (e.what == detail::pubsub_event::kind::message) heard.set_value(std::string(e.payload));
      },
      steady::now() + 5s,
      [&](std::error_code ec, detail::subscription s) {
        EXPECT_FALSE(ec) << ec.message();
        held = std::move(s);
        ready.set_value();
      });
  ready.get_future().get();
  EXPECT_EQ(l.count_down(), 0);
  auto f = heard.get_future();
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(f.get(), "0");
}

// A waiter reads the count when it starts and once more when subscribed, then sleeps: count
// downs that do not reach zero publish nothing (it reads nothing more), and the one that does
// wakes it.
// Beyond Redisson: a latch whose key expires or is deleted (no message) is open at the next
// recheck (config::wait_recheck_interval); with the recheck off the waiter waits on, as
// Redisson's await does.
TEST(countdown_latch, a_deleted_latch_opens_at_the_next_recheck) {
  redis_server server;
  config cfg = config_for(server);
  cfg.wait_recheck_interval = 400ms;
  client c(cfg);
  countdown_latch l = c.get_countdown_latch("gone");
  ASSERT_TRUE(l.try_set_count(2));
  config off = config_for(server);
  off.wait_recheck_interval = 0ms;
  client redisson_like(off);
  countdown_latch never = redisson_like.get_countdown_latch("gone");
  const long gets_before = calls_of(server, "get");
  auto waiter = std::async(std::launch::async, [&] { return l.await_for(30s); });
  auto without = std::async(std::launch::async, [&] { return never.await_for(3s); });
  // Both subscribed, and both have read the count since (a waiter subscribes, then reads it): a
  // DEL before a waiter's read would open it at that read, recheck or not.
  ASSERT_TRUE(wait_until(
      [&] {
        return numsub_of(server, "redisson_countdownlatch__channel__{gone}") == 2 &&
               calls_of(server, "get") >= gets_before + 2;
      },
      10s, 10ms));
  server.cli({"DEL", "gone"});
  const auto t0 = steady::now();
  ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready) << "the deletion was not seen";
  EXPECT_TRUE(waiter.get());
  EXPECT_LT(ms_since(t0), 2000);
  EXPECT_FALSE(without.get()) << "without the recheck nothing tells it";
}

TEST(countdown_latch, a_waiter_wakes_at_zero_without_polling) {
  redis_server server;
  client c(config_for(server));
  countdown_latch l = c.get_countdown_latch("wake");
  ASSERT_TRUE(l.try_set_count(3));
  const long before = calls_of(server, "get");
  auto waiter = std::async(std::launch::async, [&] {
    client other(config_for(server));
    return other.get_countdown_latch("wake").await_for(30s);
  });
  ASSERT_TRUE(
      wait_until([&] { return numsub_of(server, "redisson_countdownlatch__channel__{wake}") == 1; },
                 10s, 10ms));
  // Counted down by a peer's plain DECR (no script, so every GET counted is the waiter's).
  EXPECT_EQ(server.cli({"DECR", "wake"}), "2");
  EXPECT_EQ(server.cli({"DECR", "wake"}), "1");
  EXPECT_LE(calls_of(server, "get") - before, 2) << "reads before zero";
  const auto t0 = steady::now();
  EXPECT_EQ(l.count_down(), 0);
  EXPECT_TRUE(waiter.get());
  EXPECT_LT(ms_since(t0), 2000);
}

TEST(countdown_latch, a_wait_that_does_not_see_zero_ends_at_its_deadline) {
  redis_server server;
  client c(config_for(server));
  countdown_latch l = c.get_countdown_latch("slow");
  ASSERT_TRUE(l.try_set_count(1));
  const auto t0 = steady::now();
  EXPECT_FALSE(l.await_for(300ms));
  const auto took = ms_since(t0);
  EXPECT_GE(took, 300);
  EXPECT_LT(took, 300 + 2000);
  EXPECT_EQ(l.count(), 1);
  EXPECT_TRUE(
      wait_until([&] { return numsub_of(server, "redisson_countdownlatch__channel__{slow}") == 0; },
                 10s, 10ms))
      << "unsubscribed";
}

// Deleting the latch tells its waiters, which then find no latch: zero.
TEST(countdown_latch, removing_the_latch_releases_its_waiters) {
  redis_server server;
  client c(config_for(server));
  countdown_latch l = c.get_countdown_latch("gone");
  ASSERT_TRUE(l.try_set_count(5));
  auto waiter = std::async(std::launch::async, [&] { return l.await_for(30s); });
  ASSERT_TRUE(
      wait_until([&] { return numsub_of(server, "redisson_countdownlatch__channel__{gone}") == 1; },
                 10s, 10ms));
  EXPECT_TRUE(l.remove());
  EXPECT_TRUE(waiter.get());
  EXPECT_FALSE(l.remove()) << "already gone";
}

// Many processes' worth of clients count down one latch; exactly the last one opens it.
TEST(countdown_latch, counts_down_from_many_clients_exactly) {
  redis_server server;
  constexpr int workers = 6;
  constexpr int each = 20;
  client c(config_for(server));
  countdown_latch l = c.get_countdown_latch("many");
  ASSERT_TRUE(l.try_set_count(std::int64_t{workers} * each));
  auto waiter = std::async(std::launch::async, [&] { return l.await_for(60s); });
  std::atomic<int> zeros{0};
  std::vector<std::future<void>> all;
  all.reserve(workers);
  for (int w = 0; w < workers; ++w) {
    all.push_back(std::async(std::launch::async, [&] {
      client mine(config_for(server));
      countdown_latch m = mine.get_countdown_latch("many");
      for (int i = 0; i < each; ++i) {
        if (m.count_down() == 0) ++zeros;
      }
    }));
  }
  for (auto& f : all) f.get();
  EXPECT_TRUE(waiter.get());
  EXPECT_EQ(zeros.load(), 1);
  EXPECT_EQ(server.cli({"EXISTS", "many"}), "0");
}

TEST(countdown_latch, a_count_down_sent_twice_counts_once) {
  redis_server server;
  client c(config_for(server));
  ASSERT_TRUE(c.get_countdown_latch("twice").try_set_count(3));
  const script& count_down = *detail::countdown_latch_scripts().at(0);
  const std::vector<std::string> keys{"twice", "redisson_countdownlatch__channel__{twice}",
                                      "rlock_countdown_request:{twice}:r1"};
  for (int i = 0; i < 2; ++i) EXPECT_EQ(c.eval(count_down, keys, {"10000"}).integer(), 2);
  EXPECT_EQ(server.cli({"GET", "twice"}), "2");
}

TEST(countdown_latch, a_stop_request_or_shutdown_ends_the_wait) {
  redis_server server;
  client c(config_for(server));
  countdown_latch l = c.get_countdown_latch("stop");
  ASSERT_TRUE(l.try_set_count(1));
  std::stop_source stop;
  auto stopped =
      std::async(std::launch::async, [&] { return code_of([&] { l.await(stop.get_token()); }); });
  ASSERT_TRUE(
      wait_until([&] { return numsub_of(server, "redisson_countdownlatch__channel__{stop}") == 1; },
                 10s, 10ms));
  stop.request_stop();
  EXPECT_EQ(stopped.get(), errc::stopped);
  auto closing = std::async(std::launch::async, [&] { return code_of([&] { l.await(); }); });
  ASSERT_TRUE(
      wait_until([&] { return numsub_of(server, "redisson_countdownlatch__channel__{stop}") == 1; },
                 10s, 10ms));
  c.shutdown();
  EXPECT_EQ(closing.get(), errc::shutdown);
  EXPECT_EQ(server.cli({"GET", "stop"}), "1");
}

TEST(countdown_latch, the_async_api_waits_and_counts_down) {
  redis_server server;
  client c(config_for(server));
  countdown_latch l = c.get_countdown_latch("async");
  ASSERT_TRUE(l.try_set_count(1));
  auto waiting = l.async_await_for(30s, asio::use_future);
  EXPECT_EQ(l.async_count_down(asio::use_future).get(), 0);
  EXPECT_TRUE(waiting.get());
}

TEST(countdown_latch, a_key_of_another_kind_is_wrong_type_and_left_as_it_was) {
  redis_server server;
  server.cli({"SET", "text", "abc"});
  server.cli({"HSET", "hash", "f", "1"});
  client c(config_for(server));
  for (const char* name : {"text", "hash"}) {
    countdown_latch l = c.get_countdown_latch(name);
    EXPECT_EQ(code_of([&] { (void)l.count_down(); }), errc::wrong_type) << name;
    EXPECT_EQ(code_of([&] { (void)l.count(); }), errc::wrong_type) << name;
    EXPECT_EQ(code_of([&] { (void)l.await_for(100ms); }), errc::wrong_type) << name;
  }
  EXPECT_EQ(server.cli({"GET", "text"}), "abc");
  EXPECT_EQ(server.cli({"HGET", "hash", "f"}), "1");
}

TEST(countdown_latch, bad_input_is_refused_and_a_dead_server_fails_within_bounds) {
  redis_server server;
  client c(config_for(server));
  EXPECT_EQ(code_of([&] { (void)c.get_countdown_latch(""); }), errc::invalid_argument);
  EXPECT_EQ(code_of([&] { (void)c.get_countdown_latch("bad").try_set_count(-1); }),
            errc::invalid_argument);
  EXPECT_EQ(server.cli({"EXISTS", "bad"}), "0");
  config cfg = config_for(server);
  server.kill();
  client down(cfg);
  countdown_latch l = down.get_countdown_latch("down");
  const auto t0 = steady::now();
  EXPECT_EQ(code_of([&] { (void)l.count_down(); }), errc::connection_refused);
  EXPECT_EQ(code_of([&] { (void)l.await_for(200ms); }), errc::connection_refused);
  EXPECT_LT(ms_since(t0), 10000);
}

}  // namespace
}  // namespace rlock::test
