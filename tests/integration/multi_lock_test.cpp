// rlock::multi_lock against real servers: a MultiLock takes all of its locks or none, a RedLock
// a majority of independent servers, waits are bounded, losses below the quorum are reported,
// and bad groups are refused.
#include <gtest/gtest.h>

#include <asio/use_future.hpp>
#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "common.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

std::string field_of(const client& c) {
  return c.id() + ":" + std::to_string(this_thread_owner_id());
}

bool holds(const redis_server& server, const std::string& key, const std::string& field) {
  return server.cli_reply({"HEXISTS", key, field}).integer == 1;
}

TEST(multi_lock, takes_every_lock_or_none) {
  redis_server a;
  redis_server b;
  client ca(config_for(a));
  client cb(config_for(b));
  multi_lock both({ca.get_lock("x"), cb.get_lock("y")});
  EXPECT_EQ(both.size(), 2U);
  EXPECT_EQ(both.quorum(), 2U);
  ASSERT_TRUE(both.try_lock());
  EXPECT_TRUE(holds(a, "x", field_of(ca)));
  EXPECT_TRUE(holds(b, "y", field_of(cb)));
  EXPECT_GT(both.valid_until(), steady::now());
  EXPECT_FALSE(both.loss_token().stop_requested());
  both.unlock();
  EXPECT_EQ(a.cli_reply({"EXISTS", "x"}).integer, 0);
  EXPECT_EQ(b.cli_reply({"EXISTS", "y"}).integer, 0);
  EXPECT_TRUE(both.loss_token().stop_requested()) << "nothing held";

  // Another client holds y: the group is not taken, and x is left free.
  client other(config_for(b));
  lock y = other.get_lock("y");
  ASSERT_TRUE(y.try_lock());
  const auto t0 = steady::now();
  EXPECT_FALSE(both.try_lock(300ms));
  EXPECT_GE(ms_since(t0), 300);
  EXPECT_LT(ms_since(t0), 3000);
  EXPECT_EQ(a.cli_reply({"EXISTS", "x"}).integer, 0);
  std::error_code ec;
  both.unlock(ec);
  EXPECT_EQ(ec, errc::not_owner);
  y.unlock();
}

// A waiter holding x waits for y without polling and takes the group when y is released.
TEST(multi_lock, waits_for_a_held_member_and_takes_the_group_at_its_release) {
  redis_server a;
  redis_server b;
  client ca(config_for(a));
  client cb(config_for(b));
  client other(config_for(b));
  lock y = other.get_lock("y");
  ASSERT_TRUE(y.try_lock());
  multi_lock both({ca.get_lock("x"), cb.get_lock("y")});
  auto waiter = std::async(std::launch::async, [&] {
    const bool got = both.try_lock(20s);
    const bool x_held = holds(a, "x", field_of(ca));
    if (got) both.unlock();
    return got && x_held;
  });
  // Queued on y (rlock's wait queue): external state.
  ASSERT_TRUE(wait_until([&] { return zcard(b, "rlock_queue:{y}") == 1; }, 10s, 10ms));
  y.unlock();
  EXPECT_TRUE(waiter.get());
  EXPECT_EQ(a.cli_reply({"EXISTS", "x"}).integer, 0);
  EXPECT_EQ(b.cli_reply({"EXISTS", "y"}).integer, 0);
}

TEST(multi_lock, a_red_lock_holds_a_majority_with_one_server_down) {
  redis_server s1;
  redis_server s2;
  redis_server s3;
  client c1(config_for(s1));
  client c2(config_for(s2));
  config cfg3 = config_for(s3);
  s3.kill();
  client c3(cfg3);
  multi_lock red = multi_lock::red_lock({c1.get_lock("r"), c2.get_lock("r"), c3.get_lock("r")});
  EXPECT_EQ(red.quorum(), 2U);
  ASSERT_TRUE(red.try_lock(5s));
  EXPECT_TRUE(holds(s1, "r", field_of(c1)));
  EXPECT_TRUE(holds(s2, "r", field_of(c2)));
  EXPECT_GT(red.valid_until(), steady::now());
  std::error_code ec;
  red.unlock(ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(s1.cli_reply({"EXISTS", "r"}).integer, 0);
  EXPECT_EQ(s2.cli_reply({"EXISTS", "r"}).integer, 0);
}

TEST(multi_lock, a_red_lock_without_a_majority_of_servers_fails_with_their_error) {
  redis_server s1;
  redis_server s2;
  redis_server s3;
  client c1(config_for(s1));
  config cfg2 = config_for(s2);
  config cfg3 = config_for(s3);
  s2.kill();
  s3.kill();
  client c2(cfg2);
  client c3(cfg3);
  multi_lock red = multi_lock::red_lock({c1.get_lock("r"), c2.get_lock("r"), c3.get_lock("r")});
  const auto t0 = steady::now();
  EXPECT_EQ(code_of([&] { red.lock(); }), errc::connection_refused) << "never spins on them";
  EXPECT_LT(ms_since(t0), 10000);
  EXPECT_EQ(s1.cli_reply({"EXISTS", "r"}).integer, 0) << "the one taken was released";
}

// A paused server (SIGSTOP) costs a RedLock its member's share of the wait, not the whole wait
// (go-redsync #80: one dead node stalled every round).
TEST(multi_lock, a_paused_server_costs_a_red_lock_only_its_share_of_the_wait) {
  redis_server s1;
  redis_server s2;
  redis_server s3;
  client c1(config_for(s1));
  client c2(config_for(s2));
  client c3(config_for(s3));
  c1.execute({"PING"});  // connected before the pause
  multi_lock red = multi_lock::red_lock({c1.get_lock("r"), c2.get_lock("r"), c3.get_lock("r")});
  s1.pause();
  const auto t0 = steady::now();
  ASSERT_TRUE(red.try_lock(3s));
  const auto took = ms_since(t0);
  EXPECT_GE(took, 900) << "the paused member had a third of the wait";
  EXPECT_LT(took, 2500) << "and no more";
  EXPECT_TRUE(holds(s2, "r", field_of(c2)));
  EXPECT_TRUE(holds(s3, "r", field_of(c3)));
  red.unlock();
  EXPECT_EQ(s2.cli_reply({"EXISTS", "r"}).integer, 0);
  s1.resume();
}

// One lost member of three leaves a majority; a second one loses the RedLock.
TEST(multi_lock, a_red_lock_reports_its_loss_below_the_quorum) {
  redis_server s1;
  redis_server s2;
  redis_server s3;
  std::vector<std::unique_ptr<client>> clients;
  std::vector<lock> locks;
  for (redis_server* s : {&s1, &s2, &s3}) {
    config cfg = config_for(*s);
    cfg.lock_watchdog_timeout = 1500ms;  // renewals every 500 ms find a loss
    clients.push_back(std::make_unique<client>(cfg));
    locks.push_back(clients.back()->get_lock("r"));
  }
  multi_lock red = multi_lock::red_lock(locks);
  ASSERT_TRUE(red.try_lock(5s));
  std::stop_token lost = red.loss_token();
  s1.cli({"DEL", "r"});
  ASSERT_TRUE(wait_until([&] { return locks[0].loss_token().stop_requested(); }, 10s, 10ms));
  EXPECT_FALSE(lost.stop_requested()) << "two of three still held";
  EXPECT_GT(red.valid_until(), steady::now());
  s2.cli({"DEL", "r"});
  EXPECT_TRUE(wait_until([&] { return lost.stop_requested(); }, 10s, 10ms));
  EXPECT_EQ(red.valid_until(), steady::time_point::min());
  std::error_code ec;
  red.unlock(ec);
  EXPECT_EQ(ec, errc::not_owner) << "only one of three released";
  EXPECT_EQ(s3.cli_reply({"EXISTS", "r"}).integer, 0) << "the member still held was released";
}

// Two groups over the same locks in opposite orders: no deadlock, never both inside.
TEST(multi_lock, groups_in_opposite_orders_do_not_deadlock) {
  redis_server a;
  redis_server b;
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::atomic<int> taken{0};
  auto worker = [&](bool reversed) {
    client ca(config_for(a));
    client cb(config_for(b));
    std::vector<lock> locks{ca.get_lock("p"), cb.get_lock("q")};
    if (reversed) std::swap(locks[0], locks[1]);
    multi_lock group(locks);
    for (int i = 0; i < 3; ++i) {
      if (!group.try_lock(60s)) continue;
      if (inside.fetch_add(1) != 0) ++overlaps;
      std::this_thread::sleep_for(2ms);
      inside.fetch_sub(1);
      ++taken;
      group.unlock();
    }
  };
  std::thread one(worker, false);
  std::thread two(worker, true);
  one.join();
  two.join();
  EXPECT_EQ(taken.load(), 6);
  EXPECT_EQ(overlaps.load(), 0);
}

TEST(multi_lock, the_async_api_and_a_stop_request) {
  redis_server a;
  redis_server b;
  client ca(config_for(a));
  client cb(config_for(b));
  multi_lock both({ca.get_lock("x"), cb.get_lock("y")});
  const std::uint64_t owner = new_owner_id();
  EXPECT_TRUE(both.async_acquire(owner, {}, asio::use_future).get());
  EXPECT_GT(both.valid_until(owner), steady::now());
  both.async_unlock(owner, asio::use_future).get();
  EXPECT_EQ(a.cli_reply({"EXISTS", "x"}).integer, 0);

  client other(config_for(b));
  lock y = other.get_lock("y");
  ASSERT_TRUE(y.try_lock());
  std::stop_source stop;
  acquire_options o;
  o.stop = stop.get_token();
  auto result = std::make_shared<std::promise<std::error_code>>();
  both.async_acquire(owner, o, [result](std::error_code ec, bool) { result->set_value(ec); });
  ASSERT_TRUE(wait_until([&] { return zcard(b, "rlock_queue:{y}") == 1; }, 10s, 10ms));
  stop.request_stop();
  EXPECT_EQ(result->get_future().get(), errc::stopped);
  EXPECT_EQ(a.cli_reply({"EXISTS", "x"}).integer, 0) << "x released";
  y.unlock();
}

TEST(multi_lock, bad_groups_are_refused) {
  redis_server a;
  client c(config_for(a));
  EXPECT_EQ(code_of([&] { multi_lock none(std::vector<lock>{}); }), errc::invalid_argument);
  EXPECT_EQ(code_of([&] {
              (void)multi_lock::red_lock({c.get_lock("a"), c.get_lock("b")});
            }),
            errc::invalid_argument);
  EXPECT_EQ(code_of([&] {
              multi_lock twice({c.get_lock("a"), c.get_lock("a")});
            }),
            errc::invalid_argument);
}

}  // namespace
}  // namespace rlock::test
