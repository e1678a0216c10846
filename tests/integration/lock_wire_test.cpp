// Wire compatibility with Redisson: keys, fields, TTLs, channels, payloads, latch keys.
#include <gtest/gtest.h>

#include <future>
#include <regex>
#include <set>

#include "common.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

TEST(lock_wire, hash_field_and_ttl_after_lock) {
  redis_server server;
  client c(config_for(server));
  auto l = c.get_lock("wire");
  l.lock();
  const auto fields = server.cli_reply({"HGETALL", "wire"}).as_map();
  ASSERT_EQ(fields.size(), 1u);
  const std::string owner = c.id() + ":" + std::to_string(this_thread_owner_id());
  ASSERT_EQ(fields.count(owner), 1u) << fields.begin()->first;
  EXPECT_EQ(fields.at(owner), "1");
  // Version 8: this client hands the lock over through the wait queue (lock_queue, the
  // default); its waiters' processes need not listen on the Redisson channel.
  EXPECT_TRUE(std::regex_match(
      c.id(), std::regex("[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")));
  const auto pttl = server.cli_reply({"PTTL", "wire"}).integer;
  EXPECT_GT(pttl, 29000);
  EXPECT_LE(pttl, 30000);
  l.unlock();
}

TEST(lock_wire, final_unlock_publishes_zero_and_sets_the_latch) {
  redis_server server;
  client c(config_for(server));
  auto l = c.get_lock("pub");
  auto sub = server.client();
  sub.send({"SUBSCRIBE", "redisson_lock__channel:{pub}"});
  ASSERT_TRUE(sub.read(2s).has_value());  // subscribe confirmation
  l.lock();
  l.lock();
  l.unlock();  // partial: no message
  l.unlock();  // final: "0"
  auto msg = sub.read(2s);
  ASSERT_TRUE(msg.has_value());
  ASSERT_EQ(msg->elements.size(), 3u);
  EXPECT_EQ(msg->elements[0].str, "message");
  EXPECT_EQ(msg->elements[2].str, "0");
  EXPECT_FALSE(sub.read(100ms).has_value()) << "exactly one message";
  // Latch keys: one per unlock call, values "0" then "1", with a PX TTL of about
  // (timeout + retry delay) x attempts.
  auto keys = server.cli_reply({"KEYS", "redisson_unlock_latch:{pub}:*"});
  ASSERT_EQ(keys.elements.size(), 2u);
  std::set<std::string> values;
  for (const auto& k : keys.elements) {
    EXPECT_TRUE(
        std::regex_match(k.str, std::regex(R"(redisson_unlock_latch:\{pub\}:[0-9a-f]{32})")))
        << k.str;
    values.insert(server.cli({"GET", k.str}));
    const auto ttl = server.cli_reply({"PTTL", k.str}).integer;
    EXPECT_GT(ttl, 10000);
    EXPECT_LE(ttl, (3000 + 100) * 4);  // config_for: timeout 3000, retry delay max 100 ms
  }
  EXPECT_EQ(values, (std::set<std::string>{"0", "1"}));
}

TEST(lock_wire, names_with_hash_tags_keep_their_own_tag) {
  redis_server server;
  client c(config_for(server));
  auto l = c.get_lock("{user}:lock");
  auto sub = server.client();
  sub.send({"SUBSCRIBE", "redisson_lock__channel:{user}:lock"});
  ASSERT_TRUE(sub.read(2s).has_value());
  l.lock();
  l.unlock();
  auto msg = sub.read(2s);
  ASSERT_TRUE(msg.has_value());
  EXPECT_EQ(msg->elements[2].str, "0");
}

TEST(lock_wire, foreign_redisson_owner_blocks_and_del_publish_wakes_at_once) {
  redis_server server;
  // A Java Redisson peer's hold, written with raw commands.
  const std::string foreign = "2f0c2a3e-8d0c-4c7e-9a55-6a1b2c3d4e5f:42";
  server.cli({"HSET", "shared", foreign, "1"});
  server.cli({"PEXPIRE", "shared", "30000"});
  client c(config_for(server));
  auto l = c.get_lock("shared");
  EXPECT_FALSE(l.try_lock());
  EXPECT_FALSE(l.try_lock(200ms));
  auto waiter = try_lock_then_unlock_async(l, 20s);
  ASSERT_TRUE(
      wait_until([&] { return numsub_of(server, "redisson_lock__channel:{shared}") == 1; }, 3s));
  const auto t0 = steady::now();
  server.cli({"DEL", "shared"});
  server.cli({"PUBLISH", "redisson_lock__channel:{shared}", "0"});
  EXPECT_TRUE(waiter.get());
  EXPECT_LT(ms_since(t0), 500);
}

TEST(lock_wire, name_mapper_applies_to_key_and_channel) {
  redis_server server;
  config cfg = config_for(server);
  cfg.name_mapper = [](std::string_view n) { return "app:" + std::string(n); };
  client c(cfg);
  auto l = c.get_lock("m");
  l.lock();
  EXPECT_EQ(server.cli({"EXISTS", "app:m"}), "1");
  auto sub = server.client();
  sub.send({"SUBSCRIBE", "redisson_lock__channel:{app:m}"});
  ASSERT_TRUE(sub.read(2s).has_value());
  l.unlock();
  auto msg = sub.read(2s);
  ASSERT_TRUE(msg.has_value());
  EXPECT_EQ(msg->elements[2].str, "0");
}

}  // namespace
}  // namespace rlock::test
