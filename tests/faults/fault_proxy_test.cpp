// fault_proxy against a real redis-server: each mode does what the header says.
#include "faults/fault_proxy.hpp"

#include <gtest/gtest.h>

#include <chrono>

#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace rlock::faults {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

long long connected_clients(const test::redis_server& server) {
  const auto info = server.cli({"INFO", "clients"});
  const auto pos = info.find("connected_clients:");
  return std::stoll(info.substr(pos + 18));
}

TEST(fault_proxy, pass_relays_both_ways) {
  test::redis_server server;
  fault_proxy proxy(server.port());
  EXPECT_EQ(proxy.url(), "redis://127.0.0.1:" + std::to_string(proxy.port()));
  test::raw_client c("127.0.0.1", proxy.port());
  EXPECT_EQ(c.command({"SET", "k", std::string(200000, 'x')}).text(), "OK");
  EXPECT_EQ(c.command({"STRLEN", "k"}).integer, 200000);
  EXPECT_EQ(server.cli({"STRLEN", "k"}), "200000");
  const auto s = proxy.stats();
  EXPECT_EQ(s.accepted, 1u);
  EXPECT_EQ(s.open, 1u);
  EXPECT_GT(s.bytes_up, 200000u);
}

TEST(fault_proxy, delay_holds_every_chunk_in_each_direction) {
  test::redis_server server;
  fault_proxy proxy(server.port());
  test::raw_client c("127.0.0.1", proxy.port());
  proxy.set_mode(proxy_mode::delay, 150ms);
  const auto t0 = steady::now();
  EXPECT_EQ(c.command({"PING"}).text(), "PONG");
  const auto took = steady::now() - t0;
  EXPECT_GE(took, 300ms) << "150 ms up, 150 ms down";
  EXPECT_LT(took, 1500ms);
  proxy.set_mode(proxy_mode::pass);
  const auto t1 = steady::now();
  EXPECT_EQ(c.command({"PING"}).text(), "PONG");
  EXPECT_LT(steady::now() - t1, 150ms);
}

TEST(fault_proxy, drop_replies_applies_the_command_and_loses_its_reply) {
  test::redis_server server;
  fault_proxy proxy(server.port());
  test::raw_client c("127.0.0.1", proxy.port(), 2s);
  proxy.set_mode(proxy_mode::drop_replies);
  EXPECT_THROW(c.command({"SET", "applied", "yes"}), std::runtime_error);
  EXPECT_EQ(server.cli({"GET", "applied"}), "yes");
  EXPECT_EQ(proxy.stats().replies_dropped, 1u);
  proxy.set_mode(proxy_mode::pass);
  c.reconnect();
  EXPECT_EQ(c.command({"GET", "applied"}).text(), "yes");
}

TEST(fault_proxy, drop_one_reply_loses_one_reply_then_passes) {
  test::redis_server server;
  fault_proxy proxy(server.port());
  proxy.set_mode(proxy_mode::drop_one_reply);
  {
    test::raw_client c("127.0.0.1", proxy.port(), 2s);
    EXPECT_THROW(c.command({"INCR", "n"}), std::runtime_error);
  }
  EXPECT_EQ(server.cli({"GET", "n"}), "1") << "applied";
  EXPECT_EQ(proxy.mode(), proxy_mode::pass);
  test::raw_client again("127.0.0.1", proxy.port(), 2s);
  EXPECT_EQ(again.command({"INCR", "n"}).integer, 2);
  EXPECT_EQ(proxy.stats().replies_dropped, 1u);
}

TEST(fault_proxy, hang_relays_nothing_and_closes_nothing_until_healed) {
  test::redis_server server;
  fault_proxy proxy(server.port());
  test::raw_client c("127.0.0.1", proxy.port(), 300ms);
  ASSERT_EQ(c.command({"PING"}).text(), "PONG");
  const long long before = connected_clients(server);
  proxy.set_mode(proxy_mode::hang);
  c.send({"SET", "late", "1"});
  EXPECT_FALSE(c.read(300ms).has_value()) << "nothing comes back";
  EXPECT_EQ(server.cli({"EXISTS", "late"}), "0") << "nothing went through";
  EXPECT_EQ(connected_clients(server), before) << "the upstream connection stays open";
  EXPECT_EQ(proxy.stats().open, 1u);
  proxy.set_mode(proxy_mode::pass);
  const auto reply = c.read(2s);  // what was held is relayed late
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->text(), "OK");
  EXPECT_EQ(server.cli({"GET", "late"}), "1");
}

TEST(fault_proxy, freeze_existing_stalls_open_connections_and_relays_new_ones) {
  test::redis_server server;
  fault_proxy proxy(server.port());
  test::raw_client old_one("127.0.0.1", proxy.port(), 300ms);
  ASSERT_EQ(old_one.command({"PING"}).text(), "PONG");
  proxy.set_mode(proxy_mode::freeze_existing);
  old_one.send({"SET", "order", "first"});
  EXPECT_FALSE(old_one.read(300ms).has_value()) << "nothing comes back on the frozen one";
  test::raw_client new_one("127.0.0.1", proxy.port(), 2s);
  EXPECT_EQ(new_one.command({"SET", "order", "second"}).text(), "OK") << "a new one relays";
  EXPECT_EQ(proxy.stats().open, 2u) << "the frozen one is not closed";
  proxy.set_mode(proxy_mode::pass);
  const auto reply = old_one.read(2s);  // what was held is relayed late
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->text(), "OK");
  EXPECT_EQ(server.cli({"GET", "order"}), "first") << "the frozen command ran last";
}

TEST(fault_proxy, reset_closes_open_and_new_connections_with_rst) {
  test::redis_server server;
  fault_proxy proxy(server.port());
  test::raw_client c("127.0.0.1", proxy.port(), 1s);
  ASSERT_EQ(c.command({"PING"}).text(), "PONG");
  proxy.set_mode(proxy_mode::reset);
  EXPECT_EQ(proxy.stats().open, 0u);
  EXPECT_THROW(c.command({"PING"}), std::runtime_error);
  // A new connection is accepted and reset at once.
  try {
    test::raw_client fresh("127.0.0.1", proxy.port(), 1s);
    EXPECT_THROW(fresh.command({"PING"}), std::runtime_error);
  } catch (const std::runtime_error&) {
    // ... or already while connecting: either way no command gets through
  }
  EXPECT_GE(proxy.stats().resets, 2u);
  // The server sees the upstream connections go away (external state).
  EXPECT_TRUE(test::wait_until([&] { return connected_clients(server) == 1; }, 2s))
      << "only the INFO connection itself";
  proxy.set_mode(proxy_mode::pass);
  c.reconnect();
  EXPECT_EQ(c.command({"PING"}).text(), "PONG");
}

TEST(fault_proxy, a_refused_upstream_closes_the_client) {
  std::uint16_t port = 0;
  {
    test::redis_server gone;
    port = gone.port();
  }
  fault_proxy proxy(port);
  try {
    test::raw_client c("127.0.0.1", proxy.port(), 1s);
    EXPECT_THROW(c.command({"PING"}), std::runtime_error);
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(proxy.stats().open, 0u);
}

}  // namespace
}  // namespace rlock::faults
